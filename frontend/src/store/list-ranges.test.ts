/**
 * List ranges in the store (design 0045): a list too long for one event arrives with its first
 * items and the rest in ranges; put back range by range, in order, the event is the eager one.
 * The case is a real event: transpose's `linear_jaxpr_staged` of the mlp_loss golden (9
 * residuals, as the event's `residuals` and as the view's `constvars`), split here as the
 * backend's `summaries.split_lists` splits one (head, then ranges; the last stops at the length).
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { Event, EventOf } from '../protocol';
import { runFinished, runStarted } from '../test/events';
import { splitList, splitNested } from '../test/list-ranges';
import { applyEvents, startRun } from './reducer';
import {
  applyItemsSent,
  listLength,
  listsPending,
  nextListRange,
  nextListRanges,
  textPending,
  viewTextPending,
  type ItemsSent,
} from './list-ranges';

type Linear = EventOf<'linear_jaxpr_staged'>;

const golden = fileURLToPath(new URL('../../../exhibits/transpose/golden/mlp_loss.events.jsonl', import.meta.url));
const WHOLE = readFileSync(golden, 'utf8')
  .split('\n')
  .filter((l) => l.trim() !== '')
  .map((l) => JSON.parse(l) as Event)
  .find((e): e is Linear => e.type === 'linear_jaxpr_staged') as Linear;

/** The real event with its view's constvars in a head of 2 and 3 ranges, and its residuals in a head of 3 and 1 range. */
function splitCase(): { event: Linear; constvars: ItemsSent[]; residuals: ItemsSent[] } {
  const event = structuredClone(WHOLE);
  const constvars = splitList(event.jaxpr, 'constvars', 'jaxpr.constvars', [2, 5, 7], event.seq, 'r1');
  const residuals = splitList(event, 'residuals', 'residuals', [3], event.seq, 'r1');
  return { event, constvars, residuals };
}

function apply(event: Event, sent: ItemsSent): Event {
  const out = applyItemsSent(event, sent);
  if (out === null) throw new Error(`not applied: ${sent.detail_of}`);
  return out;
}

