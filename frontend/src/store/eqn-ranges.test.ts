/**
 * Eqn ranges in the store (design 0045): a jaxpr view streamed with its first eqns is extended
 * range by range, in order, by `jaxpr_eqns_sent` answers; put back, it is JAX's whole text and
 * every eqn. The case (`eqn-ranges-case.json`) is what the backend's `split_view` makes of a
 * 61-eqn jaxpr, with `str(closed_jaxpr)` (backend/tests/test_eqn_ranges.py checks it).
 */
import { describe, expect, it } from 'vitest';
import type { Event, EventOf, JaxprView } from '../protocol';
import { runFinished, runStarted } from '../test/events';
import caseJson from './eqn-ranges-case.json';
import { applyEqnsSent, eqnCount, grownFrom, nextRanges, spliceRange } from './eqn-ranges';
import { applyEvents, startRun } from './reducer';
import { RunSession, unresolvedDetails, type FrameScheduler } from './session.svelte';
import { findOutLine, mapEqnLines } from '../widgets/jaxpr-lines';

interface Case {
  summary: JaxprView;
  answers: EventOf<'jaxpr_eqns_sent'>[];
  whole_text: string;
  whole_eqns: JaxprView['eqns'];
}
const CASE = caseJson as unknown as Case;
const EVERY_EVENT: FrameScheduler = { request: (callback) => callback() };

function staged(runId: string): Event {
  return { type: 'jaxpr_staged', run_id: runId, seq: 3, fun_name: '_small', jaxpr: CASE.summary };
}

function answers(runId: string): Event[] {
  return CASE.answers.map((a) => ({ ...a, run_id: runId }));
}

function finished(runId: string): Event[] {
  return [runStarted(runId, 0), staged(runId), runFinished(runId, 4)];
}

function viewOf(events: readonly Event[]): JaxprView {
  const event = events.find((e) => e.type === 'jaxpr_staged');
  if (event?.type !== 'jaxpr_staged') throw new Error('no jaxpr_staged');
  return event.jaxpr;
}

