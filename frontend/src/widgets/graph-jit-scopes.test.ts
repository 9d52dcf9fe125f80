/**
 * The groups inside an expanded inner jaxpr, from a real capture (`tracing-graph-jit-scopes`,
 * snippets/graph_jit_scopes.py: `f = jax.jit(model)`, whose jaxpr is one `jit` eqn; inside it
 * three layers under `jax.named_scope(f'layer{i}')`, each with `attn` and `mlp`, then a `scan`
 * under `loop` whose body has a `step` scope), checked against JAX's own eqns: the truth's
 * `inner` holds each inner eqn's primitive, `str(eqn.source_info.name_stack)` and snippet line,
 * computed by `capture.py` with `jax.make_jaxpr`.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadEvents, loadTruth } from '../../test-fixtures/load';
import type { EqnView, JaxprView } from '../protocol';
import { layoutDataflowGraph } from './dataflow-graph';
import { lastOf } from './events';
import { CHUNK, groupTree, innerTree, visibleEqnCount, visibleGraph, type EqnGroup, type GroupItem } from './graph-groups';
import { groupsToShow, searchGraph } from './graph-search';
import { innerOfTop, type ParsedInner } from './inner-jaxprs';

interface TruthEqn {
  primitive: string;
  name_stack: string;
  line: number | null;
  inner: { param: string; eqns: TruthEqn[] }[];
}

interface Truth {
  eqns: { primitive: string; name_stack: string }[];
  inner: TruthEqn[];
}

const staged = lastOf(loadEvents('tracing-graph-jit-scopes'), 'jaxpr_staged');
if (!staged) throw new Error('tracing-graph-jit-scopes has no jaxpr_staged');
const JAXPR: JaxprView = staged.jaxpr;
const TRUTH = loadTruth<Truth>('tracing-graph-jit-scopes');
/** JAX's eqns of the jitted model (the inner jaxpr of the one top-level `jit` eqn) */
const MODEL = TRUTH.inner[0]?.inner[0]?.eqns ?? [];
const JIT = JAXPR.eqns[0] as EqnView;
const SUB = (innerOfTop(JAXPR, JIT) ?? [])[0] as ParsedInner;
const TREE = groupTree(JAXPR);
const INNER = innerTree('0', SUB);
/** The snippet line that calls `steps` (the scan's caller in `model`), read from the snippet. */
const STEPS_LINE =
  readFileSync(new URL('../../test-fixtures/snippets/graph_jit_scopes.py', import.meta.url), 'utf8')
    .split('\n')
    .findIndex((l) => l.includes('= steps(x)')) + 1;
const STEPS = `steps (line ${STEPS_LINE})`;

const groups = (items: readonly GroupItem[]): EqnGroup[] => items.filter((it): it is EqnGroup => it.kind === 'group');
const byLabel = (items: readonly GroupItem[], label: string): EqnGroup => {
  const g = groups(items).find((x) => x.label === label);
  if (g === undefined) throw new Error(`no group ${label}`);
  return g;
};

/** Runs of consecutive eqns of `eqns` whose name stacks' `k`-th scope is the same: [scope, first, last]. */
function truthRuns(eqns: readonly TruthEqn[], k: number, from = 0, to = eqns.length - 1): [string, number, number][] {
  const runs: [string, number, number][] = [];
  for (let i = from; i <= to; i++) {
    const stack = eqns[i]?.name_stack ?? '';
    const scope = stack === '' ? undefined : stack.split('/')[k];
    if (scope === undefined) continue;
    const prev = runs[runs.length - 1];
    if (prev && prev[0] === scope && prev[2] === i - 1) prev[2] = i;
    else runs.push([scope, i, i]);
  }
  // a one-eqn scope is no group
  return runs.filter(([, a, b]) => b > a);
}

