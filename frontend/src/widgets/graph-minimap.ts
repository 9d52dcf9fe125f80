/**
 * The dataflow graph's overview (the minimap): its size, its place in the bottom-right corner of
 * the graph's box, when it is shown, and the room the box keeps for it. The overview sits over
 * the box's corner, so without that room the right-most nodes of a wide graph that reach the
 * lower part of the box lay under it at every scroll position (scrolled to its right end, the
 * layout ended at the box's right edge, under the overview); with it, the layout scrolled to its
 * right end ends left of the overview, and "fit width" fits the layout to the width beside it.
 * A view moved to a node (`graph-scroll.ts`: a search hit, an expand) is moved clear of it
 * (`overviewCover`), and the user can hide it (the graph's "overview" box): then it has no room.
 */

/** A width and height (layout units or CSS pixels). */
export interface Size {
  width: number;
  height: number;
}

/** A rectangle: top-left corner and size. */
export interface Rect extends Size {
  x: number;
  y: number;
}

/** The overview's largest size (its canvas, CSS pixels). */
export const MINIMAP_W = 180;
export const MINIMAP_H = 360;
/** Its smallest size either way, so that a long thin layout still has an overview to click. */
export const MINIMAP_MIN = 12;
/** Its distance from the box's right and bottom edges, and its border (CSS pixels). */
export const MINIMAP_INSET = 10;
export const MINIMAP_BORDER = 1;

/** The overview's canvas size (CSS pixels): the layout scaled to fit `MINIMAP_W` by
 * `MINIMAP_H`, at least `MINIMAP_MIN` either way; null for an empty layout. */
export function minimapSize(layout: Size): Size | null {
  if (layout.width <= 0 || layout.height <= 0) return null;
  const m = Math.min(MINIMAP_W / layout.width, MINIMAP_H / layout.height);
  return { width: Math.max(MINIMAP_MIN, layout.width * m), height: Math.max(MINIMAP_MIN, layout.height * m) };
}

/** Where the overview of canvas size `size` is in a box of client size `box` (CSS pixels, its
 * border included): in the bottom-right corner, `MINIMAP_INSET` from both edges. */
export function minimapRect(box: Size, size: Size): Rect {
  const width = size.width + 2 * MINIMAP_BORDER;
  const height = size.height + 2 * MINIMAP_BORDER;
  return { x: box.width - MINIMAP_INSET - width, y: box.height - MINIMAP_INSET - height, width, height };
}

/** The room (CSS pixels) the box keeps on the right of the layout while an overview of canvas
 * size `size` is shown: the overview, its border and its inset on both sides, so that the
 * layout scrolled to its right end ends `MINIMAP_INSET` left of the overview. */
export function minimapRoom(size: Size | null): number {
  return size === null ? 0 : size.width + 2 * MINIMAP_BORDER + 2 * MINIMAP_INSET;
}

/** Whether the layout overflows a box of client size `box`, drawn at its own size or, `fit`,
 * at the box's width (then the overview is shown). From the layout's size, not the box's
 * scroll size: that holds the room the overview itself makes, and an overview shown because
 * it is shown would stay after the layout shrank. */
export function overflows(layout: Size, box: Size, fit: boolean): boolean {
  const s = fit && layout.width > 0 ? box.width / layout.width : 1;
  return layout.width * s > box.width + 1 || layout.height * s > box.height + 1;
}

/** What the overview hides of a box of client size `box` (CSS pixels) showing `layout` at `scale`
 * CSS pixels per layout unit, in layout units from the view's top-left, and the room the box
 * keeps for it (`minimapRoom`, layout units): for `scrollTarget` (`graph-scroll.ts`), so that a
 * node it scrolls to is not left under the overview. Null for an empty layout; the caller
 * passes it only while the overview is shown. */
export function overviewCover(layout: Size, box: Size, scale: number): { rect: Rect; room: number } | null {
  const size = minimapSize(layout);
  if (size === null || scale <= 0) return null;
  const r = minimapRect(box, size);
  return {
    rect: { x: r.x / scale, y: r.y / scale, width: r.width / scale, height: r.height / scale },
    room: minimapRoom(size) / scale,
  };
}
