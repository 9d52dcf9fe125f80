/**
 * The pure half of `VirtualList.svelte`: whether a list is long enough to window, and the sizes of
 * the spacers that stand in for the rows outside the window.
 *
 * The windowing itself (which rows are in view, their measured heights) is TanStack Virtual's
 * (`@tanstack/svelte-virtual`); this module only turns its virtual items into the two spacer
 * heights a table or a block list needs, so that the scroll height stays that of the whole list.
 */

/** Lists with at most this many rows render every row: the DOM stays small, and every row is in it (find-in-page, tests). */
export const WINDOW_THRESHOLD = 300;

/** Render only the rows in view? */
export function shouldWindow(count: number, threshold: number = WINDOW_THRESHOLD): boolean {
  return count > threshold;
}

/** The part of a TanStack virtual item this module reads: its pixel offset from the list's top and its height. */
export interface WindowRow {
  index: number;
  start: number;
  end: number;
}

/**
 * Heights (px) of the spacer above the first rendered row and below the last one, for rows
 * `rows` (in index order) of a list whose full height is `total` px. `margin`: where the list
 * starts in its scroll box (a table's header above the rows: TanStack's `scrollMargin`), which
 * the rows' offsets include and `total` does not.
 */
export function spacers(
  rows: readonly WindowRow[],
  total: number,
  margin = 0,
): { top: number; bottom: number } {
  const first = rows[0];
  const last = rows[rows.length - 1];
  if (first === undefined || last === undefined) return { top: 0, bottom: 0 };
  return { top: Math.max(0, first.start - margin), bottom: Math.max(0, total - (last.end - margin)) };
}
