/**
 * The dataflow graph's name-scope groups, from a real capture (`tracing-graph-scopes`: three
 * layers under `jax.named_scope(f'layer{i}')`, each with `attn` and `mlp` scopes, then a Flax
 * linen module, which enters a scope per module call), checked against JAX's own name stacks
 * (`str(eqn.source_info.name_stack)` in the truth, computed by `capture.py` with JAX); and the
 * layered layout and the windowing that let thousands of visible eqns draw.
 */
import { describe, expect, it } from 'vitest';
import { loadEvents, loadTruth } from '../../test-fixtures/load';
import type { EqnView, JaxprView } from '../protocol';
import { DAGRE_MAX_NODES, layoutGraph } from './dataflow-graph';
import { lastOf } from './events';
import { allGroupIds, CHUNK, groupTree, scopePath, visibleGraph, type EqnGroup, type GroupItem } from './graph-groups';
import { layoutLayered } from './graph-layered';
import { searchGraph } from './graph-search';
import { drawWindow, inView, type ViewRect } from './graph-view';

interface Truth {
  eqns: { primitive: string; line: number | null; name_stack: string }[];
}

const staged = lastOf(loadEvents('tracing-graph-scopes'), 'jaxpr_staged');
if (!staged) throw new Error('tracing-graph-scopes has no jaxpr_staged');
const JAXPR: JaxprView = staged.jaxpr;
const TRUTH = loadTruth<Truth>('tracing-graph-scopes');

const label = (it: GroupItem): string | number => (it.kind === 'eqn' ? it.index : it.label);
const groups = (items: readonly GroupItem[]): EqnGroup[] => items.filter((it): it is EqnGroup => it.kind === 'group');

/** Runs of consecutive eqns with the same first scope in JAX's name stacks: [scope, first, last]. */
function truthRuns(depthOf: (stack: string) => string | undefined, from = 0, to = TRUTH.eqns.length - 1): [string, number, number][] {
  const runs: [string, number, number][] = [];
  for (let i = from; i <= to; i++) {
    const scope = depthOf(TRUTH.eqns[i]?.name_stack ?? '');
    if (scope === undefined) continue;
    const prev = runs[runs.length - 1];
    if (prev && prev[0] === scope && prev[2] === i - 1) prev[2] = i;
    else runs.push([scope, i, i]);
  }
  return runs;
}
const part = (k: number) => (stack: string) => (stack === '' ? undefined : stack.split('/')[k]);

