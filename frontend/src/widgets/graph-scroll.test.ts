import { describe, expect, it } from 'vitest';
import { loadEvents } from '../../test-fixtures/load';
import type { JaxprView } from '../protocol';
import type { GraphLayout, PlacedCluster, PlacedNode } from './dataflow-graph';
import { layoutGraph } from './dataflow-graph';
import { lastOf } from './events';
import { allGroupIds, groupTree, invarGroups, visibleGraph } from './graph-groups';
import { anchorOf, scrollTarget } from './graph-scroll';
import type { ViewRect } from './graph-view';

const node = (id: string, kind: PlacedNode['kind'], x: number, y: number, parent?: string): PlacedNode => ({
  id,
  kind,
  label: id,
  sublabel: '',
  eqnIndex: kind === 'eqn' ? Number(id.split(':')[1]) : null,
  line: null,
  x,
  y,
  width: 80,
  height: 36,
  ...(parent === undefined ? {} : { parent }),
});

const box = (id: string, x: number, y: number, width: number, height: number, parent: string | null = null): PlacedCluster => ({
  id,
  label: id,
  groupId: id.slice(3),
  parent,
  eqnIndex: null,
  x,
  y,
  width,
  height,
});

/** Whether node `n` lies wholly in `view` (layout units). */
const shows = (view: ViewRect, n: PlacedNode): boolean =>
  n.x - n.width / 2 >= view.x && n.x + n.width / 2 <= view.x + view.width && n.y - n.height / 2 >= view.y && n.y + n.height / 2 <= view.y + view.height;

const VIEW = { x: 0, y: 0, width: 807, height: 478 };

/**
 * The layout "expand all" made of examples/real/gpt_stack.py (the review's numbers): a row of 148
 * parameters across the top, 16,065 units wide, and the 12 layers' eqns in one column near
 * x = 7,600, 62,650 units tall. The view was at (0, 0), on the left end of the parameter row.
 */
function gptExpanded(): GraphLayout {
  const params = Array.from({ length: 148 }, (_, i) => node(`in:p${i}`, 'invar', 40 + i * 108, 54, 'cl:arg:params'));
  const eqns = Array.from({ length: 928 }, (_, i) => node(`eqn:${i}`, 'eqn', 7600, 200 + i * 67, `cl:layer${Math.floor(i / 78)}`));
  const layers = Array.from({ length: 12 }, (_, k) => box(`cl:layer${k}`, 7600, 200 + (k * 78 + 38.5) * 67, 300, 78 * 67));
  return {
    nodes: [...params, ...eqns],
    edges: [],
    clusters: [box('cl:arg:params', 8032, 54, 16_000, 80), ...layers],
    width: 16_065,
    height: 62_650,
  };
}

describe('the scroll after a new layout', () => {
  it('"expand all" of the GPT stack: the group the user looked at is found again as its box, through its first eqn', () => {
    const layout = gptExpanded();
    // before: the collapsed graph showed the group node layer0 in view
    const at = scrollTarget(layout, VIEW, { ids: ['grp:layer0'], eqns: [] }, new Map());
    expect(at).not.toBeNull();
    const view = { ...VIEW, ...at! };
    // the view left (0, 0), where no eqn is, and shows the first eqn of layer0
    expect(layout.nodes.filter((n) => n.kind === 'eqn' && shows(VIEW, n))).toEqual([]);
    const first = layout.nodes.find((n) => n.id === 'eqn:0')!;
    expect(shows(view, first)).toBe(true);
    // centred across on it; it was already within the view's height, so no scroll down
    expect(view.x).toBeCloseTo(7600 - VIEW.width / 2);
    expect(view.y).toBe(0);
    // a group further down: its top a quarter down the view
    const layer5 = layout.nodes.find((n) => n.id === 'eqn:390')!;
    const down = { ...VIEW, ...scrollTarget(layout, VIEW, { ids: ['grp:layer5'], eqns: [] }, new Map())! };
    expect(down.y).toBeCloseTo(layer5.y - layer5.height / 2 - VIEW.height / 4);
    expect(shows(down, layer5)).toBe(true);
  });

  it('with nothing to find again, the view goes to the content: the top-most eqn, not the first parameter', () => {
    const layout = gptExpanded();
    const view = { ...VIEW, ...scrollTarget(layout, VIEW, null, new Map())! };
    expect(shows(view, layout.nodes.find((n) => n.id === 'eqn:0')!)).toBe(true);
  });

  it('keeps the picked eqn in view, and leaves the scroll alone when it already is', () => {
    const layout = gptExpanded();
    const picked = layout.nodes.find((n) => n.id === 'eqn:500')!;
    const view = { ...VIEW, ...scrollTarget(layout, VIEW, { ids: ['eqn:500'], eqns: [500] }, new Map())! };
    expect(shows(view, picked)).toBe(true);
    expect(scrollTarget(layout, view, { ids: ['eqn:500'], eqns: [500] }, new Map())).toEqual({ x: view.x, y: view.y });
  });

  it('"collapse all": an eqn that is gone is found in the group node that now holds it', () => {
    const collapsed: GraphLayout = {
      nodes: [node('grp:layer0', 'group', 400, 120), node('grp:layer7', 'group', 400, 900)],
      edges: [],
      clusters: [],
      width: 900,
      height: 1000,
    };
    const holds = new Map([[600, 'grp:layer7']]);
    const from = { ...VIEW, x: 7000, y: 40_000 };
    const view = { ...VIEW, ...scrollTarget(collapsed, from, { ids: ['eqn:600'], eqns: [600] }, holds)! };
    expect(shows(view, collapsed.nodes[1]!)).toBe(true);
    // the smaller layout: centred on x = 400 would start left of 0
    expect(view.x).toBe(0);
    expect(view.y).toBeLessThanOrEqual(1000 - VIEW.height);
  });

  it('a box that fits in the view is shown whole; one eqn expanded in place is found as its box', () => {
    const layout: GraphLayout = {
      nodes: [node('eqn:0', 'eqn', 100, 60), node('eqn:4/jaxpr0/0', 'eqn', 2000, 1500, 'cl:x:4')],
      edges: [],
      clusters: [box('cl:x:4', 2000, 1500, 300, 200)],
      width: 3000,
      height: 3000,
    };
    const view = { ...VIEW, ...scrollTarget(layout, VIEW, { ids: ['eqn:4'], eqns: [4] }, new Map())! };
    expect(view.x).toBeLessThanOrEqual(2000 - 150);
    expect(view.x + view.width).toBeGreaterThanOrEqual(2000 + 150);
    expect(view.y).toBeLessThanOrEqual(1500 - 100);
  });
});

