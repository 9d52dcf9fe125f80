/**
 * Details on demand in the store: a summary (`detail_id`) is replaced by its whole event
 * (`detail_of`, same seq) after the run ended; `detail_failed` sets the note and is never asked
 * again, unless `transient` (too many requests waiting): then a later ask, `DETAIL_RETRY_MS` on,
 * asks again; the session asks only once the run has ended, only near the cursor, each id once.
 */
import { describe, expect, it } from 'vitest';
import type { Event, EventOf } from '../protocol';
import { eqnRecorded, runFinished, runStarted } from '../test/events';
import { DETAIL_RETRY_MS, applyEvents, mayAsk, startRun, wantedDetails } from './reducer';
import type { FrameScheduler } from './session.svelte';
import { DETAIL_WINDOW, RunSession } from './session.svelte';

const EVERY_EVENT: FrameScheduler = { request: (callback) => callback() };

/** A summary of eqn `index` (line 3) at `seq`, asking for `d<seq>`. */
function summary(runId: string, seq: number): Event {
  return { ...eqnRecorded(runId, seq, seq - 1), detail_id: `d${seq}` };
}

/** The whole event behind `summary(runId, seq)` (line 9 tells it apart). */
function whole(runId: string, seq: number): Event {
  return { ...eqnRecorded(runId, seq, seq - 1, 9), detail_of: `d${seq}` };
}

function finishedRun(n: number): Event[] {
  const events: Event[] = [runStarted('r1', 0)];
  for (let seq = 1; seq <= n; seq++) events.push(summary('r1', seq));
  events.push(runFinished('r1', n + 1));
  return events;
}

describe('details in the reducer', () => {
  it('merges an answer that arrives in the same batch as the terminal event, after it', () => {
    const batch = [...finishedRun(3), whole('r1', 2), summary('r1', 9)];
    const state = applyEvents(startRun('r1', 'tracing', { calls: [] }, 0), batch, 1);
    expect(state.status).toBe('finished');
    expect(state.terminal?.seq).toBe(4);
    expect(state.events).toHaveLength(5); // the late non-answer event (seq 9) is not appended
    expect(state.events[2]).toEqual(whole('r1', 2));
    expect(state.endedAt).toBe(1);
  });
  it('replaces a summary by its whole event after the terminal one, and ignores a stray answer', () => {
    let state = applyEvents(startRun('r1', 'tracing', { calls: [] }, 0), finishedRun(3), 1);
    expect(state.status).toBe('finished');
    const before = state.events;
    state = applyEvents(state, [whole('r1', 2)], 2);
    expect(state.events).toHaveLength(5);
    expect(state.events[2]).toEqual(whole('r1', 2));
    expect(before[2]).toEqual(summary('r1', 2)); // the old state is not mutated
    // Another run's answer, an answer for an id the summary does not carry, a new event: ignored.
    const same = applyEvents(
      state,
      [whole('r2', 1), { ...whole('r1', 1), detail_of: 'd7' }, eqnRecorded('r1', 9, 9)],
      3,
    );
    expect(same.events).toEqual(state.events);
  });

  it('keeps a detail_failed out of the events and marks its id', () => {
    let state = applyEvents(startRun('r1', 'tracing', { calls: [] }, 0), finishedRun(2), 1);
    const gone: Event = {
      type: 'detail_failed',
      run_id: 'r1',
      seq: 0,
      detail_id: 'd1',
      gone: true,
      message: "this run's details are gone: run again to see them",
    };
    state = applyEvents(state, [gone], 2);
    expect(state.events).toHaveLength(4);
    expect(state.detailNote).toContain('run again');
    expect(wantedDetails(state, 0, 10, new Set())).toEqual(['d2']);
  });

  it('remembers a transient refusal with its time, not as failed: asked again after DETAIL_RETRY_MS', () => {
    let state = applyEvents(startRun('r1', 'tracing', { calls: [] }, 0), finishedRun(2), 1);
    state = applyEvents(state, [refusal('r1', 'd1')], 100);
    expect(state.detailsFailed.has('d1')).toBe(false);
    expect(state.detailsRefused.get('d1')).toBe(100);
    expect(state.detailNote).toBeNull(); // nothing is lost: no "not loaded" note
    expect(mayAsk(state, 'd1', 100 + DETAIL_RETRY_MS - 1)).toBe(false);
    expect(wantedDetails(state, 0, 10, new Set(), 100)).toEqual(['d2']);
    expect(mayAsk(state, 'd1', 100 + DETAIL_RETRY_MS)).toBe(true);
    expect(wantedDetails(state, 0, 10, new Set(), 100 + DETAIL_RETRY_MS)).toEqual(['d1', 'd2']);
    // Refused again: the pause starts over. A lasting failure after it: never asked again.
    state = applyEvents(state, [refusal('r1', 'd1')], 5000);
    expect(mayAsk(state, 'd1', 5000 + DETAIL_RETRY_MS - 1)).toBe(false);
    state = applyEvents(state, [{ ...refusal('r1', 'd1'), transient: false, message: 'the run has no detail' }], 9000);
    expect(state.detailsFailed.has('d1')).toBe(true);
    expect(mayAsk(state, 'd1', 1e9)).toBe(false);
  });
});