describe('name-scope groups from a real capture', () => {
  it("carries JAX's name stack of every eqn on the wire (left off when empty)", () => {
    expect(JAXPR.eqns).toHaveLength(TRUTH.eqns.length);
    expect(JAXPR.eqns.map((e) => e.name_stack ?? '')).toEqual(TRUTH.eqns.map((e) => e.name_stack));
    expect(TRUTH.eqns.some((e) => e.name_stack === '')).toBe(true);
  });

  it('reads a name stack as its scopes, transforms of nothing left out', () => {
    expect(scopePath('layer0/attn')).toEqual(['layer0', 'attn']);
    expect(scopePath('transpose(jvp(layer3))/attn')).toEqual(['transpose(jvp(layer3))', 'attn']);
    expect(scopePath('jvp()')).toEqual([]);
    expect(scopePath('transpose(jvp())')).toEqual([]);
    expect(scopePath(undefined)).toEqual([]);
  });

  it('opens on one group per layer and per linen module, as JAX scoped them', () => {
    const tree = groupTree(JAXPR);
    const top = groups(tree);
    expect(top.map((g) => [g.label, g.first, g.last])).toEqual(truthRuns(part(0)));
    expect(top.map((g) => g.label)).toEqual(['layer0', 'layer1', 'layer2', 'Head']);
    expect(top.every((g) => g.origin === 'scope')).toBe(true);
    // The unscoped eqns (`x * 2.0` before the layers, the final sum) stand alone.
    const unscoped = TRUTH.eqns.flatMap((e, i) => (e.name_stack === '' ? [i] : []));
    expect(tree.filter((it) => it.kind === 'eqn').map(label)).toEqual(unscoped);
  });

  it('nests the inner scopes, then the user calls inside them', () => {
    const tree = groupTree(JAXPR);
    const layer1 = groups(tree).find((g) => g.label === 'layer1') as EqnGroup;
    const inner = truthRuns(part(1), layer1.first, layer1.last);
    expect(groups(layer1.items).map((g) => [g.label, g.first, g.last])).toEqual(inner);
    // layer1's residual add is in the layer's scope only: an eqn of the box, no call group around it.
    const own = TRUTH.eqns.flatMap((e, i) => (e.name_stack === 'layer1' ? [i] : []));
    expect(layer1.items.filter((it) => it.kind === 'eqn').map(label)).toEqual(own);
    // Inside `attn`, the call of `mix` (all of attn is called through `block`, left out), and
    // in it the call of `norm`, the einsum's eqn (its own one-eqn scope, the spec, is no group)
    // and the call of the nested `scale`.
    const attn = groups(layer1.items).find((g) => g.label === 'attn') as EqnGroup;
    expect(groups(attn.items).map((g) => g.label)).toEqual([expect.stringMatching(/^mix \(line \d+\)$/)]);
    const mix = groups(attn.items)[0] as EqnGroup;
    const einsum = TRUTH.eqns.findIndex((e, i) => i >= mix.first && e.name_stack.endsWith('/ij,jk->ki'));
    expect(einsum).toBeGreaterThan(mix.first);
    expect(mix.items.map(label)).toContain(einsum);
    expect(groups(mix.items).map((g) => g.label)).toEqual([
      expect.stringMatching(/^norm \(line \d+\)$/),
      expect.stringMatching(/^mix\.<locals>\.scale \(line \d+\)$/),
    ]);
    const norm = groups(mix.items)[0] as EqnGroup;
    const lines = TRUTH.eqns.slice(norm.first, norm.last + 1).map((e) => e.line);
    expect(new Set(lines).size).toBe(1);
    // The linen module's scopes: its two Dense layers.
    const head = groups(tree).find((g) => g.label === 'Head') as EqnGroup;
    expect(groups(head.items).map((g) => g.label).sort()).toEqual(['Dense_0', 'Dense_1']);
  });

  it('draws the collapsed layers as one node each, wired in order', () => {
    const tree = groupTree(JAXPR);
    const g = visibleGraph(JAXPR, tree, new Set());
    const nodes = g.nodes.filter((n) => n.kind === 'group').map((n) => n.label);
    expect(nodes).toEqual(['▸ layer0', '▸ layer1', '▸ layer2', '▸ Head']);
    const id = (name: string) => g.nodes.find((n) => n.label === `▸ ${name}`)?.id;
    const edges = new Set(g.edges.map((e) => `${e.from}→${e.to}`));
    expect(edges.has(`${id('layer0')}→${id('layer1')}`)).toBe(true);
    expect(edges.has(`${id('layer1')}→${id('layer2')}`)).toBe(true);
    expect(edges.has(`${id('layer2')}→${id('Head')}`)).toBe(true);
    // Expanding layer1 puts a box labelled layer1 around its scopes' groups.
    const layer1 = groups(tree).find((x) => x.label === 'layer1') as EqnGroup;
    const open = visibleGraph(JAXPR, tree, new Set([layer1.id]));
    expect(open.clusters.map((c) => c.label)).toEqual(['layer1']);
    expect(open.nodes.filter((n) => n.parent === `cl:${layer1.id}` && n.kind === 'group').map((n) => n.label)).toEqual(['▸ attn', '▸ mlp']);
  });

  it('finds an eqn inside a layer and names the scopes that hold it', () => {
    const tree = groupTree(JAXPR);
    const hits = searchGraph(JAXPR, tree, 'tanh');
    const tanhs = TRUTH.eqns.flatMap((e, i) => (e.primitive === 'tanh' ? [i] : []));
    expect(hits.map((h) => h.eqnIndex)).toEqual(tanhs);
    const layerIds = groups(tree).slice(0, 3).map((g) => g.id);
    expect(hits.map((h) => h.groups[0])).toEqual(layerIds);
    expect(hits.every((h) => h.groups[1]?.includes('ns:attn'))).toBe(true);
  });
});

// A long chain of eqns of one line (an unrolled loop), built from a real eqn of the capture.
function chain(n: number): JaxprView {
  const model = JAXPR.eqns.find((e) => e.primitive === 'tanh') as EqnView;
  const aval = model.outvars[0]?.aval as EqnView['outvars'][number]['aval'];
  const v = (name: string) => ({ name, aval, literal: false });
  const eqns: EqnView[] = Array.from({ length: n }, (_, i) => ({
    ...model,
    index: i,
    name_stack: '',
    invars: [v(i === 0 ? 'x' : `v${i - 1}`)],
    outvars: [v(`v${i}`)],
    source: model.source ? { ...model.source, callers: null, line: 5 } : null,
  }));
  return { ...JAXPR, constvars: [], invars: [v('x')], arg_names: ['x'], outvars: [v(`v${n - 1}`)], eqns };
}

