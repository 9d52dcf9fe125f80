import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { eqnRecorded, runFinished, runStarted, stageStarted } from '../test/events';
import { PLAY_INTERVAL_MS, RunSession } from './session.svelte';

describe('RunSession', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('follows a streaming run, steps back, and plays to the end on a timer', () => {
    let clock = 0;
    const session = new RunSession(() => clock);
    session.begin('r1', 'tracing', { calls: [], known: null });
    expect(session.run.status).toBe('running');
    const stream = [runStarted('r1', 0), stageStarted('r1', 1, 'trace'), eqnRecorded('r1', 2, 0), eqnRecorded('r1', 3, 1)];
    for (const e of stream) {
      clock += 10;
      session.receive(e);
      expect(session.stepper.cursor).toBe(e.seq);
    }
    expect(session.run.stageStartedAt).toBe(20);
    session.prev();
    session.prev();
    expect(session.visible.map((e) => e.seq)).toEqual([0, 1]);
    session.receive(runFinished('r1', 4));
    expect(session.stepper.cursor).toBe(1);
    expect(session.run.status).toBe('finished');

    session.togglePlay();
    expect(session.stepper.playing).toBe(true);
    vi.advanceTimersByTime(PLAY_INTERVAL_MS * 2);
    expect(session.stepper.cursor).toBe(3);
    vi.advanceTimersByTime(PLAY_INTERVAL_MS * 5);
    expect([session.stepper.cursor, session.stepper.playing]).toEqual([4, false]);
    expect(session.visible).toHaveLength(5);
    session.dispose();
  });

  it('a new run clears the previous one and the selection; a lost run fails', () => {
    const session = new RunSession(() => 5);
    session.begin('r1', 'tracing', { calls: [], known: null });
    session.receive(runStarted('r1', 0));
    session.select({ origin: 'editor', lines: [3], eqnIndices: [], opLines: [] });
    session.begin('r2', 'stations', { calls: [], known: null });
    expect(session.run.events).toEqual([]);
    expect(session.selection.lines).toEqual([]);
    session.receive(runStarted('r1', 1));
    expect(session.run.events).toEqual([]);
    session.lose('connection to the server lost');
    expect([session.run.status, session.run.clientError]).toEqual(['failed', 'connection to the server lost']);
  });
});
