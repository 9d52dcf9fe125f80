/**
 * An expanded argument of many leaves in the dataflow graph, from a real capture
 * (`tracing-graph-params`: a dict of 26 parameters, 4 layers of 6 and 2 more): its leaves are
 * labelled with JAX's keypaths (`arg_names`, checked against `jax.tree_util`'s keypaths in the
 * truth), laid out in rows by parent keypath instead of one row, and expanding it scrolls to them.
 */
import { describe, expect, it } from 'vitest';
import { loadEvents, loadTruth } from '../../test-fixtures/load';
import type { JaxprView } from '../protocol';
import { layoutGraph } from './dataflow-graph';
import { lastOf } from './events';
import { groupTree, invarGroups, LEAF_LABEL_MAX, LEAF_ROW_MAX, LEAF_ROW_MIN, leafLabel, leafRows, visibleGraph } from './graph-groups';
import { anchorOf, scrollTarget } from './graph-scroll';

const jaxpr = lastOf(loadEvents('tracing-graph-params'), 'jaxpr_staged')?.jaxpr as JaxprView;
const truth = loadTruth<{ arg_keypaths: string[] }>('tracing-graph-params');
const tree = groupTree(jaxpr);

describe('leafLabel', () => {
  it('rows: one per parent keypath, short ones merged, long ones cut at LEAF_ROW_MAX', () => {
    const leaf = (name: string, i: number): { id: string; name: string } => ({ id: `in:v${i}`, name });
    // 30 parents of one leaf each: rows of LEAF_ROW_MIN.., not a column of 30
    const single = Array.from({ length: 30 }, (_, i) => leaf(`p['l${i}']['w']`, i));
    const edges = leafRows(new Map([['cl:arg:p', single]]));
    const below = new Set(edges.map((e) => e.to));
    const firstRow = single.filter((l) => !below.has(l.id));
    expect(firstRow.length).toBe(LEAF_ROW_MIN);
    // 20 leaves of one parent: 12, then 8
    const wide = Array.from({ length: 20 }, (_, i) => leaf(`p['w'][${i}]`, i));
    const cut = leafRows(new Map([['cl:arg:p', wide]]));
    expect(cut.map((e) => e.to)).toEqual(wide.slice(LEAF_ROW_MAX).map((l) => l.id));
  });

  it('writes dict keys as attributes, drops the argument name inside its box, cuts long paths on the left', () => {
    expect(leafLabel("params['layers'][3]['w_up']", true)).toBe('layers[3].w_up');
    expect(leafLabel("params['layers'][3]['w_up']", false)).toBe('params.layers[3].w_up');
    expect(leafLabel('tokens', false)).toBe('tokens');
    expect(leafLabel('state.opt[0]', true)).toBe('opt[0]');
    const long = leafLabel("params['encoder']['blocks'][11]['attention']['w_query']", true);
    expect(long.length).toBe(LEAF_LABEL_MAX);
    expect(long.startsWith('…')).toBe(true);
    expect(long.endsWith('[11].attention.w_query')).toBe(true);
  });
});

describe('the params of a real capture, expanded', () => {
  const open = visibleGraph(jaxpr, tree, new Set(['arg:params']));
  const leaves = open.nodes.filter((n) => n.kind === 'invar');

  it("labels each leaf with its keypath (JAX's arg_names = jax.tree_util's keypaths), in full in the title", () => {
    expect(jaxpr.arg_names).toEqual(truth.arg_keypaths);
    expect(leaves).toHaveLength(truth.arg_keypaths.length);
    leaves.forEach((n, i) => {
      const name = truth.arg_keypaths[i] as string;
      const v = jaxpr.invars[i];
      expect(n.id).toBe(`in:${v?.name}`);
      expect(n.title?.startsWith(`${name} (${v?.name}:`)).toBe(true);
      // in the params box the label drops `params`; `tokens` is a leaf of its own
      expect(n.label).toBe(name.startsWith('params') ? leafLabel(name, true) : name);
    });
    expect(leaves.map((n) => n.label)).toContain('layers[2].w_in');
    expect(leaves.find((n) => n.label === 'layers[2].w_in')?.sublabel).toMatch(/^[a-z]+:~?f32\[8,8\]$/);
  });

  it('lays the 26 leaves out in rows by parent keypath, not in one row', () => {
    const layout = layoutGraph(open);
    const placed = layout.nodes.filter((n) => n.parent === 'cl:arg:params');
    expect(placed).toHaveLength((invarGroups(jaxpr) ?? []).filter((g) => g?.id === 'arg:params').length);
    const rowOf = new Map<string, number>();
    for (const n of placed) rowOf.set(n.title?.split(' ')[0] ?? '', n.y);
    const rows = new Set(rowOf.values());
    // each parent keypath's leaves in one row (params['layers'][2]'s six); emb and head (two of
    // `params`, fewer than LEAF_ROW_MIN) share layers[0]'s row: 5 parents, 4 rows
    const parent = (k: string): string => k.replace(/\[[^\]]*\]$/, '');
    const keys = truth.arg_keypaths.filter((k) => k.startsWith('params'));
    for (const k of keys) expect(rowOf.get(k)).toBe(rowOf.get(keys.find((j) => parent(j) === parent(k)) ?? ''));
    expect(rowOf.get("params['emb']")).toBe(rowOf.get("params['layers'][0]['w_in']"));
    expect(rowOf.get("params['layers'][0]['w_in']")).not.toBe(rowOf.get("params['layers'][1]['w_in']"));
    expect(rows.size).toBe(4);
    for (const y of rows) expect([...rowOf.values()].filter((v) => v === y).length).toBeLessThanOrEqual(LEAF_ROW_MAX);
    // every eqn below the box
    const box = layout.clusters.find((c) => c.id === 'cl:arg:params');
    const bottom = (box?.y ?? 0) + (box?.height ?? 0) / 2;
    expect(layout.nodes.filter((n) => n.kind === 'eqn' || n.kind === 'group').every((n) => n.y > bottom)).toBe(true);
  });

  it('expanding the params node scrolls to the box: leaves in view, not blank space', () => {
    const view = { x: 0, y: 0, width: 807, height: 478 };
    const closed = visibleGraph(jaxpr, tree, new Set());
    const before = layoutGraph(closed);
    const anchor = anchorOf(before, view, 'grp:arg:params', () => []);
    const after = layoutGraph(open);
    const at = scrollTarget(after, view, anchor, open.nodeOfEqn);
    expect(at).not.toBeNull();
    const shown = { ...view, x: at?.x ?? 0, y: at?.y ?? 0 };
    const inView = after.nodes.filter(
      (n) => n.x - n.width / 2 >= shown.x && n.x + n.width / 2 <= shown.x + shown.width && n.y >= shown.y && n.y <= shown.y + shown.height,
    );
    expect(inView.filter((n) => n.parent === 'cl:arg:params').length).toBeGreaterThanOrEqual(6);
  });
});
