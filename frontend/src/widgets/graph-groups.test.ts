import { describe, expect, it } from 'vitest';
import type { EqnView, JaxprView, SourceLoc } from '../protocol';
import { ARG_STUB_FANOUT, allGroupIds, callPath, groupTree, visibleGraph } from './graph-groups';

const aval = { shape: [3], dtype: 'float32', weak_type: false, short: 'f32[3]' };
const v = (name: string) => ({ name, aval, literal: false });

function src(line: number, fn: string, callers: [number, string][] = []): SourceLoc {
  return {
    line,
    column: null,
    end_line: null,
    end_column: null,
    function: fn,
    callers: callers.length ? callers.map(([l, f]) => ({ line: l, function: f })) : null,
  };
}

function eqn(index: number, ins: string[], out: string, source: SourceLoc): EqnView {
  return { index, primitive: 'sin', params: {}, invars: ins.map(v), outvars: [v(out)], effects: [], source, text: `${out}:f32[3] = sin ${ins.join(' ')}`, inner_jaxprs: [] };
}

// f: line 11 an eqn; a loop at line 12 calls block twice; block has an eqn at line 6 and calls
// ln at line 7 (ln's eqns at line 3); line 13 an eqn. Callers on the wire: innermost first.
const IN_BLOCK: [number, string][] = [[12, 'f']];
const IN_LN: [number, string][] = [[7, 'block'], [12, 'f']];
const JAXPR: JaxprView = {
  text: '',
  constvars: [],
  invars: [v('a')],
  outvars: [v('i')],
  effects: [],
  arg_names: ['x'],
  total_eqns: null,
  eqns: [
    eqn(0, ['a'], 'b', src(11, 'f')),
    eqn(1, ['b'], 'c', src(6, 'block', IN_BLOCK)),
    eqn(2, ['c'], 'd', src(3, 'ln', IN_LN)),
    eqn(3, ['d'], 'e', src(3, 'ln', IN_LN)),
    eqn(4, ['e'], 'f', src(6, 'block', IN_BLOCK)),
    eqn(5, ['f'], 'g', src(3, 'ln', IN_LN)),
    eqn(6, ['g'], 'h', src(3, 'ln', IN_LN)),
    eqn(7, ['h', 'b'], 'i', src(13, 'f')),
  ],
};

describe('graph grouping from a jaxpr view', () => {
  it('reads the user calls of an eqn, outermost first', () => {
    expect(callPath(src(3, 'ln', IN_LN))).toEqual(['12>block', '7>ln']);
    expect(callPath(src(11, 'f'))).toEqual([]);
    expect(callPath(null)).toEqual([]);
  });

  it('groups eqns by the calls that made them, each call of ln a group of its own', () => {
    const tree = groupTree(JAXPR);
    expect(tree.map((t) => (t.kind === 'eqn' ? t.index : t.label))).toEqual([0, 'block (line 12)', 7]);
    const block = tree[1];
    if (block?.kind !== 'group') throw new Error('no group');
    expect([block.first, block.last]).toEqual([1, 6]);
    expect(block.items.map((t) => (t.kind === 'eqn' ? t.index : `${t.label} ${t.first}-${t.last}`))).toEqual([
      1,
      'ln (line 7) 2-3',
      4,
      'ln (line 7) 5-6',
    ]);
    expect(allGroupIds(tree)).toHaveLength(3);
  });

  it('draws a collapsed group as one node, with the edges that cross it', () => {
    const tree = groupTree(JAXPR);
    const collapsed = visibleGraph(JAXPR, tree, new Set());
    expect(collapsed.nodes.map((n) => n.id)).toEqual(['in:a', 'eqn:0', 'grp:g/12>block#0', 'eqn:7', 'out:0']);
    expect(collapsed.edges.map((e) => `${e.from}→${e.to}`).sort()).toEqual(
      ['eqn:0→eqn:7', 'eqn:0→grp:g/12>block#0', 'eqn:7→out:0', 'grp:g/12>block#0→eqn:7', 'in:a→eqn:0'].sort(),
    );
    expect(collapsed.nodeOfEqn.get(5)).toBe('grp:g/12>block#0');
    const all = visibleGraph(JAXPR, tree, new Set(allGroupIds(tree)));
    expect(all.nodes.filter((n) => n.kind === 'eqn')).toHaveLength(8);
    expect(all.edges).toHaveLength(10); // a→0, 0→1, 1→2, 2→3, 3→4, 4→5, 5→6, 6→7, 0→7, 7→out
  });

  it('groups a long run of one line (an unrolled Python loop in f) by its line', () => {
    const loop: JaxprView = {
      ...JAXPR,
      eqns: Array.from({ length: 20 }, (_, i) => eqn(i, [i === 0 ? 'a' : `v${i - 1}`], `v${i}`, src(5, 'f'))),
      outvars: [v('v19')],
    };
    const tree = groupTree(loop);
    expect(tree).toHaveLength(1);
    expect(tree[0]?.kind === 'group' && tree[0].label).toBe('line 5');
    const g = visibleGraph(loop, tree, new Set());
    expect(g.nodes.map((n) => n.kind)).toEqual(['invar', 'group', 'outvar']);
    expect(g.nodes[1]?.sublabel).toBe('20 eqns');
  });
});

