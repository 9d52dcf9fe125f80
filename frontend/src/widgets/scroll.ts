/** Scrolling a highlighted line into view inside its own scroll box. */

/**
 * Scroll `box` (a scroll container with `position: relative`) so that `el` is visible, without
 * scrolling the page: `Element.scrollIntoView` would also scroll every ancestor, and the page
 * would jump to another panel whenever a click there highlights a line here.
 */
export function revealWithin(box: HTMLElement, el: HTMLElement, inset = 0): void {
  // `inset`: the height of what stays stuck at the box's top (a sticky table header), under
  // which a row counts as hidden.
  const top = el.offsetTop;
  const bottom = top + el.offsetHeight;
  if (top >= box.scrollTop + inset && bottom <= box.scrollTop + box.clientHeight) return;
  box.scrollTop = Math.max(0, top - inset - (box.clientHeight - inset) / 3);
}

/**
 * Whether a text whose highlight went from eqns `before` to `now` goes back to its top: when
 * the highlight was cleared (the stepper's ⏮, or a step back before the first eqn). A
 * highlighted eqn is brought into view by its own block; with none, nothing would move, and the
 * text stayed scrolled where the last step had left it (at its end). Only on the change itself:
 * while nothing is highlighted, the user's own scrolling (to the end, to load eqn ranges) stays.
 * Never for a click in the text itself (`clickedHere`): the reader is at the eqn clicked, and a
 * click that clears the highlight (an eqn past a step view's cap has no step) took the text to
 * its top, away from it.
 */
export function backToTop(before: ReadonlySet<number>, now: ReadonlySet<number>, clickedHere = false): boolean {
  return !clickedHere && before.size > 0 && now.size === 0;
}
