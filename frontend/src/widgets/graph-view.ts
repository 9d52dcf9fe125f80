/**
 * What of a laid-out graph is in view: the nodes, edges and boxes that meet the visible part of
 * the layout (plus a margin, so that a small scroll needs no new elements), for the widget to
 * put in the DOM. A graph of 20,000 nodes then holds only the few dozen on screen, and panning
 * costs the same at any size. The bounds of each edge are computed once per layout.
 */
import type { GraphLayout, PlacedCluster, PlacedEdge, PlacedNode } from './dataflow-graph';

/** A rectangle of the layout, in layout units: top-left corner and size. */
export interface ViewRect {
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface InView {
  nodes: PlacedNode[];
  edges: PlacedEdge[];
  clusters: PlacedCluster[];
}

const edgeBounds = new WeakMap<GraphLayout, Float64Array>();

/** x0, y0, x1, y1 of each edge's points, four numbers per edge. */
function boundsOf(layout: GraphLayout): Float64Array {
  let b = edgeBounds.get(layout);
  if (b !== undefined) return b;
  b = new Float64Array(layout.edges.length * 4);
  layout.edges.forEach((e, i) => {
    let x0 = Infinity;
    let y0 = Infinity;
    let x1 = -Infinity;
    let y1 = -Infinity;
    for (const p of e.points) {
      x0 = Math.min(x0, p.x);
      y0 = Math.min(y0, p.y);
      x1 = Math.max(x1, p.x);
      y1 = Math.max(y1, p.y);
    }
    b.set([x0, y0, x1, y1], i * 4);
  });
  edgeBounds.set(layout, b);
  return b;
}

/** The nodes, edges and boxes of `layout` that meet `view` grown by `margin` on every side. */
export function inView(layout: GraphLayout, view: ViewRect, margin: number): InView {
  const x0 = view.x - margin;
  const y0 = view.y - margin;
  const x1 = view.x + view.width + margin;
  const y1 = view.y + view.height + margin;
  const meets = (cx: number, cy: number, w: number, h: number): boolean =>
    cx + w / 2 >= x0 && cx - w / 2 <= x1 && cy + h / 2 >= y0 && cy - h / 2 <= y1;
  const b = boundsOf(layout);
  return {
    nodes: layout.nodes.filter((n) => meets(n.x, n.y, n.width, n.height)),
    clusters: layout.clusters.filter((c) => meets(c.x, c.y, c.width, c.height)),
    edges: layout.edges.filter((_, i) => {
      const j = i * 4;
      return (b[j + 2] as number) >= x0 && (b[j] as number) <= x1 && (b[j + 3] as number) >= y0 && (b[j + 1] as number) <= y1;
    }),
  };
}

/**
 * The view rectangle to draw for: `drawnFor` (the one the DOM was last filled for) while `view`
 * has the same size and lies within `margin / 2` of it on every side, else `view`. What is drawn
 * is the view grown by `margin`, so a pan of less than half the margin is still covered by
 * elements already in the DOM (half the margin at least is left on each side); the DOM is then
 * filled anew only every few frames of a pan, not on every scroll event (each refill filters the
 * whole layout and diffs the drawn elements: at a few thousand nodes, most of a frame).
 */
export function drawWindow(drawnFor: ViewRect | null, view: ViewRect, margin: number): ViewRect {
  if (drawnFor === null || drawnFor.width !== view.width || drawnFor.height !== view.height) return view;
  const slack = margin / 2;
  return Math.abs(view.x - drawnFor.x) <= slack && Math.abs(view.y - drawnFor.y) <= slack ? drawnFor : view;
}
