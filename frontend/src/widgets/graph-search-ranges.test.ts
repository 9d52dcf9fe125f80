/**
 * The graph's search while its view grows by eqn ranges (design 0045): a search entered on the
 * first eqns of a view sent in ranges holds on each grown view (a new object per range) and its
 * hits become those of the eqns loaded so far, the selected hit kept. The view is the store's
 * case (`eqn-ranges-case.json`, what the backend's `split_view` makes of a real 61-eqn jaxpr),
 * grown by its real answers; the truth is read from the whole view's eqns, not from the search.
 */
import { describe, expect, it } from 'vitest';
import type { EventOf, JaxprView } from '../protocol';
import caseJson from '../store/eqn-ranges-case.json';
import { extendView } from '../store/eqn-ranges';
import { groupTree } from './graph-groups';
import { newSearch, searchOn } from './graph-search';

interface Case {
  summary: JaxprView;
  answers: EventOf<'jaxpr_eqns_sent'>[];
  whole_eqns: JaxprView['eqns'];
}
const CASE = caseJson as unknown as Case;

/** The views the page holds as the ranges arrive: the first, then one new object per answer. */
function grownViews(): JaxprView[] {
  const views = [CASE.summary];
  for (const answer of CASE.answers) {
    const next = extendView(views[views.length - 1] as JaxprView, answer);
    if (next === null) throw new Error(`answer ${answer.detail_of} is not the next range`);
    views.push(structuredClone(next)); // a new object, as a state proxy is
  }
  return views;
}

/** The loaded eqns of `view` of primitive `p`, read from the whole program's eqns. */
const truth = (view: JaxprView, p: string): number[] =>
  CASE.whole_eqns.slice(0, view.eqns.length).flatMap((e) => (e.primitive === p ? [e.index] : []));

describe('graph search across eqn ranges', () => {
  it('holds on every grown view, its hits those of the eqns loaded so far, the selected hit kept', () => {
    const views = grownViews();
    const first = views[0] as JaxprView;
    expect(first.eqns.length).toBeLessThan(CASE.whole_eqns.length);
    let search = newSearch(first, groupTree(first), 'sin');
    expect(search.hits.map((h) => h.eqnIndex)).toEqual(truth(first, 'sin'));
    expect(search.hits.length).toBeGreaterThanOrEqual(2);
    search = { ...search, at: 1 }; // the user stepped to the second hit
    const selected = search.hits[1]?.eqnIndex;
    for (const view of views.slice(1)) {
      const now = searchOn(search, view, groupTree(view));
      expect(now).not.toBeNull();
      expect(now?.query).toBe('sin');
      expect(now?.jaxpr).toBe(view);
      expect(now?.hits.map((h) => h.eqnIndex)).toEqual(truth(view, 'sin'));
      expect(now?.hits[now.at]?.eqnIndex).toBe(selected);
    }
    const whole = views[views.length - 1] as JaxprView;
    expect(whole.eqns).toEqual(CASE.whole_eqns);
    expect(searchOn(search, whole, groupTree(whole))?.hits).toHaveLength(truth(whole, 'sin').length);
  });

  it('finds eqns only a later range holds, and is itself on the view it ran on', () => {
    const views = grownViews();
    const first = views[0] as JaxprView;
    const whole = views[views.length - 1] as JaxprView;
    const search = newSearch(first, groupTree(first), 'reduce_sum');
    expect(search.hits).toEqual([]);
    expect(searchOn(search, first, groupTree(first))).toBe(search);
    const now = searchOn(search, whole, groupTree(whole));
    expect(now?.hits.map((h) => h.eqnIndex)).toEqual(truth(whole, 'reduce_sum'));
    expect(now?.hits).toHaveLength(1);
    expect(now?.at).toBe(0);
  });

  it('is dropped for another program, a view that did not grow from it, or no search', () => {
    const views = grownViews();
    const first = views[0] as JaxprView;
    const second = views[1] as JaxprView;
    const search = newSearch(second, groupTree(second), 'sin');
    // the view it ran on is not a grown copy of a later one
    expect(searchOn(search, structuredClone(first), groupTree(first))).toBeNull();
    const other = { ...second, text: second.text.replace('lambda', 'lambda ') };
    expect(searchOn(newSearch(first, groupTree(first), 'sin'), other, groupTree(other))).toBeNull();
    expect(searchOn(null, second, groupTree(second))).toBeNull();
  });
});
