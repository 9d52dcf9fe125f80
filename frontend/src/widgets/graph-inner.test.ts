import { describe, expect, it } from 'vitest';
import { loadEvents, loadTruth } from '../../test-fixtures/load';
import type { JaxprView } from '../protocol';
import { layoutDataflowGraph } from './dataflow-graph';
import { lastOf } from './events';
import { allGroupIds, groupTree, visibleEqnCount, visibleGraph, type EqnGroup, type GroupItem } from './graph-groups';
import { groupsToShow, searchGraph } from './graph-search';

interface TruthEqn {
  primitive: string;
  inner: { param: string; eqns: TruthEqn[] }[];
}

interface Truth {
  eqns: { primitive: string; line: number | null }[];
  inner: TruthEqn[];
}

function staged(name: string): JaxprView {
  const e = lastOf(loadEvents(name), 'jaxpr_staged');
  if (!e) throw new Error(`${name} has no jaxpr_staged`);
  return e.jaxpr;
}

function find(tree: readonly GroupItem[], label: string): EqnGroup | undefined {
  for (const it of tree) {
    if (it.kind !== 'group') continue;
    if (it.label === label) return it;
    const inner = find(it.items, label);
    if (inner) return inner;
  }
  return undefined;
}

function group(tree: readonly GroupItem[], label: string): EqnGroup {
  const found = find(tree, label);
  if (found === undefined) throw new Error(`no group ${label}`);
  return found;
}

/** The places (`3/jaxpr0/0`) of the inner eqns of `primitive`, read from JAX's own eqns
 * (`capture.py`: the jaxprs in each eqn's params), numbering tuples of one param in order. */
function truthPaths(truth: Truth, primitive: string): string[] {
  const out: string[] = [];
  const walk = (eqn: TruthEqn, path: string): void => {
    const seen = new Map<string, number>();
    for (const sub of eqn.inner) {
      const k = seen.get(sub.param) ?? 0;
      seen.set(sub.param, k + 1);
      sub.eqns.forEach((e, j) => {
        const at = `${path}/${sub.param}${k}/${j}`;
        if (e.primitive === primitive) out.push(at);
        walk(e, at);
      });
    }
  };
  truth.inner.forEach((e, i) => walk(e, String(i)));
  return out;
}

const edgeSet = (edges: readonly { from: string; to: string }[]): Set<string> => new Set(edges.map((e) => `${e.from}→${e.to}`));

