/**
 * Web Worker that lays out a dataflow graph off the main thread (`layoutGraph`: dagre for a few
 * hundred nodes, which takes dagre seconds, since every long edge becomes a chain of dummy
 * nodes; the layered layout beyond), so that the page stays responsive meanwhile. Only what is
 * expanded is laid out: collapsed groups are one node each, expanded ones clusters. Message in:
 * `{ id, graph: DataflowGraph }`; out: `{ id, layout }`.
 */
import { layoutGraph, type DataflowGraph } from './dataflow-graph';

self.onmessage = (event: MessageEvent<{ id: number; graph: DataflowGraph }>) => {
  const { id, graph } = event.data;
  self.postMessage({ id, layout: layoutGraph(graph) });
};
