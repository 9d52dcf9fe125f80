/**
 * A jaxpr text scrolls back to its top when its highlight is cleared: the stepper's ⏮ (first
 * event) left the JVP exhibit's panes scrolled to the end, where the last step had left them.
 */
import { describe, expect, it } from 'vitest';
import { backToTop } from './scroll';

describe('backToTop', () => {
  it('goes back to the top when the stepper returns to before the first step', () => {
    // the JVP primal pane's highlight as the stepper walks a 4-eqn jaxpr, then ⏮
    const walk: ReadonlySet<number>[] = [new Set(), new Set([0]), new Set([1]), new Set([2]), new Set([3]), new Set()];
    const moves = walk.slice(1).map((now, i) => backToTop(walk[i] as ReadonlySet<number>, now));
    expect(moves).toEqual([false, false, false, false, true]);
  });

  it('leaves the text where the user scrolled it while nothing is highlighted', () => {
    // a range of eqns arrives while nothing is highlighted: a new (empty) highlight, no move
    expect(backToTop(new Set(), new Set())).toBe(false);
    // a highlighted eqn is brought into view by its own block, not by the top
    expect(backToTop(new Set([7]), new Set([2, 3]))).toBe(false);
  });

  it('leaves the text at the eqn clicked when the click clears the highlight', () => {
    // the JVP primal pane: step 2,000 highlighted, then a click on eqn 2,031 (past the cap)
    expect(backToTop(new Set([1999]), new Set(), true)).toBe(false);
    // the same change from the stepper (⏮) still goes back to the top
    expect(backToTop(new Set([1999]), new Set(), false)).toBe(true);
  });
});