// tracing-graph-layers (frontend/test-fixtures/snippets/graph_layers.py), as JAX prints it:
//   i = dot_general h e; j = gt i 0.0; k = mul 0.01 i; l = jit[name=_where jaxpr=_where] j i k   (eqns 0-3, layer 1)
//   ... (eqns 4-11: layers 2 and 3) ...; t = jit[name=_where ...] r q s                            (eqn 11)
//   u v = scan[jaxpr={ lambda ; w x. let y = sin x; z = reduce_sum y; ba = convert_element_type w;
//                      bb = add ba z; bc = cos x in (bb, bc) }] 0.0 t                              (eqn 12)
//   bd = reduce_sum v; be = add u bd                                                               (eqns 13, 14)
// where `_where` is `{ lambda ; a b c. let d = select_n a c b in (d,) }`.
describe('an eqn with inner jaxprs is a group that expands in place', () => {
  const jaxpr = staged('tracing-graph-layers');
  const tree = groupTree(jaxpr);
  const layers = group(tree, 'layer (line 17)');
  const head = group(tree, 'head (line 18)');

  it('keeps the call-site groups: the layer loop and the head', () => {
    expect([layers.first, layers.last]).toEqual([0, 11]);
    expect([head.first, head.last]).toEqual([12, 14]);
    expect(allGroupIds(tree)).toEqual([layers.id, head.id]);
  });

  it('a jit call (pjit): one node with an expander, then its inner eqns wired to the operands and results', () => {
    const shut = visibleGraph(jaxpr, tree, new Set([layers.id]));
    const jit = shut.nodes.find((n) => n.id === 'eqn:3');
    expect(jit?.label).toBe('jit _where');
    expect(jit?.expand).toBe('x:3');
    expect(shut.clusters.map((c) => c.id)).toEqual([`cl:${layers.id}`]);

    const open = visibleGraph(jaxpr, tree, new Set([layers.id, 'x:3']));
    expect(open.nodes.some((n) => n.id === 'eqn:3')).toBe(false);
    const select = open.nodes.find((n) => n.id === 'eqn:3/jaxpr0/0');
    expect(select).toMatchObject({ label: 'select_n', sublabel: 'f32[2,4]', eqnIndex: 3, path: '3/jaxpr0/0', parent: 'cl:x:3' });
    expect(open.clusters.find((c) => c.id === 'cl:x:3')).toMatchObject({ label: 'jit _where · eqn 3', groupId: 'x:3', parent: `cl:${layers.id}` });
    const edges = edgeSet(open.edges);
    // select_n a c b reads the jit's operands j (gt, eqn 1), i (dot_general, eqn 0), k (mul, eqn 2) ...
    for (const from of ['eqn:0', 'eqn:1', 'eqn:2']) expect(edges.has(`${from}→eqn:3/jaxpr0/0`)).toBe(true);
    // ... and its result l is what the next layer's dot_general (eqn 4) reads.
    expect(edges.has('eqn:3/jaxpr0/0→eqn:4')).toBe(true);
    expect(edges.has('eqn:3→eqn:4')).toBe(false);
  });

  it('a scan body: xs read from the operand, the carry and ys out to the readers of the results', () => {
    const g = visibleGraph(jaxpr, tree, new Set([layers.id, head.id, 'x:12']));
    const body = g.nodes.filter((n) => n.path?.startsWith('12/'));
    expect(body.map((n) => n.label)).toEqual(['sin', 'reduce_sum', 'convert_element_type', 'add', 'cos']);
    expect(body.every((n) => n.parent === 'cl:x:12')).toBe(true);
    expect(g.clusters.find((c) => c.id === 'cl:x:12')?.parent).toBe(`cl:${head.id}`);
    const edges = edgeSet(g.edges);
    // x (the xs, bound to the operand t that eqn 11 defines) is read by sin and cos.
    expect(edges.has('eqn:11→eqn:12/jaxpr0/0')).toBe(true);
    expect(edges.has('eqn:11→eqn:12/jaxpr0/4')).toBe(true);
    // u (the carry out, bb = add) is read by eqn 14, v (the ys, bc = cos) by eqn 13.
    expect(edges.has('eqn:12/jaxpr0/3→eqn:14')).toBe(true);
    expect(edges.has('eqn:12/jaxpr0/4→eqn:13')).toBe(true);
    // Inside the body: y = sin x -> z = reduce_sum y -> bb = add ba z.
    expect(edges.has('eqn:12/jaxpr0/0→eqn:12/jaxpr0/1')).toBe(true);
    expect(edges.has('eqn:12/jaxpr0/1→eqn:12/jaxpr0/3')).toBe(true);
    const layout = layoutDataflowGraph(g);
    const box = layout.clusters.find((c) => c.id === 'cl:x:12');
    if (box === undefined) throw new Error('no box');
    for (const n of layout.nodes.filter((m) => m.parent === 'cl:x:12')) {
      expect(Math.abs(n.x - box.x)).toBeLessThanOrEqual(box.width / 2);
      expect(Math.abs(n.y - box.y)).toBeLessThanOrEqual(box.height / 2);
    }
  });
});

