import { describe, expect, it } from 'vitest';
import { eqnRecorded, runFailed, runFinished, runQueued, runStarted, stageStarted } from '../test/events';
import { IDLE_STATE, applyEvent, applyEvents, failLocally, resumeRequest, startRun } from './reducer';
import type { RunState } from './reducer';
import type { Event } from '../protocol';

const OPTIONS = { calls: [], known: null };

function feed(state: RunState, events: Event[], now = 1000): RunState {
  return events.reduce((s, e, i) => applyEvent(s, e, now + i), state);
}

describe('applyEvent', () => {
  it('ignores events while idle', () => {
    expect(applyEvent(IDLE_STATE, runStarted('r1', 0), 0)).toBe(IDLE_STATE);
  });

  it('keeps events in seq order, whatever the arrival order', () => {
    const s = feed(startRun('r1', 'tracing', OPTIONS, 0), [
      runStarted('r1', 0),
      eqnRecorded('r1', 2, 1),
      stageStarted('r1', 1, 'trace'),
      eqnRecorded('r1', 3, 2),
    ]);
    expect(s.events.map((e) => e.seq)).toEqual([0, 1, 2, 3]);
    expect(s.status).toBe('running');
  });

  it('ignores events of another run and duplicates', () => {
    const s0 = startRun('r2', 'tracing', OPTIONS, 0);
    const s1 = feed(s0, [runStarted('r2', 0), eqnRecorded('r2', 1, 0)]);
    expect(applyEvent(s1, eqnRecorded('r1', 2, 0), 5)).toBe(s1);
    expect(applyEvent(s1, eqnRecorded('r2', 1, 7), 5)).toBe(s1);
    expect(s1.events).toHaveLength(2);
    expect((s1.events[1] as Event & { index: number }).index).toBe(0);
  });

  it('ends at exactly one terminal event and ignores anything after it', () => {
    const done = feed(startRun('r1', 'stations', OPTIONS, 0), [
      runStarted('r1', 0),
      stageStarted('r1', 1, 'compile'),
      runFinished('r1', 2),
    ]);
    expect(done.status).toBe('finished');
    expect(done.terminal?.type).toBe('run_finished');
    expect(done.stage).toBeNull();
    const after = feed(done, [runFailed('r1', 3, 'cancelled'), eqnRecorded('r1', 4, 0)]);
    expect(after).toBe(done);
    expect(after.events.filter((e) => e.type === 'run_finished' || e.type === 'run_failed')).toHaveLength(1);
    expect(after.error).toBeNull();
  });

  it('holds the failure of a failed run', () => {
    const failure = runFailed('r1', 2);
    const s = feed(startRun('r1', 'tracing', OPTIONS, 0), [runStarted('r1', 0), stageStarted('r1', 1, 'trace'), failure], 100);
    expect(s.status).toBe('failed');
    expect(s.error).toEqual(failure);
    expect(s.terminal).toBe(s.error);
    expect(s.endedAt).toBe(102);
  });

  it('tracks the current stage and when it started, by the client clock', () => {
    let s = startRun('r1', 'stations', OPTIONS, 50);
    s = applyEvent(s, runStarted('r1', 0), 60);
    expect(s.stage).toBeNull();
    s = applyEvent(s, stageStarted('r1', 1, 'trace'), 70);
    expect([s.stage, s.stageStartedAt]).toEqual(['trace', 70]);
    s = applyEvent(s, stageStarted('r1', 2, 'lower'), 90);
    expect([s.stage, s.stageStartedAt]).toEqual(['lower', 90]);
    // A late-arriving older stage_started does not move the stage backwards.
    s = applyEvent(s, stageStarted('r1', 3, 'compile'), 95);
    const late = applyEvent(startRun('r1', 'stations', OPTIONS, 0), stageStarted('r1', 3, 'compile'), 1);
    expect(applyEvent(late, stageStarted('r1', 1, 'trace'), 2).stage).toBe('compile');
    expect(s.startedAt).toBe(50);
  });

  it('a new run starts from scratch', () => {
    const old = feed(startRun('r1', 'tracing', OPTIONS, 0), [runStarted('r1', 0), runFinished('r1', 1)]);
    const fresh = startRun('r2', 'stations', { calls: [{ change: 'shape', expr: null }], known: null }, 10);
    expect(fresh.events).toEqual([]);
    expect(fresh.terminal).toBeNull();
    expect(applyEvent(fresh, runFinished('r1', 2), 11)).toBe(fresh);
    expect(old.status).toBe('finished');
  });

  it('failLocally fails a running run once, and only a running one', () => {
    const running = feed(startRun('r1', 'tracing', OPTIONS, 0), [runStarted('r1', 0)]);
    const lost = failLocally(running, 'connection lost', 9);
    expect([lost.status, lost.clientError, lost.endedAt]).toEqual(['failed', 'connection lost', 9]);
    expect(applyEvent(lost, runFinished('r1', 1), 10)).toBe(lost);
    const finished = applyEvent(running, runFinished('r1', 1), 3);
    expect(failLocally(finished, 'x', 4)).toBe(finished);
  });

  it('run_accepted keeps the resume token outside the events; resumeRequest asks for the rest', () => {
    const s0 = startRun('r1', 'tracing', OPTIONS, 0);
    expect(resumeRequest(s0)).toBeNull(); // a server without a run queue: nothing to resume
    const accepted: Event = { type: 'run_accepted', run_id: 'r1', seq: 0, token: 'ab'.repeat(16), lane: 'light' };
    const s1 = feed(s0, [accepted]);
    expect([s1.events, s1.resumeToken]).toEqual([[], 'ab'.repeat(16)]);
    expect(resumeRequest(s1)).toEqual({ type: 'resume', run_id: 'r1', token: 'ab'.repeat(16), after_seq: -1 });
    const s2 = feed(s1, [runStarted('r1', 0), stageStarted('r1', 1, 'trace')]);
    expect(resumeRequest(s2)?.after_seq).toBe(1);
    // Once the run ended there is nothing to resume.
    expect(resumeRequest(applyEvent(s2, runFinished('r1', 2), 5))).toBeNull();
  });

  it('run_queued sets the queue and never enters the events', () => {
    let s = startRun('r1', 'tracing', OPTIONS, 0);
    expect(s.queue).toBeNull();
    s = applyEvent(s, runQueued('r1', 2, 5, 8), 1);
    expect(s.queue).toEqual({ position: 2, waiting: 5, estimate_s: 8, reason: 'pool_full' });
    s = applyEvent(s, runQueued('r1', 1, 3, null, 'client_share'), 2);
    expect(s.queue).toEqual({ position: 1, waiting: 3, estimate_s: null, reason: 'client_share' });
    expect(s.events).toEqual([]);
    expect(s.status).toBe('running');
    expect(applyEvent(s, runQueued('r0', 1, 1), 3)).toBe(s);
  });

  it('the seq-0 run_started after a run_queued is applied, and clears the queue', () => {
    const s = feed(startRun('r1', 'tracing', OPTIONS, 0), [
      runQueued('r1', 1, 1, 2.5),
      runStarted('r1', 0),
      stageStarted('r1', 1, 'trace'),
    ]);
    expect(s.queue).toBeNull();
    expect(s.events.map((e) => [e.type, e.seq])).toEqual([
      ['run_started', 0],
      ['stage_started', 1],
    ]);
    expect(s.stage).toBe('trace');
    // A stale run_queued after the run got its worker changes nothing.
    expect(applyEvent(s, runQueued('r1', 1, 1), 9)).toBe(s);
  });

  it('records how long a run waited while its worker was started (issue 31, item 5)', () => {
    const torch = { ...runQueued('r1', 1, 1, 10, 'worker_starting'), worker_kind: 'torch' } as Event;
    let s = startRun('r1', 'lazy_tensor', OPTIONS, 1_000);
    s = applyEvent(s, torch, 2_000);
    expect(s.workerStart).toBeNull();
    s = applyEvent(s, runStarted('r1', 0), 9_450);
    expect(s.workerStart).toEqual({ kind: 'torch', ms: 8_450 });
    s = applyEvent(s, runFinished('r1', 1), 10_000);
    expect(s.workerStart).toEqual({ kind: 'torch', ms: 8_450 });
    // a worker that was ready (or a wait for a busy one): none
    const ready = feed(startRun('r2', 'lazy_tensor', OPTIONS, 0), [runStarted('r2', 0), runFinished('r2', 1)]);
    expect(ready.workerStart).toBeNull();
    const busy = feed(startRun('r3', 'tracing', OPTIONS, 0), [runQueued('r3', 1, 2, 4), runStarted('r3', 0)]);
    expect(busy.workerStart).toBeNull();
  });

  it('cancelling while queued ends the run and clears the queue', () => {
    const s = feed(startRun('r1', 'tracing', OPTIONS, 0), [runQueued('r1', 3, 4), runFailed('r1', 0, 'cancelled')]);
    expect([s.status, s.queue, s.error?.kind]).toEqual(['failed', null, 'cancelled']);
    expect(s.events).toHaveLength(1);
    const lost = failLocally(applyEvent(startRun('r2', 'tracing', OPTIONS, 0), runQueued('r2', 1, 1), 1), 'gone', 2);
    expect(lost.queue).toBeNull();
  });
});

