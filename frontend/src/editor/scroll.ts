/**
 * When the editor scrolls to a line the shell points at (the shared selection, a failed run's
 * source line): only when the line is not fully in view. A line already visible stays where it
 * is: scrolling it by the margin moved the line a user had just clicked, and a line near the
 * bottom edge pushed line 1 half out of view (and a loaded example kept that offset).
 */

/** A vertical extent in pixels, both ends in the same coordinates (e.g. client coordinates). */
export interface Band {
  top: number;
  bottom: number;
}

/** Whether `line` lies entirely inside `visible` (a line taller than the view never does). */
export function fullyVisible(line: Band, visible: Band): boolean {
  return line.top >= visible.top && line.bottom <= visible.bottom;
}

/** Margin (px) kept above/below a line scrolled into view. */
export const SCROLL_MARGIN = 24;