// tracing-graph-inner (snippets/graph_inner.py): `z ba = while[body_jaxpr={ lambda ; bb bc bd. ...
// bf = reduce_sum bb ... in (be, bh) } body_nconsts=1 cond_jaxpr={ lambda ; bi bj bk. let bl =
// reduce_sum bi ... in (bn,) } cond_nconsts=1] o o 0.0 1.0` (eqn 1); a 3-way switch (eqn 7);
// `cz = custom_vjp_call[call_jaxpr={ lambda ; da. let  in (da,) }] n` (eqn 25).
describe('while, cond and an empty inner jaxpr', () => {
  const jaxpr = staged('tracing-graph-inner');
  const tree = groupTree(jaxpr);
  const everything = new Set([...allGroupIds(tree), 'x:1', 'x:7', 'x:25']);
  const g = visibleGraph(jaxpr, tree, everything);
  const edges = edgeSet(g.edges);
  /** the first eqn that reads the `k`-th result of eqn `index` */
  const readerOf = (index: number, k = 0): number => {
    const name = jaxpr.eqns[index]?.outvars[k]?.name;
    return jaxpr.eqns.find((e) => e.invars.some((v) => v.name === name))?.index ?? -1;
  };

  it("while: the cond and body jaxprs each take their consts from the eqn's operands", () => {
    expect(g.clusters.filter((c) => c.parent === 'cl:x:1').map((c) => c.label)).toEqual(['body_jaxpr', 'cond_jaxpr']);
    // bf = reduce_sum bb (body const o) and bl = reduce_sum bi (cond const o) both read the invar o.
    expect(edges.has('in:o→eqn:1/body_jaxpr0/1')).toBe(true);
    expect(edges.has('in:o→eqn:1/cond_jaxpr0/0')).toBe(true);
    // z is be (add, body eqn 0); the cond jaxpr's bool makes none of the results.
    expect(edges.has(`eqn:1/body_jaxpr0/0→eqn:${readerOf(1)}`)).toBe(true);
    expect([...edges].some((e) => e.startsWith('eqn:1/cond_jaxpr0/2→'))).toBe(false);
  });

  it('a switch: every branch defines the result its readers read', () => {
    const branches = g.clusters.filter((c) => c.parent === 'cl:x:7').map((c) => c.label);
    expect(branches).toEqual(['branches[0]', 'branches[1]', 'branches[2]']);
    const reader = readerOf(7);
    for (const k of [0, 1, 2]) expect(edges.has(`eqn:7/branches${k}/0→eqn:${reader}`)).toBe(true);
    expect(g.nodes.filter((n) => n.path?.startsWith('7/')).map((n) => n.label)).toEqual(['sin', 'cos', 'tanh']);
  });

  it('an inner jaxpr with no eqns stays one node, with nothing to expand', () => {
    expect(g.clusters.some((c) => c.id === 'cl:x:25')).toBe(false);
    expect(g.nodes.find((n) => n.id === 'eqn:25')?.expand).toBeUndefined();
    expect(edges.has(`eqn:25→eqn:${readerOf(25)}`)).toBe(true);
  });
});

