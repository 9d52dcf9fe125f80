/**
 * The graph's overview sits over the bottom-right corner of the graph's box: every node of a
 * wide graph must be reachable from under it, scrolled or fitted (`graph-minimap.ts`). Real
 * layouts of the captured fixtures (dagre and the layered layout) in a box the size the GPT-stack
 * e2e test sees (807 x 478 CSS pixels); the scroll model is the browser's: a box scrolls over its
 * content and the room on its right, a node is seen whole between 0 and the box's size.
 */
import { describe, expect, it } from 'vitest';
import { loadEvents } from '../../test-fixtures/load';
import type { JaxprView } from '../protocol';
import { layoutDataflowGraph, type GraphLayout, type PlacedNode } from './dataflow-graph';
import { allGroupIds, groupTree, invarGroups, visibleGraph } from './graph-groups';
import { layoutLayered } from './graph-layered';
import { minimapRect, minimapRoom, minimapSize, overflows, overviewCover, MINIMAP_H, MINIMAP_W, type Size } from './graph-minimap';
import { scrollTarget } from './graph-scroll';

const BOX: Size = { width: 807, height: 478 };

function staged(name: string): JaxprView {
  const event = loadEvents(name).find((e) => e.type === 'jaxpr_staged');
  if (event?.type !== 'jaxpr_staged') throw new Error(`no jaxpr_staged in ${name}`);
  return event.jaxpr;
}

/** The fixture's graph with every group expanded, laid out by dagre and by the layered layout. */
function layouts(name: string): GraphLayout[] {
  const jaxpr = staged(name);
  const tree = groupTree(jaxpr);
  const ids = [...allGroupIds(tree), ...(invarGroups(jaxpr) ?? []).flatMap((g) => (g ? [g.id] : []))];
  const graph = visibleGraph(jaxpr, tree, new Set(ids), 50_000);
  return [layoutDataflowGraph(graph), layoutLayered(graph)];
}

/**
 * The nodes of `layout` no scroll position shows whole and clear of the overview, in `box`
 * with the room the box keeps for the overview; drawn at its size, or fitted to the box's width
 * beside that room (`fit`). A node is clear when, scrolled as far right (or down) as the box
 * allows while the node's left (top) edge stays in view, its right edge is left of the overview
 * (its bottom edge above it).
 */
function hiddenUnderOverview(layout: GraphLayout, box: Size, fit: boolean): PlacedNode[] {
  const size = minimapSize(layout);
  if (size === null || !overflows(layout, box, fit)) return [];
  const mm = minimapRect(box, size);
  const room = minimapRoom(size);
  const s = fit ? (box.width - room) / layout.width : 1;
  const maxLeft = Math.max(0, layout.width * s + room - box.width);
  const maxTop = Math.max(0, layout.height * s - box.height);
  return layout.nodes.filter((n) => {
    const [x0, x1, y0, y1] = [(n.x - n.width / 2) * s, (n.x + n.width / 2) * s, (n.y - n.height / 2) * s, (n.y + n.height / 2) * s];
    const left = Math.min(maxLeft, x0);
    const top = Math.min(maxTop, y0);
    return !(x1 - left <= mm.x || y1 - top <= mm.y);
  });
}

/** Whether `n` is under the overview `cover` (layout units, from the view's top-left) seen from `at`. */
function under(n: PlacedNode, at: { x: number; y: number }, cover: { x: number; y: number; width: number; height: number }): boolean {
  const [x0, x1, y0, y1] = [n.x - n.width / 2 - at.x, n.x + n.width / 2 - at.x, n.y - n.height / 2 - at.y, n.y + n.height / 2 - at.y];
  return x1 > cover.x && x0 < cover.x + cover.width && y1 > cover.y && y0 < cover.y + cover.height;
}

