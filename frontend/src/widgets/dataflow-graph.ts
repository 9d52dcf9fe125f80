/**
 * The dataflow graph of a staged jaxpr (invars and constvars -> eqns -> outvars), and its layout
 * with dagre (`@dagrejs/dagre`).
 *
 * Nodes are the jaxpr's binders, eqns and collapsed groups (built by `graph-groups.ts`'s
 * `visibleGraph`); an edge runs from the node that defines a variable to every node that reads it,
 * labelled with the variable's name as JAX prints it. Literals (`2.0:f32[]`) are not nodes: they
 * are shown in the reading eqn's label.
 */
import dagre from '@dagrejs/dagre';

export type GraphNodeKind = 'invar' | 'constvar' | 'eqn' | 'outvar' | 'group';

export interface GraphNode {
  /** unique id: `in:a`, `const:a`, `eqn:3`, `out:0` */
  id: string;
  kind: GraphNodeKind;
  /** primitive name for eqns, variable name for binders, `out[i]` for outvars */
  label: string;
  /** the avals the node defines (eqn outvars, the binder's aval), as `f32[3]` / `~f32[]` */
  sublabel: string;
  /** the eqn's index in `jaxpr.eqns` (eqn nodes only) */
  eqnIndex: number | null;
  /** the user line of the eqn (eqn nodes only) */
  line: number | null;
  /** the collapsed group the node stands for (group nodes only; `graph-groups.ts`) */
  groupId?: string;
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
  /** how many eqns were left out (the jaxpr had more than `maxEqns`) */
  omittedEqns: number;
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

export interface GraphLayout {
  nodes: PlacedNode[];
  edges: PlacedEdge[];
  width: number;
  height: number;
}

/** Approximate width of monospace text at the graph's font size (7.2 px per character at 12 px). */
const CHAR_PX = 7.2;

/** Lay the graph out top to bottom with dagre; node sizes follow their labels. */
export function layoutDataflowGraph(graph: DataflowGraph): GraphLayout {
  const g = new dagre.graphlib.Graph({ multigraph: true });
  g.setGraph({ rankdir: 'TB', nodesep: 18, ranksep: 34, marginx: 8, marginy: 8 });
  g.setDefaultEdgeLabel(() => ({}));
  for (const n of graph.nodes) {
    const chars = Math.max(n.label.length, n.sublabel.length, 3);
    g.setNode(n.id, { width: Math.ceil(chars * CHAR_PX) + 16, height: 38 });
  }
  graph.edges.forEach((e, i) => g.setEdge(e.from, e.to, {}, `e${i}`));
  dagre.layout(g);
  const nodes: PlacedNode[] = graph.nodes.map((n) => {
    const placed = g.node(n.id);
    return { ...n, x: placed.x ?? 0, y: placed.y ?? 0, width: placed.width, height: placed.height };
  });
  const edges: PlacedEdge[] = graph.edges.map((e, i) => {
    const placed = g.edge({ v: e.from, w: e.to, name: `e${i}` }) as { points?: { x: number; y: number }[] } | undefined;
    return { ...e, points: placed?.points ?? [] };
  });
  const label = g.graph();
  return { nodes, edges, width: Number(label.width ?? 0), height: Number(label.height ?? 0) };
}
