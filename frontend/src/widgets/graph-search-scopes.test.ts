/**
 * The graph's search finds `jax.named_scope` groups (and the eqns in them) by name (issue 31,
 * item 2: "layer3" found nothing while that group was on screen). From real captures:
 * `tracing-graph-scopes` (three layers under `jax.named_scope(f'layer{i}')`, each with `attn`
 * and `mlp`, then a Flax linen module `Head`) and `tracing-graph-jit-scopes` (the same scopes
 * inside one `jax.jit`, a `scan` body's `step` scope inside `loop`), checked against JAX's own
 * name stacks in the truths (`str(eqn.source_info.name_stack)`, computed by `capture.py`).
 */
import { describe, expect, it } from 'vitest';
import { loadEvents, loadTruth } from '../../test-fixtures/load';
import type { JaxprView } from '../protocol';
import { lastOf } from './events';
import { groupTree, type EqnGroup, type GroupItem } from './graph-groups';
import { groupsToShow, searchGraph } from './graph-search';

interface TruthEqn {
  primitive: string;
  name_stack: string;
  inner?: { param: string; eqns: TruthEqn[] }[];
}

function jaxprOf(name: string): JaxprView {
  const staged = lastOf(loadEvents(name), 'jaxpr_staged');
  if (!staged) throw new Error(`${name} has no jaxpr_staged`);
  return staged.jaxpr;
}

const groups = (items: readonly GroupItem[]): EqnGroup[] => items.filter((it): it is EqnGroup => it.kind === 'group');
const scopesOf = (stack: string): string[] => (stack === '' ? [] : stack.split('/'));

describe('a search for a named scope, top level', () => {
  const JAXPR = jaxprOf('tracing-graph-scopes');
  const TRUTH = loadTruth<{ eqns: TruthEqn[] }>('tracing-graph-scopes');
  const TREE = groupTree(JAXPR);
  /** JAX's eqns (indices) whose name stack holds the scopes `path`, consecutively. */
  const truthIn = (...path: string[]): number[] =>
    TRUTH.eqns.flatMap((e, i) => {
      const s = scopesOf(e.name_stack);
      return s.some((_, k) => path.every((p, j) => s[k + j] === p)) ? [i] : [];
    });

  it('finds the eqns of the layer the group on screen is, and opens that group', () => {
    const layer1 = groups(TREE).find((g) => g.label === 'layer1') as EqnGroup;
    expect(layer1).toBeDefined();
    const hits = searchGraph(JAXPR, TREE, 'layer1');
    expect(hits.map((h) => h.eqnIndex)).toEqual(truthIn('layer1'));
    expect(hits.length).toBeGreaterThan(4);
    expect(hits.every((h) => h.groups[0] === layer1.id)).toBe(true);
    // Shown from the collapsed graph: the search opens layer1 (and nothing of the other layers).
    const shown = groupsToShow(JAXPR, TREE, hits, new Set(), 400);
    expect(shown.has(layer1.id)).toBe(true);
    const others = groups(TREE).filter((g) => g.label !== 'layer1').map((g) => g.id);
    expect(others.some((id) => shown.has(id))).toBe(false);
  });

  it('finds an inner scope in every layer, a path of scopes in one, case aside', () => {
    expect(searchGraph(JAXPR, TREE, 'attn').map((h) => h.eqnIndex)).toEqual(truthIn('attn'));
    expect(new Set(searchGraph(JAXPR, TREE, 'attn').map((h) => h.groups[0])).size).toBe(3);
    expect(searchGraph(JAXPR, TREE, 'layer2/mlp').map((h) => h.eqnIndex)).toEqual(truthIn('layer2', 'mlp'));
    expect(searchGraph(JAXPR, TREE, 'HEAD').map((h) => h.eqnIndex)).toEqual(truthIn('Head'));
  });

  it('still finds primitives and variables first, and a part of a scope name when nothing is exact', () => {
    const tanhs = TRUTH.eqns.flatMap((e, i) => (e.primitive === 'tanh' ? [i] : []));
    expect(searchGraph(JAXPR, TREE, 'tanh').map((h) => h.eqnIndex)).toEqual(tanhs);
    expect(searchGraph(JAXPR, TREE, 'layer').map((h) => h.eqnIndex)).toEqual(truthIn('layer0').concat(truthIn('layer1'), truthIn('layer2')));
    expect(searchGraph(JAXPR, TREE, 'no_such_scope')).toEqual([]);
  });
});

describe('a search for a named scope inside a jit', () => {
  const JAXPR = jaxprOf('tracing-graph-jit-scopes');
  const TRUTH = loadTruth<{ inner: TruthEqn[] }>('tracing-graph-jit-scopes');
  const MODEL = TRUTH.inner[0]?.inner?.[0]?.eqns ?? [];
  const TREE = groupTree(JAXPR);

  it("finds the inner eqns of a scope JAX recorded in the jit's body, and the groups that show them", () => {
    const want = MODEL.flatMap((e, j) => (scopesOf(e.name_stack)[0] === 'layer1' ? [`0/jaxpr0/${j}`] : []));
    expect(want.length).toBeGreaterThan(4);
    const hits = searchGraph(JAXPR, TREE, 'layer1');
    expect(hits.map((h) => h.path)).toEqual(want);
    // the jit is expanded, then the layer1 group inside it
    expect(hits.every((h) => h.groups.includes('x:0') && h.groups.some((g) => g.includes('ns:layer1')))).toBe(true);
  });

  it("finds a scan body's scope under the scope the scan was called in", () => {
    const scan = MODEL.findIndex((e) => e.primitive === 'scan');
    const body = MODEL[scan]?.inner?.[0]?.eqns ?? [];
    const steps = body.flatMap((e, k) => (scopesOf(e.name_stack).includes('step') ? [k] : []));
    expect(steps.length).toBeGreaterThan(0);
    const hits = searchGraph(JAXPR, TREE, 'loop/step');
    expect(hits.map((h) => h.path)).toEqual(steps.map((k) => `0/jaxpr0/${scan}/jaxpr0/${k}`));
  });
});