describe('the graph overview', () => {
  it('fits the layout in its largest size, keeping its shape, at least 12 pixels either way', () => {
    // the GPT stack with its params open: as wide as it may be
    const params = minimapSize({ width: 1792, height: 2684 });
    expect(params?.width).toBeCloseTo(MINIMAP_W);
    expect(params?.height).toBeCloseTo((MINIMAP_W * 2684) / 1792);
    // much taller than wide: as tall as it may be
    const tall = minimapSize({ width: 456, height: 1710 });
    expect(tall?.height).toBeCloseTo(MINIMAP_H);
    expect(tall?.width).toBeCloseTo((MINIMAP_H * 456) / 1710);
    // wide: as wide as it may be
    const wide = minimapSize({ width: 5406, height: 482 });
    expect(wide?.width).toBeCloseTo(MINIMAP_W);
    expect(wide?.height).toBeCloseTo((MINIMAP_W * 482) / 5406);
    expect(minimapSize({ width: 20_000, height: 482 })?.height).toBe(12);
    expect(minimapSize({ width: 1832, height: 63_514 })?.width).toBe(12);
    expect(minimapSize({ width: 0, height: 10 })).toBeNull();
  });

  it('is shown when the layout overflows the box, whatever room it made itself', () => {
    expect(overflows({ width: 800, height: 470 }, BOX, false)).toBe(false);
    expect(overflows({ width: 900, height: 470 }, BOX, false)).toBe(true);
    expect(overflows({ width: 900, height: 470 }, BOX, true)).toBe(false); // fitted: 418 tall
    expect(overflows({ width: 1000, height: 700 }, BOX, true)).toBe(true); // fitted: 565 tall
  });

  for (const name of ['tracing-graph-inner', 'tracing-graph-params', 'tracing-graph-scopes', 'tracing-graph-layers']) {
    it(`leaves no node of ${name} under it, scrolled or fitted`, () => {
      for (const layout of layouts(name)) {
        for (const fit of [false, true]) {
          const hidden = hiddenUnderOverview(layout, BOX, fit).map((n) => n.id);
          expect(hidden, `${layout.width} x ${layout.height}, fit ${fit}`).toEqual([]);
        }
      }
    });
  }
});

describe('a view moved to a node (a search hit, an expanded box)', () => {
  it('moves it clear of the overview, not only into the box', () => {
    // A search walks its hits from where the last one left the view: every eqn and group node of
    // each fixture in turn, from where the graph opens. Before, a node under the overview counted
    // as in view, and the view stayed with the node hidden (eqn 25 of the inner fixture's layered
    // layout, from where it opens).
    let wasUnder = 0;
    for (const name of ['tracing-graph-inner', 'tracing-graph-params', 'tracing-graph-scopes', 'tracing-graph-layers']) {
      for (const layout of layouts(name)) {
        for (const fit of [false, true]) {
          if (!overflows(layout, BOX, fit)) continue;
          const size = minimapSize(layout);
          if (size === null) continue;
          const s = fit ? (BOX.width - minimapRoom(size)) / layout.width : 1;
          const covered = overviewCover(layout, BOX, s);
          if (covered === null) throw new Error('no overview');
          const view = { x: 0, y: 0, width: BOX.width / s, height: BOX.height / s };
          let at = scrollTarget(layout, view, null, new Map(), covered) ?? { x: 0, y: 0 };
          for (const n of layout.nodes.filter((m) => m.kind === 'eqn' || m.kind === 'group')) {
            if (under(n, at, covered.rect)) wasUnder++;
            at = scrollTarget(layout, { ...view, ...at }, { ids: [n.id], eqns: [] }, new Map(), covered) ?? at;
            const where = `${name} ${layout.width} x ${layout.height} fit ${fit}: ${n.id} from ${at.x}, ${at.y}`;
            expect(under(n, at, covered.rect), where).toBe(false);
            expect(n.x - n.width / 2 >= at.x && n.x + n.width / 2 <= at.x + view.width, where).toBe(true);
            // within the box's scroll area: the layout and the room kept for the overview
            expect(at.x).toBeLessThanOrEqual(Math.max(0, layout.width + covered.room - view.width) + 1e-6);
          }
        }
      }
    }
    expect(wasUnder).toBeGreaterThan(0);
  });
});