describe('eqn ranges', () => {
  it('the case is a split view: its first eqns, JAX text cut, ranges named in order', () => {
    expect(CASE.summary.total_eqns).toBe(CASE.whole_eqns.length);
    expect(CASE.summary.eqn_ranges?.map((r) => r.detail_id)).toEqual(CASE.answers.map((a) => a.detail_of));
    expect(CASE.summary.text).not.toBe(CASE.whole_text);
  });

  it("a split view's eqn count is the whole program's, not the eqns loaded", () => {
    expect(CASE.summary.eqns.length).toBeLessThan(CASE.whole_eqns.length);
    expect(eqnCount(CASE.summary)).toBe(CASE.whole_eqns.length);
  });

  it('put back range by range in the reducer, the view is JAX text and every eqn', () => {
    let state = applyEvents(startRun('r1', 'tracing', { calls: [] }, 0), finished('r1'), 1);
    for (const answer of answers('r1')) {
      const before = viewOf(state.events);
      state = applyEvents(state, [answer], 2);
      const after = viewOf(state.events);
      expect(after.eqns.length).toBeGreaterThan(before.eqns.length);
      expect(before.eqns.length).toBe((answer as EventOf<'jaxpr_eqns_sent'>).start); // not mutated
    }
    const view = viewOf(state.events);
    expect(view.text).toBe(CASE.whole_text);
    expect(view.eqns).toEqual(CASE.whole_eqns);
    expect(view.total_eqns).toBeNull();
    expect(eqnCount(view)).toBe(CASE.whole_eqns.length);
    expect(view.eqn_ranges).toEqual([]);
    expect(state.events).toHaveLength(3);
  });

  it('a view grown by its ranges is grownFrom the first, through copies; another program is not', () => {
    let state = applyEvents(startRun('r1', 'tracing', { calls: [] }, 0), finished('r1'), 1);
    const first = viewOf(state.events);
    for (const answer of answers('r1')) {
      const before = viewOf(state.events);
      state = applyEvents(state, [answer], 2);
      const after = structuredClone(viewOf(state.events)); // a new object, as a state proxy is
      expect(grownFrom(first, after)).toBe(true);
      expect(grownFrom(before, after)).toBe(true);
      expect(grownFrom(after, before)).toBe(false);
    }
    const whole = viewOf(state.events);
    expect(grownFrom(whole, whole)).toBe(true);
    expect(grownFrom(whole, structuredClone(whole))).toBe(false); // complete: nothing left to grow
    const other = { ...whole, text: whole.text.replace('lambda', 'lambda ') };
    expect(grownFrom(first, other)).toBe(false);
  });

  it('ignores an answer that is not the next range, of another run or of another seq', () => {
    const state = applyEvents(startRun('r1', 'tracing', { calls: [] }, 0), finished('r1'), 1);
    const [first, second] = answers('r1');
    expect(applyEvents(state, [second as Event], 2)).toBe(state);
    expect(applyEvents(state, [{ ...(first as Event), run_id: 'r0' }], 2)).toBe(state);
    expect(applyEvents(state, [{ ...(first as Event), seq: 0 }], 2)).toBe(state);
    expect(applyEqnsSent(staged('r1'), { ...(first as EventOf<'jaxpr_eqns_sent'>), field: 'nope' })).toBeNull();
    // The same answer twice extends the view once.
    const once = applyEvents(state, [first as Event], 2);
    expect(applyEvents(once, [first as Event], 3)).toBe(once);
  });

  it('the text widget maps the ranges line to no eqn, and every loaded eqn to its lines', () => {
    const view = CASE.summary;
    const layout = mapEqnLines(
      view.text,
      view.eqns.map((e) => e.text),
      true,
    );
    const rangesLine = findOutLine(layout.lines) - 1;
    expect(layout.lines[rangesLine]).toContain('sent as the page scrolls');
    expect(layout.lineToEqn[rangesLine]).toBeNull();
    expect(layout.spans.map((s) => layout.lines[s.start]?.trim())).toEqual(
      view.eqns.map((e) => e.text.split('\n')[0]?.trim()),
    );
  });

  it('splices the ranges line, keeping the closing line', () => {
    const text = '{ lambda ; a:f32[]. let\n    b:f32[] = sin a\n    … more …\n  in (b,) }';
    expect(spliceRange(text, '    c:f32[] = cos b\n', '    … rest …')).toBe(
      '{ lambda ; a:f32[]. let\n    b:f32[] = sin a\n    c:f32[] = cos b\n    … rest …\n  in (b,) }',
    );
    expect(spliceRange(text, '    c:f32[] = cos b\n', '')).toBe(
      '{ lambda ; a:f32[]. let\n    b:f32[] = sin a\n    c:f32[] = cos b\n  in (b,) }',
    );
  });

  it('the session asks for a range once, only after the run ended; Download asks for every next range', () => {
    const sent: string[] = [];
    const session = new RunSession(() => 0, EVERY_EVENT, (_run, id) => sent.push(id));
    session.begin('r1', 'tracing', { calls: [] });
    session.receive(runStarted('r1', 0));
    session.receive(staged('r1'));
    const first = CASE.summary.eqn_ranges?.[0]?.detail_id ?? '';
    session.wantRange(first); // while the run streams: held
    expect(sent).toEqual([]);
    session.receive(runFinished('r1', 4));
    expect(sent).toEqual([first]);
    session.wantRange(first);
    expect(sent).toEqual([first]);
    expect(nextRanges(session.run.events)).toEqual([first]);
    expect(unresolvedDetails(session.run)).toEqual([first]);
    session.receive(answers('r1')[0] as Event);
    expect(unresolvedDetails(session.run)).toEqual([CASE.summary.eqn_ranges?.[1]?.detail_id]);
  });
});