describe('a model under one jax.jit call, expanded in place', () => {
  it("carries the inner eqns' name stacks and lines as JAX keeps them: relative to the jit", () => {
    expect(TRUTH.eqns.map((e) => [e.primitive, e.name_stack])).toEqual([['jit', '']]);
    expect(JIT.inner_jaxprs[0]?.eqns.map((e) => e.name_stack ?? '')).toEqual(MODEL.map((e) => e.name_stack));
    expect(SUB.jaxpr.eqns.map((e) => [e.primitive, e.nameStack, e.line])).toEqual(MODEL.map((e) => [e.primitive, e.name_stack, e.line]));
    // the top level: the jit eqn alone, nothing to group
    expect(TREE).toEqual([{ kind: 'eqn', index: 0 }]);
  });

  it("groups the jit's eqns by JAX's scopes: one group per layer, unscoped eqns alone", () => {
    const scopes = groups(INNER).filter((g) => g.origin === 'scope');
    expect(scopes.map((g) => [g.label, g.first, g.last])).toEqual(truthRuns(MODEL, 0));
    expect(scopes.map((g) => g.label)).toEqual(['layer0', 'layer1', 'layer2']);
    expect(scopes.every((g) => g.id.startsWith('i:0/jaxpr0/') && g.id.includes('/ns:'))).toBe(true);
    // the scan (its `loop` scope holds one eqn: no scope group) in the call of `steps`
    const scan = MODEL.findIndex((e) => e.primitive === 'scan');
    expect(groups(INNER).filter((g) => g.origin !== 'scope').map((g) => [g.label, g.first, g.last])).toEqual([[STEPS, scan, scan]]);
    // `x * 2.0` and the final sums stand alone
    const alone = INNER.filter((it) => it.kind === 'eqn').map((it) => (it.kind === 'eqn' ? it.index : -1));
    expect(alone).toEqual(MODEL.flatMap((e, i) => (e.name_stack === '' ? [i] : [])));
    // inside a layer: its attn and mlp scopes, its own residual add; in attn the call of norm
    const layer1 = byLabel(INNER, 'layer1');
    expect(groups(layer1.items).map((g) => [g.label, g.first, g.last])).toEqual(truthRuns(MODEL, 1, layer1.first, layer1.last));
    const own = MODEL.flatMap((e, i) => (e.name_stack === 'layer1' ? [i] : []));
    expect(layer1.items.filter((it) => it.kind === 'eqn').map((it) => (it.kind === 'eqn' ? it.index : -1))).toEqual(own);
    const attn = byLabel(layer1.items, 'attn');
    const norm = groups(attn.items);
    expect(norm.map((g) => g.label)).toEqual(['norm (line 11)']);
    const normLines = MODEL.slice(norm[0]?.first, (norm[0]?.last ?? 0) + 1).map((e) => e.line);
    expect(new Set(normLines)).toEqual(new Set([6]));
  });

  it('draws the expanded jit as a box of collapsed layers, wired in order', () => {
    const shut = visibleGraph(JAXPR, TREE, new Set());
    expect(shut.nodes.find((n) => n.id === 'eqn:0')?.expand).toBe('x:0');
    const g = visibleGraph(JAXPR, TREE, new Set(['x:0']));
    const inBox = g.nodes.filter((n) => n.parent === 'cl:x:0');
    expect(inBox.filter((n) => n.kind === 'group').map((n) => [n.label, n.sublabel])).toEqual([
      ...truthRuns(MODEL, 0).map(([s, a, b]) => [`▸ ${s}`, `${b - a + 1} eqns`]),
      [`▸ ${STEPS}`, '1 eqns'],
    ]);
    expect(inBox.filter((n) => n.kind === 'eqn').map((n) => n.path)).toEqual(
      INNER.flatMap((it) => (it.kind === 'eqn' ? [`0/jaxpr0/${it.index}`] : [])),
    );
    const id = (label: string): string => `grp:${byLabel(INNER, label).id}`;
    const edges = new Set(g.edges.map((e) => `${e.from}→${e.to}`));
    // mul (x * 2.0) → layer0 → layer1 → layer2 → the scan
    expect(edges.has(`eqn:0/jaxpr0/0→${id('layer0')}`)).toBe(true);
    expect(edges.has(`${id('layer0')}→${id('layer1')}`)).toBe(true);
    expect(edges.has(`${id('layer1')}→${id('layer2')}`)).toBe(true);
    expect(edges.has(`${id('layer2')}→${id(STEPS)}`)).toBe(true);
    expect(g.nodes.filter((n) => n.kind === 'eqn')).toHaveLength(visibleEqnCount(JAXPR, TREE, new Set(['x:0'])));
  });

  it('expands a layer into its scopes and an eqn that links to its own source line', () => {
    const layer1 = byLabel(INNER, 'layer1');
    const attn = byLabel(layer1.items, 'attn');
    const norm = byLabel(attn.items, 'norm (line 11)');
    const open = new Set(['x:0', layer1.id, attn.id, norm.id]);
    const g = visibleGraph(JAXPR, TREE, open);
    expect(g.clusters.find((c) => c.id === `cl:${layer1.id}`)).toMatchObject({ label: 'layer1', parent: 'cl:x:0' });
    expect(g.clusters.find((c) => c.id === `cl:${attn.id}`)).toMatchObject({ label: 'attn', parent: `cl:${layer1.id}` });
    const tanh = MODEL.findIndex((e, i) => i >= layer1.first && e.primitive === 'tanh');
    const node = g.nodes.find((n) => n.path === `0/jaxpr0/${tanh}`);
    expect(node).toMatchObject({ kind: 'eqn', label: 'tanh', eqnIndex: 0, line: MODEL[tanh]?.line, parent: `cl:${attn.id}` });
    // the nested `jit _std` inside norm is still an eqn to expand
    const std = MODEL.findIndex((e, i) => i >= layer1.first && e.primitive === 'jit');
    expect(g.nodes.find((n) => n.path === `0/jaxpr0/${std}`)?.expand).toBe(`x:0/jaxpr0/${std}`);
    // laid out: every node inside the boxes that hold it
    const layout = layoutDataflowGraph(g);
    const box = new Map(layout.clusters.map((c) => [c.id, c]));
    for (const n of layout.nodes) {
      for (let at: string | null | undefined = n.parent; at != null; at = box.get(at)?.parent) {
        const c = box.get(at);
        if (c === undefined) throw new Error(`no box ${at}`);
        expect(Math.abs(n.x - c.x)).toBeLessThanOrEqual(c.width / 2);
        expect(Math.abs(n.y - c.y)).toBeLessThanOrEqual(c.height / 2);
      }
    }
    const steps = byLabel(INNER, STEPS).id;
    for (const set of [open, new Set(['x:0', layer1.id]), new Set(['x:0', steps, 'x:0/jaxpr0/34']), new Set([...open, `x:0/jaxpr0/${std}`])]) {
      expect(visibleEqnCount(JAXPR, TREE, set)).toBe(visibleGraph(JAXPR, TREE, set, Infinity).nodes.filter((n) => n.kind === 'eqn').length);
    }
  });

  it("groups a scan body inside the jit by its own name stacks (the body's `step`)", () => {
    const scan = MODEL.findIndex((e) => e.primitive === 'scan');
    const body = MODEL[scan]?.inner[0]?.eqns ?? [];
    const sub = (innerOfTop(JAXPR, JIT) ?? [])[0]?.jaxpr.eqns[scan]?.inner[0] as ParsedInner;
    const tree = innerTree(`0/jaxpr0/${scan}`, sub);
    expect(groups(tree).map((g) => [g.label, g.first, g.last])).toEqual(truthRuns(body, 0));
    expect(groups(tree).map((g) => g.label)).toEqual(['step']);
    const g = visibleGraph(JAXPR, TREE, new Set(['x:0', byLabel(INNER, STEPS).id, `x:0/jaxpr0/${scan}`]));
    const step = g.nodes.find((n) => n.groupId === groups(tree)[0]?.id);
    expect(step).toMatchObject({ kind: 'group', label: '▸ step', parent: `cl:x:0/jaxpr0/${scan}` });
  });

  it('finds eqns inside the groups of the jit, and opens what holds them', () => {
    const hits = searchGraph(JAXPR, TREE, 'tanh');
    const tanhs = MODEL.flatMap((e, i) => (e.primitive === 'tanh' ? [`0/jaxpr0/${i}`] : []));
    expect(hits.map((h) => h.path)).toEqual(tanhs);
    const layers = groups(INNER).filter((g) => g.origin === 'scope').map((g) => g.id);
    expect(hits.map((h) => h.groups.slice(0, 2))).toEqual(layers.map((l) => ['x:0', l]));
    expect(hits.every((h) => h.groups[2]?.endsWith('/ns:attn#0'))).toBe(true);
    const show = groupsToShow(JAXPR, TREE, hits, new Set(), 400);
    const ids = new Set(visibleGraph(JAXPR, TREE, show).nodes.map((n) => n.id));
    for (const h of hits) expect(ids.has(h.nodeId)).toBe(true);
    // inside the scan's body, inside the jit: the groups of both inner jaxprs
    const sin = searchGraph(JAXPR, TREE, 'sin');
    const steps = byLabel(INNER, STEPS).id;
    expect(sin.map((h) => h.groups)).toEqual([['x:0', steps, 'x:0/jaxpr0/34', 'i:0/jaxpr0/34/jaxpr0/ns:step#0']]);
    expect(new Set(visibleGraph(JAXPR, TREE, new Set(sin[0]?.groups)).nodes.map((n) => n.id)).has(sin[0]?.nodeId ?? '')).toBe(true);
  });
});