describe('what the user was looking at', () => {
  const layout = gptExpanded();
  const eqnsOf = (id: string): number[] => (id.startsWith('eqn:') ? [Number(id.slice(4))] : []);

  it('the picked node first, then the eqn or group node nearest the centre of the view', () => {
    const view = { ...VIEW, x: 7200, y: 200 + 10 * 67 - 200 };
    const anchor = anchorOf(layout, view, 'eqn:900', eqnsOf);
    expect(anchor.ids[0]).toBe('eqn:900');
    // the centre of the view is at y = view.y + 239: eqn 10's row is nearest
    const near = Math.round((view.y + view.height / 2 - 200) / 67);
    expect(anchor.ids[1]).toBe(`eqn:${near}`);
    expect(anchor.eqns).toEqual([900, near]);
  });

  it('binders only when no eqn or group is in view; nothing when the view is blank', () => {
    const top = anchorOf(layout, VIEW, null, eqnsOf);
    expect(top.ids).toHaveLength(1);
    expect(top.ids[0]!.startsWith('in:')).toBe(true);
    expect(anchorOf(layout, { ...VIEW, x: 0, y: 30_000 }, null, eqnsOf)).toEqual({ ids: [], eqns: [] });
  });
});

describe('a real layout: the layered model fixture, collapsed then every group expanded', () => {
  const e = lastOf(loadEvents('tracing-graph-layers'), 'jaxpr_staged');
  const jaxpr = e?.jaxpr as JaxprView;
  const tree = groupTree(jaxpr);
  const every = new Set([...allGroupIds(tree), ...(invarGroups(jaxpr) ?? []).flatMap((g) => (g ? [g.id] : []))]);

  it('the group in view before "expand all" is in view after it', () => {
    const small = { x: 0, y: 0, width: 300, height: 200 };
    const before = layoutGraph(visibleGraph(jaxpr, tree, new Set(), 2000));
    const eqnsOf = (): number[] => [];
    const groupNode = before.nodes.find((n) => n.kind === 'group')!;
    const view = { ...small, x: Math.max(0, groupNode.x - 150), y: Math.max(0, groupNode.y - 100) };
    const anchor = anchorOf(before, view, null, eqnsOf);
    expect(anchor.ids).toContain(groupNode.id);
    const expanded = visibleGraph(jaxpr, tree, every, 2000);
    const after = layoutGraph(expanded);
    const at = scrollTarget(after, view, anchor, expanded.nodeOfEqn)!;
    const seen = after.nodes.filter((n) => (n.kind === 'eqn' || n.kind === 'group') && shows({ ...small, ...at }, n));
    expect(seen.length).toBeGreaterThan(0);
    // the first eqn of the group the user was looking at is among them
    const cluster = `cl:${groupNode.groupId}`;
    expect(after.clusters.some((c) => c.id === cluster)).toBe(true);
    expect(seen.some((n) => n.parent === cluster || after.clusters.find((c) => c.id === n.parent)?.parent === cluster)).toBe(true);
  });
});
