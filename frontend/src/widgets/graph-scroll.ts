/**
 * Where the dataflow graph's box scrolls after a new layout (an expand, a collapse, "expand all",
 * a search that opened groups, a new jaxpr), so that the view never lands on blank space.
 *
 * Before the change the widget notes what the user was looking at (`anchorOf`: the picked node,
 * else the eqn or group node nearest the centre of the view, and the eqns it stands for). After
 * the layout, `scrollTarget` finds that again: the same node; the box a group became when it was
 * expanded (`grp:X` → `cl:X`); the node that now holds its eqns (a group it was collapsed into);
 * else the content itself, the top-most eqn or group node. A target already in view is left where
 * it is; otherwise the box scrolls so it is centred across and a quarter down. A box larger than
 * the view is reached through its top-most node, not its centre (an expanded 12-layer stack is a
 * box 60,000 units tall, and the rows of 148 parameters 1,800 wide: their centres are blank space).
 * A target under the overview (the minimap over the view's bottom-right corner) is not in view:
 * the view is centred across in the part beside it, so that a search hit or an expanded box is
 * not brought to where the overview hides it (a review of a 12-layer transformer).
 */
import type { GraphLayout, PlacedCluster, PlacedNode } from './dataflow-graph';
import type { ViewRect } from './graph-view';

/** What the view showed before a change: node ids to find again, in order, and the eqns they
 * stand for (to find the node that holds them after a collapse). */
export interface GraphFocus {
  ids: string[];
  eqns: number[];
}

/** A rectangle by its centre and size, in layout units (as the layout places nodes and boxes). */
interface Box {
  x: number;
  y: number;
  width: number;
  height: number;
}

/** The overview over the view (`graph-minimap.ts`'s `overviewCover`), in layout units: `rect`,
 * what it hides, from the view's top-left; `room`, the width the box keeps right of the layout
 * for it (the scroll area is that much wider than the layout). */
export interface Covered {
  rect: ViewRect;
  room: number;
}

/** Room kept between a target and the edge of the view, in layout units. */
const EDGE = 16;

const central = (n: PlacedNode): boolean => n.kind === 'eqn' || n.kind === 'group';

function meets(b: Box, view: ViewRect): boolean {
  return b.x + b.width / 2 >= view.x && b.x - b.width / 2 <= view.x + view.width && b.y + b.height / 2 >= view.y && b.y - b.height / 2 <= view.y + view.height;
}

/**
 * What the user is looking at in `layout` through `view`: the `picked` node first (when it is in
 * the layout), then the eqn or group node in view nearest the view's centre (any node in view when
 * none is). `eqnsOf(id)` gives the eqns a node stands for (a group's, an eqn node's own).
 */
export function anchorOf(
  layout: GraphLayout,
  view: ViewRect,
  picked: string | null,
  eqnsOf: (id: string) => number[],
): GraphFocus {
  const ids: string[] = [];
  if (picked !== null && layout.nodes.some((n) => n.id === picked)) ids.push(picked);
  const seen = layout.nodes.filter((n) => meets(n, view));
  const pool = seen.some(central) ? seen.filter(central) : seen;
  const cx = view.x + view.width / 2;
  const cy = view.y + view.height / 2;
  let best: PlacedNode | null = null;
  let bestD = Infinity;
  for (const n of pool) {
    const d = (n.x - cx) ** 2 + (n.y - cy) ** 2;
    if (d < bestD) {
      best = n;
      bestD = d;
    }
  }
  if (best !== null && !ids.includes(best.id)) ids.push(best.id);
  return { ids, eqns: ids.flatMap(eqnsOf) };
}

/** The top-most node drawn inside box `id` (eqn and group nodes before the rest), or undefined. */
function firstInside(layout: GraphLayout, id: string): PlacedNode | undefined {
  const parentOf = new Map<string, string | null>(layout.clusters.map((c) => [c.id, c.parent]));
  const inside = (n: PlacedNode): boolean => {
    let at: string | null | undefined = n.parent;
    for (let guard = 0; at != null && guard < 10_000; guard++) {
      if (at === id) return true;
      at = parentOf.get(at);
    }
    return false;
  };
  const held = layout.nodes.filter(inside);
  return topMost(held.some(central) ? held.filter(central) : held);
}