describe('a long inner jaxpr', () => {
  it('is split into chunks of CHUNK eqns, as the top level is', () => {
    // the jit's eqns, its `x * 2.0` repeated as a chain of one line (an unrolled loop in the jitted function)
    const model = JIT.inner_jaxprs[0]?.eqns[0] as EqnView;
    const aval = model.outvars[0]?.aval as EqnView['outvars'][number]['aval'];
    const v = (name: string) => ({ name, aval, literal: false });
    const n = 2 * CHUNK + 3;
    const eqns: EqnView[] = Array.from({ length: n }, (_, i) => ({ ...model, index: i, invars: [v(i === 0 ? 'x' : `v${i - 1}`)], outvars: [v(`v${i}`)] }));
    const view = { ...(JIT.inner_jaxprs[0] as EqnView['inner_jaxprs'][number]), invars: [v('x')], outvars: [v(`v${n - 1}`)], eqns };
    const jit: EqnView = { ...JIT, inner_jaxprs: [view] };
    const jaxpr: JaxprView = { ...JAXPR, eqns: [jit] };
    const tree = innerTree('0', (innerOfTop(jaxpr, jit) ?? [])[0] as ParsedInner);
    expect(tree).toHaveLength(1);
    const line = tree[0] as EqnGroup;
    expect(line.label).toBe(`line ${model.source?.line}`);
    expect(groups(line.items).map((g) => [g.label, g.first, g.last])).toEqual([
      ['eqns 0–499', 0, 499],
      ['eqns 500–999', 500, 999],
      ['eqns 1,000–1,002', 1000, 1002],
    ]);
    const open = new Set(['x:0', line.id, (groups(line.items)[1] as EqnGroup).id]);
    const g = visibleGraph(jaxpr, groupTree(jaxpr), open);
    expect(g.nodes.filter((x) => x.kind === 'eqn')).toHaveLength(CHUNK);
    expect(g.nodes.filter((x) => x.kind === 'group').map((x) => x.label)).toEqual(['▸ eqns 0–499', '▸ eqns 1,000–1,002']);
  });
});