describe('applyEvents', () => {
  it('equals applying the batch one event at a time, in any arrival order', () => {
    const stream: Event[] = [
      runQueued('r1', 1, 2),
      runStarted('r1', 0),
      eqnRecorded('r1', 3, 1),
      stageStarted('r1', 1, 'trace'),
      eqnRecorded('r1', 2, 0),
      eqnRecorded('r1', 2, 0),
      eqnRecorded('r9', 4, 0),
      stageStarted('r1', 4, 'lower'),
      runFinished('r1', 5),
      eqnRecorded('r1', 6, 3),
    ];
    const s0 = startRun('r1', 'tracing', OPTIONS, 0);
    const oneByOne = stream.reduce((s, e) => applyEvent(s, e, 50), s0);
    const batched = applyEvents(s0, stream, 50);
    expect(batched).toEqual(oneByOne);
    expect(batched.events.map((e) => e.seq)).toEqual([0, 1, 2, 3, 4, 5]);
    expect([batched.status, batched.terminal?.seq]).toEqual(['finished', 5]);
  });

  it('returns the state itself when the whole batch is ignored', () => {
    const s0 = feed(startRun('r1', 'tracing', OPTIONS, 0), [runStarted('r1', 0)]);
    expect(applyEvents(s0, [runStarted('r1', 0), eqnRecorded('r2', 1, 0)], 9)).toBe(s0);
    expect(applyEvents(s0, [], 9)).toBe(s0);
  });

  it('takes in 20,000 in-order events in one batch without copying per event', () => {
    const s0 = startRun('r1', 'tracing', OPTIONS, 0);
    const stream: Event[] = [runStarted('r1', 0)];
    for (let i = 1; i <= 20_000; i++) stream.push(eqnRecorded('r1', i, i - 1));
    const s = applyEvents(s0, stream, 1);
    expect(s.events).toHaveLength(20_001);
    expect(s.events[20_000]?.seq).toBe(20_000);
  });
});
