/**
 * Web Worker that lays out a dataflow graph with dagre off the main thread: a jaxpr of a few
 * hundred eqns takes dagre seconds (every long edge becomes a chain of dummy nodes), and the page
 * must stay responsive meanwhile. Only what is expanded is laid out: collapsed groups are one node
 * each, expanded ones clusters. Message in: `{ id, graph: DataflowGraph }`; out: `{ id, layout }`.
 */
import { layoutDataflowGraph, type DataflowGraph } from './dataflow-graph';

self.onmessage = (event: MessageEvent<{ id: number; graph: DataflowGraph }>) => {
  const { id, graph } = event.data;
  self.postMessage({ id, layout: layoutDataflowGraph(graph) });
};