describe('a graph of thousands of visible eqns', () => {
  const N = 3 * CHUNK + 7;
  const loop = chain(N);
  const tree = groupTree(loop);

  it('splits a long run of one line into chunks of CHUNK eqns', () => {
    expect(tree).toHaveLength(1);
    const line = tree[0] as EqnGroup;
    expect(line.label).toBe('line 5');
    expect(groups(line.items).map((g) => [g.label, g.first, g.last])).toEqual([
      ['eqns 0–499', 0, 499],
      ['eqns 500–999', 500, 999],
      ['eqns 1,000–1,499', 1000, 1499],
      ['eqns 1,500–1,506', 1500, 1506],
    ]);
    expect(new Set(allGroupIds(tree)).size).toBe(5);
  });

  it("lays out every visible eqn past dagre's size, edges downward, rows apart, boxes around their nodes", () => {
    const g = visibleGraph(loop, tree, new Set(allGroupIds(tree)));
    expect(g.nodes.filter((n) => n.kind === 'eqn')).toHaveLength(N);
    expect(g.omittedEqns).toBe(0);
    expect(g.nodes.length).toBeGreaterThan(DAGRE_MAX_NODES);
    const t0 = performance.now();
    const layout = layoutGraph(g);
    expect(performance.now() - t0).toBeLessThan(2000);
    const at = new Map(layout.nodes.map((n) => [n.id, n]));
    for (const e of layout.edges) expect((at.get(e.to)?.y ?? 0) > (at.get(e.from)?.y ?? 0)).toBe(true);
    for (const c of layout.clusters) {
      for (const n of layout.nodes.filter((x) => x.parent === c.id)) {
        expect(n.x - n.width / 2).toBeGreaterThanOrEqual(c.x - c.width / 2);
        expect(n.y + n.height / 2).toBeLessThanOrEqual(c.y + c.height / 2);
      }
    }
    // Sibling chunk boxes do not overlap: each has rows of its own.
    const boxes = layout.clusters.filter((c) => c.label.startsWith('eqns ')).sort((a, b) => a.y - b.y);
    for (let i = 1; i < boxes.length; i++) {
      const a = boxes[i - 1];
      const b = boxes[i];
      if (a && b) expect(b.y - b.height / 2).toBeGreaterThan(a.y + a.height / 2);
    }
    expect(layout.height).toBeGreaterThan(N * 38);
  });

  it('puts only what meets the view in the DOM, wherever the view is', () => {
    const g = visibleGraph(loop, tree, new Set(allGroupIds(tree)));
    const layout = layoutLayered(g);
    for (const y of [0, layout.height / 2, layout.height - 600]) {
      const view = { x: 0, y, width: 1400, height: 600 };
      const shown = inView(layout, view, 300);
      expect(shown.nodes.length).toBeGreaterThan(5);
      expect(shown.nodes.length).toBeLessThan(40);
      // Exactly the nodes that meet the view and its margin, edges with an end among them or crossing.
      const expected = layout.nodes.filter((n) => n.y + n.height / 2 >= y - 300 && n.y - n.height / 2 <= y + 900);
      expect(shown.nodes.map((n) => n.id)).toEqual(expected.map((n) => n.id));
      const ids = new Set(shown.nodes.map((n) => n.id));
      for (const e of shown.edges) expect(ids.has(e.from) || ids.has(e.to)).toBe(true);
      expect(shown.edges.length).toBeGreaterThanOrEqual(shown.nodes.length - 2);
      // The chunk box the view is in is drawn; the others are not.
      expect(shown.clusters.length).toBeLessThanOrEqual(3);
    }
  });

  it('fills the DOM anew only every few frames of a pan, and what meets the view is always drawn', () => {
    const g = visibleGraph(loop, tree, new Set(allGroupIds(tree)));
    const layout = layoutLayered(g);
    const margin = 300;
    let drawnFor: ViewRect | null = null;
    let shown = inView(layout, { x: 0, y: 0, width: 0, height: 0 }, margin);
    let refills = 0;
    let frames = 0;
    // The bench's pan (bench/graph_scale.py): 40 units down a frame, 200 frames.
    for (let y = 0; y + 600 <= layout.height && frames < 200; y += 40, frames++) {
      const view = { x: 0, y, width: 1400, height: 600 };
      const want = drawWindow(drawnFor, view, margin);
      if (want !== drawnFor) {
        drawnFor = want;
        shown = inView(layout, want, margin);
        refills++;
      }
      // Every node that meets the view itself (no margin) is among those drawn.
      const drawnIds = new Set(shown.nodes.map((n) => n.id));
      for (const n of inView(layout, view, 0).nodes) expect(drawnIds.has(n.id)).toBe(true);
    }
    expect(frames).toBeGreaterThan(20);
    // One refill per 150 units (half the margin) of pan, about: 40-unit steps refill every 4th frame.
    expect(refills).toBeLessThanOrEqual(Math.ceil(frames / 3) + 1);
    expect(refills).toBeGreaterThan(1);
    // A new size is drawn for at once.
    const resized = { x: 0, y: 0, width: 700, height: 600 };
    expect(drawWindow({ x: 0, y: 0, width: 1400, height: 600 }, resized, margin)).toBe(resized);
  });
});
