/**
 * How a jaxpr widget asks for the next eqn range of a view that arrived in ranges (design
 * 0045): the shell provides `wantRange` (its session's), a widget showing the view's ranges line
 * (or the graph's "next eqns" button) calls it with the view's first `eqn_ranges` id. Without a
 * provider (a replay, a standalone file, a unit test) asking does nothing.
 */
import { getContext, setContext } from 'svelte';
import type { JaxprView } from '../protocol';

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