describe('list ranges', () => {
  it('the case is real: 9 residuals, 9 constvars', () => {
    expect(WHOLE.residuals).toHaveLength(9);
    expect(WHOLE.jaxpr.constvars).toHaveLength(9);
    expect(WHOLE.jaxpr.list_ranges).toBeUndefined();
  });

  it("a split list's length is the whole list's; a complete one's is its array's", () => {
    const { event } = splitCase();
    expect(event.jaxpr.constvars).toHaveLength(2);
    expect(listLength(event.jaxpr, 'constvars')).toBe(9);
    expect(listLength(event, 'residuals')).toBe(9);
    expect(listLength(event.jaxpr, 'invars')).toBe(WHOLE.jaxpr.invars.length);
    expect(listLength(event.jaxpr, 'nope')).toBe(0);
    expect(listsPending(event.jaxpr)).toBe(true);
    expect(listsPending(event)).toBe(true);
    expect(listsPending(WHOLE.jaxpr)).toBe(false);
    expect(listsPending(undefined)).toBe(false);
  });

  it('a view whose constvars come in 3 ranges, put back in order, equals the whole event', () => {
    const { event, constvars, residuals } = splitCase();
    const before = structuredClone(event);
    let now: Event = event;
    for (const [k, sent] of constvars.entries()) {
      const next = apply(now, sent);
      const view = (next as Linear).jaxpr;
      expect(view.constvars).toHaveLength(sent.start + sent.items.length);
      expect(listLength(view, 'constvars')).toBe(9);
      expect(listsPending(view)).toBe(k < constvars.length - 1);
      now = next;
    }
    expect(event).toEqual(before); // not mutated along the path
    expect((now as Linear).jaxpr).toEqual(WHOLE.jaxpr);
    expect(listsPending(now)).toBe(true); // the residuals are still partial
    now = apply(now, residuals[0] as ItemsSent);
    expect(now).toEqual(WHOLE);
    expect(Object.hasOwn(now, 'list_ranges')).toBe(false);
    expect(Object.hasOwn((now as Linear).jaxpr, 'list_ranges')).toBe(false);
  });

  it('rejects a range out of order, a wrong id, a wrong start, a wrong count, a wrong path', () => {
    const { event, constvars, residuals } = splitCase();
    const [first, second] = constvars as [ItemsSent, ItemsSent];
    expect(applyItemsSent(event, second)).toBeNull();
    expect(applyItemsSent(event, { ...first, detail_of: (second as ItemsSent).detail_of })).toBeNull();
    expect(applyItemsSent(event, { ...first, detail_of: null })).toBeNull();
    expect(applyItemsSent(event, { ...first, start: 3 })).toBeNull();
    expect(applyItemsSent(event, { ...first, items: first.items.slice(1) })).toBeNull();
    expect(applyItemsSent(event, { ...first, path: 'jaxpr.invars' })).toBeNull();
    expect(applyItemsSent(event, { ...first, path: 'jaxpr' })).toBeNull();
    expect(applyItemsSent(event, { ...first, path: 'nope.constvars' })).toBeNull();
    expect(applyItemsSent(event, { ...first, path: '__proto__.constvars' })).toBeNull();
    expect(applyItemsSent(event, { ...first, path: 'constvars' })).toBeNull();
    expect(applyItemsSent(event, { ...(residuals[0] as ItemsSent), path: 'jaxpr.residuals' })).toBeNull();
    // The same answer twice extends the list once.
    const once = apply(event, first);
    expect(applyItemsSent(once, first)).toBeNull();
  });

  it('names the first range of each partial list: the views only, or the events too', () => {
    const { event, constvars, residuals } = splitCase();
    const events: Event[] = [runStarted('r1', 0), event];
    expect(nextListRanges(events, 'views')).toEqual([constvars[0]?.detail_of]);
    expect(nextListRanges(events, 'all')).toEqual([residuals[0]?.detail_of, constvars[0]?.detail_of]);
    expect(nextListRange(event.jaxpr, 'constvars')?.detail_id).toBe(constvars[0]?.detail_of);
    const next = apply(event, constvars[0] as ItemsSent);
    expect(nextListRanges([next], 'views')).toEqual([constvars[1]?.detail_of]);
    expect(nextListRanges([WHOLE], 'all')).toEqual([]);
  });

  it('the reducer merges items_sent into the event of its seq, in order, never as an event', () => {
    const { event, constvars, residuals } = splitCase();
    const run = (e: Event): Event => ({ ...e, run_id: 'r1' });
    let state = applyEvents(startRun('r1', 'transpose', { calls: [] }, 0), [runStarted('r1', 0), run(event), runFinished('r1', 9)], 1);
    // Out of order, another run, another seq: ignored.
    expect(applyEvents(state, [constvars[1] as Event], 2)).toBe(state);
    expect(applyEvents(state, [{ ...(constvars[0] as Event), run_id: 'r0' }], 2)).toBe(state);
    expect(applyEvents(state, [{ ...(constvars[0] as Event), seq: 0 }], 2)).toBe(state);
    state = applyEvents(state, [...constvars, ...residuals] as Event[], 2);
    expect(state.events).toHaveLength(3);
    expect(state.events[1]).toEqual(run(WHOLE));
  });

  it('a list and a text nested in a view (ranges the event holds under their path) are put back too', () => {
    const tracing = fileURLToPath(new URL('../../../exhibits/tracing/golden/mlp_loss.events.jsonl', import.meta.url));
    const staged = readFileSync(tracing, 'utf8')
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => JSON.parse(l) as Event)
      .find((e): e is EventOf<'jaxpr_staged'> => e.type === 'jaxpr_staged') as EventOf<'jaxpr_staged'>;
    const whole = structuredClone(staged);
    // the jit of log_softmax: its inner jaxpr's eqns; and a text past an astral character
    const at = whole.jaxpr.eqns.findIndex((e) => e.inner_jaxprs.length > 0 && e.params['name'] === 'log_softmax');
    const inner = whole.jaxpr.eqns[at]?.inner_jaxprs[0];
    expect(inner?.eqns.length).toBeGreaterThan(3);
    whole.jaxpr.text = `${whole.jaxpr.text}  # 𝑥 = 𝑦`; // code points ≠ UTF-16 units
    const event = structuredClone(whole);
    const eqnsPath = `jaxpr.eqns.${at}.inner_jaxprs.0.eqns`;
    const eqns = splitNested(event, eqnsPath, [1, 2]);
    const textLength = [...whole.jaxpr.text].length;
    const text = splitNested(event, 'jaxpr.text', [40, textLength - 3]);
    expect(event.jaxpr.eqns[at]?.inner_jaxprs[0]?.eqns).toHaveLength(1);
    expect(event.jaxpr.text).toHaveLength(40);
    expect(listLength(event, 'jaxpr.text')).toBe(textLength);
    expect(listsPending(event.jaxpr)).toBe(false); // the event holds these ranges
    // the views' scope asks for them (they are inside a view); the first of each, in order
    expect(nextListRanges([event], 'views')).toEqual([eqns[0]?.detail_of, text[0]?.detail_of]);
    expect(applyItemsSent(event, eqns[1] as ItemsSent)).toBeNull();
    expect(applyItemsSent(event, text[1] as ItemsSent)).toBeNull();
    expect(applyItemsSent(event, { ...(text[0] as ItemsSent), items: ['x'] })).toBeNull();
    expect(applyItemsSent(event, { ...(eqns[0] as ItemsSent), path: `jaxpr.eqns.${at}.inner_jaxprs.1.eqns` })).toBeNull();
    let now: Event = event;
    for (const sent of [...text, ...eqns]) now = apply(now, sent);
    expect(now).toEqual(whole);
    expect(Object.hasOwn(now, 'list_ranges')).toBe(false);
    expect(listLength(now, 'jaxpr.text')).toBe(textLength);
    expect(listLength(now, eqnsPath)).toBe(inner?.eqns.length);
    expect(event.jaxpr.text).toHaveLength(40); // not mutated
  });
});

