/**
 * How a jaxpr widget asks for the next eqn range of a view that arrived in ranges (design
 * 0045): the shell provides `wantRange` (its session's), a widget showing the view's ranges line
 * (or the graph's "next eqns" button) calls it with the view's first `eqn_ranges` id. Without a
 * provider (a replay, a standalone file, a unit test) asking does nothing.
 *
 * The shell also provides `textPendingOf`: how much of a view's own text is still to come in
 * nested ranges (held by the event, asked for once the run ended), for the text's note. Without
 * a provider it says nothing is pending.
 */
import { getContext, setContext } from 'svelte';
import type { JaxprView } from '../protocol';
import type { TextPending } from '../store/list-ranges';

const KEY = Symbol('jaxscope-want-range');

export type WantRange = (detailId: string) => void;

/** Provide `want` to the widgets below the calling component (call during its initialisation). */
export function provideWantRange(want: WantRange): void {
  setContext(KEY, want);
}

/** The provided `wantRange` (call during a component's initialisation); a no-op without one. */
export function wantRangeOf(): WantRange {
  return getContext<WantRange | undefined>(KEY) ?? (() => {});
}

/** Ask for the next eqn range of `view`, if it has one. */
export function wantNextRange(want: WantRange, view: JaxprView): void {
  const next = view.eqn_ranges?.[0];
  if (next !== undefined) want(next.detail_id);
}

const PENDING_KEY = Symbol('jaxscope-text-pending');

/** How much of a view's text is still to come (null: none, or not known here). */
export type TextPendingOf = (view: JaxprView) => TextPending | null;

/** Provide `pending` to the widgets below the calling component (call during its initialisation). */
export function provideTextPending(pending: TextPendingOf): void {
  setContext(PENDING_KEY, pending);
}

/** The provided `textPendingOf` (call during a component's initialisation); null for every view without one. */
export function textPendingOf(): TextPendingOf {
  return getContext<TextPendingOf | undefined>(PENDING_KEY) ?? (() => null);
}
