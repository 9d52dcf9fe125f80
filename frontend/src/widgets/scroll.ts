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