describe('search', () => {
  const jaxpr = staged('tracing-graph-layers');
  const truth = loadTruth<Truth>('tracing-graph-layers');
  const tree = groupTree(jaxpr);
  const layers = group(tree, 'layer (line 17)');
  const head = group(tree, 'head (line 18)');

  it('by primitive: the eqns of every inner jaxpr, with the groups that hold them', () => {
    const hits = searchGraph(jaxpr, tree, 'select_n');
    expect(hits.map((h) => h.path)).toEqual(truthPaths(truth, 'select_n'));
    expect(hits.map((h) => h.path)).toEqual(['3/jaxpr0/0', '7/jaxpr0/0', '11/jaxpr0/0']);
    expect(hits[1]?.groups).toEqual([layers.id, 'x:7']);
    expect(hits[1]?.nodeId).toBe('eqn:7/jaxpr0/0');
    const sin = searchGraph(jaxpr, tree, 'sin');
    expect(sin.map((h) => h.path)).toEqual(truthPaths(truth, 'sin'));
    expect(sin[0]?.groups).toEqual([head.id, 'x:12']);
  });

  it("by line: the top-level eqns JAX recorded at that line", () => {
    const want = truth.eqns.flatMap((e, i) => (e.line === 7 ? [String(i)] : []));
    expect(searchGraph(jaxpr, tree, 'line 7').map((h) => h.path)).toEqual(want);
    expect(searchGraph(jaxpr, tree, 'line:7').map((h) => h.path)).toEqual(want);
    expect(searchGraph(jaxpr, tree, '12').map((h) => [h.path, h.groups])).toEqual([
      ['13', [head.id]],
      ['14', [head.id]],
    ]);
  });

  it('by variable: the eqn that defines it and those that read it; a part of a primitive', () => {
    // t = jit _where r q s (eqn 11); the scan (eqn 12) reads t.
    expect(searchGraph(jaxpr, tree, 't').map((h) => h.path)).toEqual(['11', '12']);
    // inside the scan body, bc = cos x
    expect(searchGraph(jaxpr, tree, 'bc').map((h) => h.path)).toEqual(['12/jaxpr0/4']);
    expect(searchGraph(jaxpr, tree, 'dot').map((h) => h.path)).toEqual(['0', '4', '8']);
    expect(searchGraph(jaxpr, tree, 'nothing_like_it')).toEqual([]);
  });

  it('expands the groups that hold the hits, and the graph then shows them', () => {
    const hits = searchGraph(jaxpr, tree, 'select_n');
    const all = groupsToShow(jaxpr, tree, hits, new Set(), 300);
    expect([...all].sort()).toEqual([layers.id, 'x:11', 'x:3', 'x:7'].sort());
    const g = visibleGraph(jaxpr, tree, all);
    const ids = new Set(g.nodes.map((n) => n.id));
    for (const h of hits) expect(ids.has(h.nodeId)).toBe(true);
    // Within a budget of drawn eqns: the first hit's groups, alone when what was open before
    // and they would draw more; then the next hits' while the budget holds (opening a `_where`
    // costs nothing: its one select_n takes the place of the jit's node).
    const layerEqns = visibleEqnCount(jaxpr, tree, new Set([layers.id, 'x:3']));
    const reset = groupsToShow(jaxpr, tree, hits, new Set([head.id, 'x:12']), layerEqns);
    expect([...reset].sort()).toEqual([layers.id, 'x:11', 'x:3', 'x:7'].sort());
    const sin = searchGraph(jaxpr, tree, 'sin');
    const stop = groupsToShow(jaxpr, tree, [hits[0], ...sin].filter((h) => h !== undefined), new Set(), layerEqns);
    expect([...stop].sort()).toEqual([layers.id, 'x:3'].sort());
    const both = groupsToShow(jaxpr, tree, [hits[0], ...sin].filter((h) => h !== undefined), new Set(), 300);
    expect([...both].sort()).toEqual([head.id, layers.id, 'x:12', 'x:3'].sort());
  });

  it('keeps what the user opened when it is over the budget already (expand all)', () => {
    const hits = searchGraph(jaxpr, tree, 'select_n');
    const everything = new Set(allGroupIds(tree));
    const budget = visibleEqnCount(jaxpr, tree, new Set([layers.id, 'x:3']));
    expect(visibleEqnCount(jaxpr, tree, everything)).toBeGreaterThan(budget);
    // "expand all", then a search: the first hit's call opens, nothing collapses
    const first = hits[0];
    expect(first?.groups.some((g) => !everything.has(g))).toBe(true);
    const shown = groupsToShow(jaxpr, tree, hits, everything, budget);
    expect(shown).toEqual(new Set([...everything, ...(first?.groups ?? [])]));
    const ids = new Set(visibleGraph(jaxpr, tree, shown, Infinity).nodes.map((n) => n.id));
    expect(first !== undefined && ids.has(first.nodeId)).toBe(true);
    // a hit not drawn yet still opens its groups within the budget (the old ones closed)
    const reset = groupsToShow(jaxpr, tree, hits, new Set([head.id, 'x:12']), budget);
    expect([...reset].sort()).toEqual([layers.id, 'x:11', 'x:3', 'x:7'].sort());
  });

  it('counts the eqns the graph draws', () => {
    for (const open of [[], [layers.id], [layers.id, 'x:3'], [layers.id, head.id, 'x:12'], [head.id, 'x:12', 'x:3']]) {
      const set = new Set(open);
      const drawn = visibleGraph(jaxpr, tree, set, Infinity).nodes.filter((n) => n.kind === 'eqn').length;
      expect(visibleEqnCount(jaxpr, tree, set)).toBe(drawn);
    }
  });
});

// tracing-nested (snippets/nested.py): `m n = scan[jaxpr={ lambda ; o p. let q = reduce_sum p;
// r = convert_element_type o; s = add r q in (s, o) }] 0.0 l` (eqn 6), the jaxpr's outvars (m, n).
describe('a result an inner jaxpr passes through', () => {
  it("is drawn, wired to what its operand reads: here a literal, so nothing", () => {
    const jaxpr = staged('tracing-nested');
    const g = visibleGraph(jaxpr, groupTree(jaxpr), new Set(['x:6']));
    expect(g.nodes.filter((n) => n.kind === 'outvar').map((n) => n.id)).toEqual(['out:0', 'out:1']);
    const into = (id: string): string[] => g.edges.filter((e) => e.to === id).map((e) => e.from);
    expect(into('out:0')).toEqual(['eqn:6/jaxpr0/2']);
    expect(into('out:1')).toEqual([]);
    // p, the xs, is l: eqn 5 (add d h).
    expect(into('eqn:6/jaxpr0/0')).toEqual(['eqn:5']);
  });
});