describe('a nested text still to come (the note on the text while the run goes)', () => {
  it("counts the characters and ranges of a view's cut text until they are merged", () => {
    const tracing = fileURLToPath(new URL('../../../exhibits/tracing/golden/mlp_loss.events.jsonl', import.meta.url));
    const staged = readFileSync(tracing, 'utf8')
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => JSON.parse(l) as Event)
      .find((e): e is EventOf<'jaxpr_staged'> => e.type === 'jaxpr_staged') as EventOf<'jaxpr_staged'>;
    const whole = structuredClone(staged);
    whole.jaxpr.text = `${whole.jaxpr.text}  # 𝑥 = 𝑦`; // code points ≠ UTF-16 units
    const textLength = [...whole.jaxpr.text].length;
    const event = structuredClone(whole);
    const mid = textLength - 7;
    const text = splitNested(event, 'jaxpr.text', [40, mid]);
    // another nested list of the view (an inner jaxpr's eqns) is no part of its text
    const at = event.jaxpr.eqns.findIndex((e) => e.inner_jaxprs.length > 0);
    splitNested(event, `jaxpr.eqns.${at}.inner_jaxprs.0.eqns`, [1]);
    expect(textPending(event, 'jaxpr.text')).toEqual({ chars: textLength - 40, ranges: 2 });
    // an inner jaxpr's own text (a view nested in the event's), held by the event under its path
    const innerView = event.jaxpr.eqns[at]?.inner_jaxprs[0];
    if (innerView === undefined) throw new Error('no inner jaxpr');
    const innerLength = [...innerView.text].length;
    splitNested(event, `jaxpr.eqns.${at}.inner_jaxprs.0.text`, [5]);
    expect(viewTextPending([event], innerView)).toEqual({ chars: innerLength - 5, ranges: 1 });

    // Through the store, as the page gets them: the run streams the cut event, then ends.
    let state = applyEvents(startRun(event.run_id, 'tracing', { calls: [] }, 0), [runStarted(event.run_id, 0)], 1);
    state = applyEvents(state, [{ ...event, seq: 1 }], 2);
    const view = (): EventOf<'jaxpr_staged'>['jaxpr'] =>
      (state.events.find((e) => e.type === 'jaxpr_staged') as EventOf<'jaxpr_staged'>).jaxpr;
    expect(viewTextPending(state.events, view())).toEqual({ chars: textLength - [...view().text].length, ranges: 2 });
    expect(viewTextPending(state.events, whole.jaxpr)).toBeNull(); // no event's view
    state = applyEvents(state, [runFinished(event.run_id, 2)], 3);
    expect(viewTextPending(state.events, view())?.ranges).toBe(2); // ended, not merged yet
    state = applyEvents(state, [{ ...(text[0] as ItemsSent), seq: 1 }], 3);
    expect([...view().text]).toHaveLength(mid);
    expect(viewTextPending(state.events, view())).toEqual({ chars: textLength - mid, ranges: 1 });
    state = applyEvents(state, [{ ...(text[1] as ItemsSent), seq: 1 }], 4);
    expect(view().text).toBe(whole.jaxpr.text);
    expect(viewTextPending(state.events, view())).toBeNull(); // merged: the note is gone
  });
});