/** The server's refusal of a detail request over its waiting limit (request_loop.py). */
function refusal(runId: string, id: string): EventOf<'detail_failed'> {
  return {
    type: 'detail_failed',
    run_id: runId,
    seq: 0,
    detail_id: id,
    gone: false,
    transient: true,
    message: 'more than 64 detail requests are waiting: ask again once they are answered',
  };
}

describe('details in the session', () => {
  it('asks once the run ended, near the cursor, each id once', () => {
    const asked: string[] = [];
    const session = new RunSession(() => 0, EVERY_EVENT, (runId, id) => asked.push(`${runId}:${id}`));
    session.begin('r1', 'tracing', { calls: [] });
    const events = finishedRun(40);
    for (const e of events.slice(0, -1)) session.receive(e);
    expect(asked).toEqual([]); // the worker serves details only after the run
    session.receive(events[events.length - 1] as Event);
    // The cursor follows the last event (41): the summaries within DETAIL_WINDOW before it.
    const near = Array.from({ length: DETAIL_WINDOW }, (_, k) => `r1:d${40 - DETAIL_WINDOW + 1 + k}`);
    expect(asked).toEqual(near);
    session.goTo(1);
    expect(asked.slice(near.length)).toEqual(Array.from({ length: DETAIL_WINDOW + 1 }, (_, k) => `r1:d${k + 1}`));
    const count = asked.length;
    session.next();
    session.goTo(1);
    expect(asked.length).toBe(count + 1); // only the one new id in the moved window
    session.receive(whole('r1', 5));
    expect(session.run.events[5]).toEqual(whole('r1', 5));
  });

  it('asks again for a transiently refused detail when it is wanted again, never in a loop', () => {
    let clock = 0;
    const asked: string[] = [];
    const session = new RunSession(() => clock, EVERY_EVENT, (_runId, id) => asked.push(id));
    session.begin('r1', 'tracing', { calls: [] });
    for (const e of finishedRun(3)) session.receive(e);
    session.goTo(1);
    expect(asked).toEqual(['d1', 'd2', 'd3']);
    asked.length = 0;
    // The server refuses d1 (over its waiting limit) and rejects d2 for good.
    session.receive(refusal('r1', 'd1'));
    session.receive({ ...refusal('r1', 'd2'), transient: false, gone: true, message: 'gone' });
    expect(asked).toEqual([]); // the refusal itself asks nothing (each flush prefetches)
    session.goTo(1);
    session.wantDetails(0, 4);
    session.wantRange('d1');
    expect(asked).toEqual([]); // wanted again too soon: not yet
    clock = DETAIL_RETRY_MS;
    session.wantDetails(0, 4); // the row is in view again: d1 once, never d2
    session.wantDetails(0, 4);
    session.goTo(1);
    expect(asked).toEqual(['d1']);
    session.receive(whole('r1', 1));
    expect(session.run.events[1]).toEqual(whole('r1', 1));
    expect(session.run.detailsFailed.has('d2')).toBe(true);
  });
});
