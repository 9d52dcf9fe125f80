/**
 * How often the dataflow graph takes a view that is still growing by eqn ranges (design 0045).
 *
 * A 10,000-eqn program's ranges arrive over ~5 s; building the graph and laying it out again for
 * each one kept the main thread busy enough that a pan in those seconds ran at 10-19 FPS
 * (design 0027). The graph takes the grown view at most once every `GROW_MS` while ranges are
 * still to come, and at once when the view is whole (the last range) or is another jaxpr.
 * The ranges themselves are asked for at full speed: only the drawing waits.
 */
import type { JaxprView } from '../protocol';
import { grownFrom } from '../store/eqn-ranges';

/** While a view grows, the graph is rebuilt at most this often (ms). */
export const GROW_MS = 1000;

/**
 * Milliseconds until the graph, showing `shown` since `shownAt` (ms, `performance.now()`),
 * should take `next`, at `now`: 0 for at once (`next` is whole, another jaxpr, or `GROW_MS`
 * have passed), else how long to wait.
 */
export function growDelay(shown: JaxprView, next: JaxprView, shownAt: number, now: number, growMs = GROW_MS): number {
  const whole = next.total_eqns == null || next.eqns.length >= next.total_eqns;
  if (whole || next === shown || !grownFrom(shown, next)) return 0;
  return Math.max(0, shownAt + growMs - now);
}