describe('the arguments of many leaves', () => {
  it('are one node each, expandable, when the jaxpr has many invars', () => {
    const invars = Array.from({ length: 20 }, (_, i) => v(`p${i}`));
    const names = [...Array.from({ length: 19 }, (_, i) => `params['layers'][${i}]['w']`), 'x'];
    const jaxpr: JaxprView = {
      ...JAXPR,
      invars,
      arg_names: names,
      eqns: [eqn(0, ['p3', 'p19'], 'y', src(3, 'f'))],
      outvars: [v('y')],
    };
    const tree = groupTree(jaxpr);
    const g = visibleGraph(jaxpr, tree, new Set());
    expect(g.nodes.map((n) => n.id)).toEqual(['grp:arg:params', 'in:p19', 'eqn:0', 'out:0']);
    expect(g.nodes[0]?.sublabel).toBe('19 leaves');
    expect(g.edges.map((e) => `${e.from}→${e.to}`)).toEqual(['grp:arg:params→eqn:0', 'in:p19→eqn:0', 'eqn:0→out:0']);
    const open = visibleGraph(jaxpr, tree, new Set(['arg:params']));
    expect(open.nodes.filter((n) => n.kind === 'invar')).toHaveLength(20);
  });

  it('a collapsed argument that many nodes read is one node, marked on its readers instead of wired to them', () => {
    const invars = Array.from({ length: 20 }, (_, i) => v(`p${i}`));
    const names = [...Array.from({ length: 19 }, (_, i) => `params['layers'][${i}]['w']`), 'x'];
    const readers = ARG_STUB_FANOUT + 2;
    const jaxpr: JaxprView = {
      ...JAXPR,
      invars,
      arg_names: names,
      eqns: Array.from({ length: readers }, (_, i) => eqn(i, [`p${i}`, i === 0 ? 'p19' : `y${i - 1}`], `y${i}`, src(3, 'f'))),
      outvars: [v(`y${readers - 1}`)],
    };
    const g = visibleGraph(jaxpr, groupTree(jaxpr), new Set());
    expect(g.nodes.filter((n) => n.groupId === 'arg:params').map((n) => n.id)).toEqual(['grp:arg:params']);
    expect(g.edges.some((e) => e.from === 'grp:arg:params')).toBe(false);
    expect(g.nodes.filter((n) => n.reads?.includes('params')).map((n) => n.id)).toEqual(
      Array.from({ length: readers }, (_, i) => `eqn:${i}`),
    );
    // p19 (x) is wired as before.
    expect(g.edges.some((e) => e.from === 'in:p19' && e.to === 'eqn:0')).toBe(true);
  });
});
