import { describe, expect, it } from 'vitest';
import { loadEvents, loadTruth } from '../../test-fixtures/load';
import type { JaxprView } from '../protocol';
import type { DataflowGraph } from './dataflow-graph';
import { layoutDataflowGraph } from './dataflow-graph';
import { lastOf } from './events';
import { allGroupIds, groupTree, invarGroups, visibleGraph } from './graph-groups';

/** The graph with every group expanded (what a program of at most `maxEqns` eqns opens on). */
function buildDataflowGraph(jaxpr: JaxprView, maxEqns = 300): DataflowGraph {
  const tree = groupTree(jaxpr);
  const args = (invarGroups(jaxpr) ?? []).flatMap((g) => (g ? [g.id] : []));
  return visibleGraph(jaxpr, tree, new Set([...allGroupIds(tree), ...args]), maxEqns);
}

interface Truth {
  eqns: { primitive: string }[];
  invars: number;
  constvars: number;
  outvars: number;
}

function staged(name: string): JaxprView {
  const e = lastOf(loadEvents(name), 'jaxpr_staged');
  if (!e) throw new Error(`${name} has no jaxpr_staged`);
  return e.jaxpr;
}

describe.each(['tracing-where', 'tracing-nested', 'stations-mlp', 'stations-c24'])('the dataflow graph of %s', (name) => {
  const jaxpr = staged(name);
  const truth = loadTruth<Truth>(name);
  const graph = buildDataflowGraph(jaxpr);

  it("has one node per binder and eqn of JAX's jaxpr", () => {
    const count = (kind: string): number => graph.nodes.filter((n) => n.kind === kind).length;
    expect(count('invar')).toBe(truth.invars);
    expect(count('constvar')).toBe(truth.constvars);
    expect(count('outvar')).toBe(truth.outvars);
    const eqnNodes = graph.nodes.filter((n) => n.kind === 'eqn');
    expect(eqnNodes.map((n) => n.label.split(' ')[0])).toEqual(truth.eqns.map((e) => e.primitive));
    expect(graph.omittedEqns).toBe(0);
  });

  it('lays every node out and draws every edge downwards', () => {
    const layout = layoutDataflowGraph(graph);
    const at = new Map(layout.nodes.map((n) => [n.id, n]));
    for (const n of layout.nodes) {
      expect(n.x).toBeGreaterThanOrEqual(0);
      expect(n.x).toBeLessThanOrEqual(layout.width);
      expect(n.y).toBeLessThanOrEqual(layout.height);
    }
    for (const e of layout.edges) {
      expect(e.points.length).toBeGreaterThanOrEqual(2);
      expect(at.get(e.from)?.y ?? 0).toBeLessThan(at.get(e.to)?.y ?? 0);
    }
  });
});

describe('edges follow the variables of the jaxpr', () => {
  it('stations-mlp: dot_general(a, b) -> tanh -> mul d d -> reduce_sum -> out', () => {
    // { lambda ; a b. let c = dot_general a b; d = tanh c; e = mul d d; f = reduce_sum e in (f,) }
    const graph = buildDataflowGraph(staged('stations-mlp'));
    expect(graph.edges.map((e) => `${e.from}->${e.to}:${e.label}`)).toEqual([
      'in:a->eqn:0:a',
      'in:b->eqn:0:b',
      'eqn:0->eqn:1:c',
      'eqn:1->eqn:2:d',
      'eqn:2->eqn:3:e',
      'eqn:3->out:0:f',
    ]);
  });

  it('tracing-where: the constvar goes straight to an outvar; literals stay in the eqn label', () => {
    const graph = buildDataflowGraph(staged('tracing-where'));
    expect(graph.edges.filter((e) => e.to.startsWith('out:')).map((e) => `${e.from}->${e.to}`)).toEqual([
      'eqn:4->out:0',
      'const:a->out:1',
    ]);
    expect(graph.nodes.find((n) => n.id === 'eqn:1')?.label).toBe('mul 2.0:f32[]');
    // an invar JAX named is labelled with its argument's name, its binder as JAX's text writes it below
    const jaxpr = staged('tracing-where');
    const at = jaxpr.invars.findIndex((v) => v.name === 'c');
    expect(graph.nodes.find((n) => n.id === 'in:c')?.label).toBe(jaxpr.arg_names?.[at]);
    expect(graph.nodes.find((n) => n.id === 'in:c')?.sublabel).toBe('c:~f32[]');
  });

  it('cuts big graphs and says how many eqns it left out', () => {
    const jaxpr = staged('tracing-nested');
    const graph = buildDataflowGraph(jaxpr, 3);
    expect(graph.omittedEqns).toBe(jaxpr.eqns.length - 3);
    const ids = new Set(graph.nodes.map((n) => n.id));
    for (const e of graph.edges) {
      expect(ids.has(e.from) && ids.has(e.to)).toBe(true);
    }
    // The outvars come from the last eqn (scan), which is left out: so are they.
    expect(graph.nodes.filter((n) => n.kind === 'outvar')).toEqual([]);
  });
});
