/**
 * The dataflow graph of a staged jaxpr (invars and constvars -> eqns -> outvars), and its layout
 * with dagre (`@dagrejs/dagre`), or past `DAGRE_MAX_NODES` with the layered layout of
 * `graph-layered.ts`.
 *
 * Nodes are the jaxpr's binders, eqns and collapsed groups (built by `graph-groups.ts`'s
 * `visibleGraph`); an edge runs from the node that defines a variable to every node that reads it,
 * labelled with the variable's name as JAX prints it. Literals (`2.0:f32[]`) are not nodes: they
 * are shown in the reading eqn's label. Expanded groups are clusters (dagre's compound graph):
 * each is laid out as a box around the nodes and clusters it holds.
 */
import dagre from '@dagrejs/dagre';
import { layoutLayered } from './graph-layered';

export type GraphNodeKind = 'invar' | 'constvar' | 'eqn' | 'outvar' | 'group';

export interface GraphNode {
  /** unique id: `in:a`, `const:a`, `eqn:3`, `out:0` */
  id: string;
  kind: GraphNodeKind;
  /** primitive name for eqns, variable name for binders, `out[i]` for outvars */
  label: string;
  /** the avals the node defines (eqn outvars, the binder's aval), as `f32[3]` / `~f32[]` */
  sublabel: string;
  /** the eqn's index in `jaxpr.eqns` (eqn nodes only; for an eqn of an inner jaxpr, the
   * top-level eqn that holds it) */
  eqnIndex: number | null;
  /** the user line of the eqn (an inner eqn's own, not its top-level eqn's) */
  line: number | null;
  /** the collapsed group the node stands for (group nodes only; `graph-groups.ts`) */
  groupId?: string;
  /** the cluster (expanded group) the node is drawn in */
  parent?: string;
  /** an eqn of an inner jaxpr: its place (`4/jaxpr0/2`: the third eqn of eqn 4's `jaxpr`) */
  path?: string;
  /** an eqn with inner jaxprs: the group id that expands it in place (`x:4`) */
  expand?: string;
  /** collapsed arguments the node reads that are not wired to it (`params`: read by too many) */
  reads?: string[];
  /** the full text of a node whose label is shortened (an argument leaf's keypath) */
  title?: string;
}

/** An expanded group, drawn as a box around what it holds. */
export interface GraphCluster {
  /** `cl:` and the group id */
  id: string;
  /** `block (line 12)`, `jit _where · eqn 4`, `branches[1]` */
  label: string;
  /** the group it collapses back to; null for an inner jaxpr of a `cond`/`while` (its eqn's box collapses) */
  groupId: string | null;
  parent: string | null;
  /** for an expanded eqn (and its inner jaxprs' boxes): the top-level eqn */
  eqnIndex: number | null;
}

export interface GraphEdge {
  from: string;
  to: string;
  /** the variable carried, as JAX prints it (`b`) */
  label: string;
}

export interface DataflowGraph {
  nodes: GraphNode[];
  edges: GraphEdge[];
  /** the expanded groups that hold nodes, parents before children */
  clusters: GraphCluster[];
  /** how many eqns were left out (the jaxpr had more than `maxEqns`) */
  omittedEqns: number;
  /** edges that only place nodes and are not drawn: the rows of an expanded argument's leaves
   * (`graph-groups.ts`, `leafRows`), each leaf below one of the row before */
  layoutEdges?: { from: string; to: string }[];
}

export interface PlacedNode extends GraphNode {
  /** centre, in SVG user units */
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface PlacedEdge extends GraphEdge {
  points: { x: number; y: number }[];
}

export interface PlacedCluster extends GraphCluster {
  /** centre and size of its box, in SVG user units */
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface GraphLayout {
  nodes: PlacedNode[];
  edges: PlacedEdge[];
  clusters: PlacedCluster[];
  width: number;
  height: number;
}

/** Approximate width of monospace text at the graph's font size (7.2 px per character at 12 px). */
const CHAR_PX = 7.2;

/** Room on the right of an expandable eqn's node for its expand button. */
export const EXPAND_PX = 18;

/** Node height, in SVG user units. */
export const NODE_H = 38;

/** A node's size: its width follows its longest label (and its expand button). */
export function nodeWidth(n: GraphNode): number {
  const chars = Math.max(n.label.length, n.sublabel.length, 3);
  return Math.ceil(chars * CHAR_PX) + 16 + (n.expand ? EXPAND_PX : 0);
}

/** Graphs of up to this many nodes and boxes are laid out with dagre; larger ones with the
 * layered layout of `graph-layered.ts` (dagre's cost grows much faster than the graph: seconds
 * at a few hundred nodes with long edges, minutes at thousands). */
export const DAGRE_MAX_NODES = 400;

/** Lay the graph out with dagre when it is small enough, else with the layered layout. A graph
 * with an expanded argument of many leaves (`layoutEdges`) is laid out layered too: dagre spreads
 * the leaves' rows to make room for their long edges down to the layers that read them (the
 * GPT stack's 148 parameters: 9,000 units wide against the layered layout's 1,800). */
export function layoutGraph(graph: DataflowGraph): GraphLayout {
  const small = graph.nodes.length + graph.clusters.length <= DAGRE_MAX_NODES;
  return small && (graph.layoutEdges ?? []).length === 0 ? layoutDataflowGraph(graph) : layoutLayered(graph);
}

/** Lay the graph out top to bottom with dagre; node sizes follow their labels; clusters are
 * dagre's compound nodes (a graph with none is laid out as a plain one). */
export function layoutDataflowGraph(graph: DataflowGraph): GraphLayout {
  const compound = graph.clusters.length > 0;
  const g = new dagre.graphlib.Graph({ multigraph: true, compound });
  g.setGraph({ rankdir: 'TB', nodesep: 18, ranksep: 34, marginx: 8, marginy: 8 });
  g.setDefaultEdgeLabel(() => ({}));
  for (const c of graph.clusters) g.setNode(c.id, {});
  for (const c of graph.clusters) if (c.parent !== null) g.setParent(c.id, c.parent);
  for (const n of graph.nodes) {
    g.setNode(n.id, { width: nodeWidth(n), height: NODE_H });
    if (compound && n.parent !== undefined) g.setParent(n.id, n.parent);
  }
  graph.edges.forEach((e, i) => g.setEdge(e.from, e.to, {}, `e${i}`));
  (graph.layoutEdges ?? []).forEach((e, i) => g.setEdge(e.from, e.to, {}, `l${i}`));
  dagre.layout(g);
  const nodes: PlacedNode[] = graph.nodes.map((n) => {
    const placed = g.node(n.id);
    return { ...n, x: placed.x ?? 0, y: placed.y ?? 0, width: placed.width, height: placed.height };
  });
  const clusters: PlacedCluster[] = graph.clusters.map((c) => {
    const placed = g.node(c.id);
    return { ...c, x: placed.x ?? 0, y: placed.y ?? 0, width: placed.width ?? 0, height: placed.height ?? 0 };
  });
  const edges: PlacedEdge[] = graph.edges.map((e, i) => {
    const placed = g.edge({ v: e.from, w: e.to, name: `e${i}` }) as { points?: { x: number; y: number }[] } | undefined;
    return { ...e, points: placed?.points ?? [] };
  });
  const label = g.graph();
  return { nodes, edges, clusters, width: Number(label.width ?? 0), height: Number(label.height ?? 0) };
}