function topMost(nodes: readonly PlacedNode[]): PlacedNode | undefined {
  let best: PlacedNode | undefined;
  for (const n of nodes) {
    const top = n.y - n.height / 2;
    if (best === undefined || top < best.y - best.height / 2 || (top === best.y - best.height / 2 && n.x < best.x)) best = n;
  }
  return best;
}

/** The box to bring into view for `id`: its node; its cluster when that fits in a view of
 * `size`, else the top-most node inside it. */
function targetOf(layout: GraphLayout, id: string, size: { width: number; height: number }): Box | undefined {
  const node = layout.nodes.find((n) => n.id === id);
  if (node !== undefined) return node;
  const cluster: PlacedCluster | undefined = layout.clusters.find((c) => c.id === id);
  if (cluster === undefined) return undefined;
  if (cluster.width <= size.width - 2 * EDGE && cluster.height <= size.height - 2 * EDGE) return cluster;
  return firstInside(layout, id) ?? { x: cluster.x - cluster.width / 2 + size.width / 2, y: cluster.y - cluster.height / 2 + 8, width: 1, height: 16 };
}

/**
 * The scroll position (top-left of the view, layout units) after a new `layout`, the view now at
 * `view` (its size is the box's): the first of `focus` found again (module docstring; `nodeOfEqn`
 * maps an eqn to the node that draws or holds it in the new graph), else the top-most eqn or
 * group node. Unchanged when that target is already in view and not under the overview
 * (`covered`, when shown); else centred across (in the part of the view left of the overview)
 * and a quarter down. Clamped to the layout (and the overview's room). `null` for an empty layout.
 */
export function scrollTarget(
  layout: GraphLayout,
  view: ViewRect,
  focus: GraphFocus | null,
  nodeOfEqn: ReadonlyMap<number, string>,
  covered: Covered | null = null,
): { x: number; y: number } | null {
  const size = { width: view.width, height: view.height };
  const candidates: string[] = [];
  for (const id of focus?.ids ?? []) {
    candidates.push(id);
    if (id.startsWith('grp:')) candidates.push(`cl:${id.slice(4)}`);
    // an eqn with inner jaxprs expanded in place: `eqn:4` is now the box `cl:x:4`
    if (id.startsWith('eqn:')) candidates.push(`cl:x:${id.slice(4)}`);
  }
  for (const eqn of focus?.eqns ?? []) {
    const holder = nodeOfEqn.get(eqn);
    if (holder !== undefined) candidates.push(holder);
  }
  let target: Box | undefined;
  for (const id of candidates) {
    target = targetOf(layout, id, size);
    if (target !== undefined) break;
  }
  target ??= topMost(layout.nodes.filter(central)) ?? topMost(layout.nodes);
  if (target === undefined) return null;
  const maxX = Math.max(0, layout.width + (covered?.room ?? 0) - view.width);
  const maxY = Math.max(0, layout.height - view.height);
  const clamp = (v: number, max: number): number => Math.min(max, Math.max(0, v));
  const left = target.x - target.width / 2;
  const right = target.x + target.width / 2;
  const top = target.y - target.height / 2;
  const bottom = target.y + target.height / 2;
  // Under the overview it is hidden, though in view: moved across, beside the overview (which
  // covers only the view's right side; the box keeps room for it right of the layout, so even
  // the right-most node scrolls clear of it).
  const hidden = covered !== null && meets(target, { ...covered.rect, x: view.x + covered.rect.x, y: view.y + covered.rect.y });
  const clearWidth = covered === null ? view.width : Math.max(0, covered.rect.x);
  const fitsAcross = !hidden && left >= view.x + EDGE && right <= view.x + view.width - EDGE;
  const fitsDown = top >= view.y + EDGE && bottom <= view.y + view.height - EDGE;
  return {
    x: clamp(fitsAcross ? view.x : target.x - clearWidth / 2, maxX),
    y: clamp(fitsDown ? view.y : top - view.height / 4, maxY),
  };
}
