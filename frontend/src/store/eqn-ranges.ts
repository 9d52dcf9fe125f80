/**
 * Eqn ranges (design 0045): in an `on_demand` run a jaxpr view too large for one event arrives
 * with its first eqns, `total_eqns` and `eqn_ranges` (the rest, to ask for in order); each
 * `jaxpr_eqns_sent` answer (its `detail_of` a range's `detail_id`, its `seq` the seq of the event
 * holding the view, `field` the view's field) extends the view by its range: `eqns` grow, and
 * its `text` goes where the view's ranges line was, followed by `more` (the line for what is
 * still to come). Once the last range arrived the view equals the eager one: JAX's whole text,
 * every eqn, `total_eqns` null. `spliceRange` does what `jaxscope.summaries.splice_range` does
 * (the backend checks, while splitting, that these steps give JAX's text back).
 */
import type { Event, EventOf, JaxprView } from '../protocol';

export type JaxprEqnsSent = EventOf<'jaxpr_eqns_sent'>;

/** The whole program's eqn count: `total_eqns` while the view holds only its first eqns (sent in
 * ranges, or cut by the 12 MiB summary), else its eqns. A sentence or badge about a program's
 * size uses this, never `eqns.length` (that is how many eqns the page has loaded). */
export function eqnCount(view: Pick<JaxprView, 'eqns' | 'total_eqns'>): number {
  return view.total_eqns ?? view.eqns.length;
}

/** `text` with its ranges line (the line before the closing `  in (...)`) replaced by `sent`, then `more`. */
export function spliceRange(text: string, sent: string, more: string): string {
  const footer = text.lastIndexOf('\n  in ');
  const line = text.lastIndexOf('\n', footer - 1) + 1;
  return text.slice(0, line) + sent + (more ? `${more}\n` : '') + text.slice(footer + 1);
}

/** `grown` is `view`, or `view` extended by some of its eqn ranges: the page holds a new object
 * (a new state proxy too) after each range, so identity alone cannot say it is the same program. */
export function grownFrom(view: JaxprView, grown: JaxprView): boolean {
  if (view === grown) return true;
  if (view.total_eqns == null || grown.eqns.length <= view.eqns.length) return false;
  const footer = view.text.lastIndexOf('\n  in ');
  const line = view.text.lastIndexOf('\n', footer - 1) + 1;
  return grown.text.startsWith(view.text.slice(0, line));
}

function isJaxprView(value: unknown): value is JaxprView {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as JaxprView).text === 'string' &&
    Array.isArray((value as JaxprView).eqns)
  );
}

/** The view `view` extended by `sent`, or null when `sent` is not its next range. */
export function extendView(view: JaxprView, sent: JaxprEqnsSent): JaxprView | null {
  const [next, ...rest] = view.eqn_ranges ?? [];
  if (next === undefined || next.detail_id !== sent.detail_of || next.start !== view.eqns.length) return null;
  if (sent.start !== next.start || sent.eqns.length !== next.stop - next.start) return null;
  return {
    ...view,
    eqns: [...view.eqns, ...sent.eqns],
    text: spliceRange(view.text, sent.text, sent.more),
    eqn_ranges: rest,
    total_eqns: rest.length > 0 ? view.total_eqns : null,
  };
}

/** `event` with its view `sent.field` extended by `sent`, or null when that is not its next range. */
export function applyEqnsSent(event: Event, sent: JaxprEqnsSent): Event | null {
  const view: unknown = (event as unknown as Record<string, unknown>)[sent.field];
  if (!isJaxprView(view)) return null;
  const extended = extendView(view, sent);
  return extended === null ? null : ({ ...event, [sent.field]: extended } as Event);
}

/** The next range id of every jaxpr view in `events` still sent in ranges (the page's Download asks for them all). */
export function nextRanges(events: readonly Event[]): string[] {
  const out: string[] = [];
  for (const event of events) {
    for (const value of Object.values(event)) {
      if (isJaxprView(value)) {
        const next = value.eqn_ranges?.[0];
        if (next !== undefined) out.push(next.detail_id);
      }
    }
  }
  return out;
}
