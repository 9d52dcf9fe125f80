/**
 * The layout of a dataflow graph too large for dagre (`DAGRE_MAX_NODES`): thousands of nodes
 * laid out in linear time, in the same coordinates and shapes as dagre's (`GraphLayout`), so
 * that the widget draws both alike.
 *
 * Nodes come in the order `visibleGraph` emits them, which is the jaxpr's order: every edge runs
 * from an earlier node to a later one. A node's rank (its row) is one below the lowest of the
 * nodes it reads (longest path from the inputs), and never above the rows of what came before
 * its box: each run of nodes in one box (the same chain of expanded groups) gets rows of its
 * own, below everything before it, so that boxes never overlap and nest as the groups do. Rows
 * are centred; a box is drawn around its nodes and inner boxes, with room for its header.
 * Edges run from the bottom of their source to the top of their target, straight between
 * neighbouring rows and around the right of the rows between otherwise (dagre routes them
 * around every node; at this size the layout's speed matters more).
 */
import type { DataflowGraph, GraphLayout, PlacedCluster, PlacedEdge, PlacedNode } from './dataflow-graph';
import { NODE_H, nodeWidth } from './dataflow-graph';

const RANK_GAP = 34;
const NODE_GAP = 18;
const MARGIN = 8;
/** Padding of a box around what it holds, and the height of its header (the label). */
const PAD = 10;
const HEAD = 18;

export function layoutLayered(graph: DataflowGraph): GraphLayout {
  const { nodes, edges, clusters } = graph;
  const at = new Map(nodes.map((n, i) => [n.id, i]));
  const preds: number[][] = nodes.map(() => []);
  for (const e of [...edges, ...(graph.layoutEdges ?? [])]) {
    const a = at.get(e.from);
    const b = at.get(e.to);
    if (a !== undefined && b !== undefined && a < b) preds[b]?.push(a);
  }
  const parentOf = new Map(clusters.map((c) => [c.id, c.parent]));
  const chainOf = (box: string | undefined): string[] => {
    const out: string[] = [];
    for (let c: string | null | undefined = box; c != null; c = parentOf.get(c)) out.unshift(c);
    return out;
  };

  // Ranks, and the extra room above a row where boxes open or close.
  const rank = new Int32Array(nodes.length);
  const extra: number[] = [];
  let floor = 0;
  let deepest = -1;
  let chain: string[] = [];
  nodes.forEach((n, i) => {
    const next = chainOf(n.parent);
    let common = 0;
    while (common < chain.length && common < next.length && chain[common] === next[common]) common++;
    const closed = chain.length - common;
    const opened = next.length - common;
    if (closed + opened > 0 && i > 0) {
      floor = deepest + 1;
      extra[floor] = (extra[floor] ?? 0) + closed * PAD + opened * (PAD + HEAD);
    } else if (opened > 0) {
      extra[0] = (extra[0] ?? 0) + opened * (PAD + HEAD);
    }
    chain = next;
    let r = floor;
    for (const p of preds[i] ?? []) r = Math.max(r, (rank[p] ?? 0) + 1);
    rank[i] = r;
    deepest = Math.max(deepest, r);
  });
  if (chain.length > 0) extra[deepest + 1] = (extra[deepest + 1] ?? 0) + chain.length * PAD;

  // Rows: y from the ranks; x centred, nodes in their order.
  const rows: number[][] = Array.from({ length: deepest + 1 }, () => []);
  nodes.forEach((_, i) => rows[rank[i] as number]?.push(i));
  const widths = nodes.map(nodeWidth);
  const rowWidth = rows.map((row) => row.reduce((w, i) => w + (widths[i] ?? 0), 0) + NODE_GAP * Math.max(0, row.length - 1));
  const maxRow = Math.max(0, ...rowWidth);
  // Room on the left and right for the boxes' padding, at their deepest nesting.
  const side = MARGIN + PAD * Math.max(0, ...clusters.map((c) => chainOf(c.id).length));
  const x = new Float64Array(nodes.length);
  const y = new Float64Array(nodes.length);
  let top = MARGIN;
  rows.forEach((row, r) => {
    top += extra[r] ?? 0;
    let left = side + (maxRow - (rowWidth[r] ?? 0)) / 2;
    for (const i of row) {
      const w = widths[i] ?? 0;
      x[i] = left + w / 2;
      y[i] = top + NODE_H / 2;
      left += w + NODE_GAP;
    }
    top += NODE_H + RANK_GAP;
  });
  top += extra[rows.length] ?? 0;

  const placed: PlacedNode[] = nodes.map((n, i) => ({ ...n, x: x[i] ?? 0, y: y[i] ?? 0, width: widths[i] ?? 0, height: NODE_H }));

  // Boxes: around their nodes and inner boxes, innermost first.
  const bounds = new Map<string, { x0: number; y0: number; x1: number; y1: number }>();
  const grow = (id: string, x0: number, y0: number, x1: number, y1: number): void => {
    const b = bounds.get(id);
    if (b === undefined) bounds.set(id, { x0, y0, x1, y1 });
    else bounds.set(id, { x0: Math.min(b.x0, x0), y0: Math.min(b.y0, y0), x1: Math.max(b.x1, x1), y1: Math.max(b.y1, y1) });
  };
  for (const n of placed) {
    if (n.parent !== undefined) grow(n.parent, n.x - n.width / 2, n.y - n.height / 2, n.x + n.width / 2, n.y + n.height / 2);
  }
  const depth = (id: string): number => chainOf(id).length;
  const byDepth = [...clusters].sort((a, b) => depth(b.id) - depth(a.id));
  const boxes = new Map<string, PlacedCluster>();
  for (const c of byDepth) {
    const b = bounds.get(c.id);
    if (b === undefined) continue;
    const box = { x0: b.x0 - PAD, y0: b.y0 - PAD - HEAD, x1: b.x1 + PAD, y1: b.y1 + PAD };
    boxes.set(c.id, { ...c, x: (box.x0 + box.x1) / 2, y: (box.y0 + box.y1) / 2, width: box.x1 - box.x0, height: box.y1 - box.y0 });
    if (c.parent !== null) grow(c.parent, box.x0, box.y0, box.x1, box.y1);
  }
  const placedClusters = clusters.flatMap((c) => boxes.get(c.id) ?? []);

  const placedEdges: PlacedEdge[] = edges.flatMap((e) => {
    const a = at.get(e.from);
    const b = at.get(e.to);
    if (a === undefined || b === undefined) return [];
    const from = placed[a] as PlacedNode;
    const to = placed[b] as PlacedNode;
    const start = { x: from.x, y: from.y + NODE_H / 2 };
    const end = { x: to.x, y: to.y - NODE_H / 2 };
    if ((rank[b] ?? 0) - (rank[a] ?? 0) <= 1) return [{ ...e, points: [start, end] }];
    // Over more than one row: around the rows between, on the right of both ends, so that the
    // edge is not drawn through the nodes it passes.
    const side = Math.max(from.x + from.width / 2, to.x + to.width / 2) + NODE_GAP / 2;
    return [{ ...e, points: [start, { x: side, y: start.y + RANK_GAP / 2 }, { x: side, y: end.y - RANK_GAP / 2 }, end] }];
  });
  return { nodes: placed, edges: placedEdges, clusters: placedClusters, width: maxRow + 2 * side, height: top - RANK_GAP + MARGIN };
}
