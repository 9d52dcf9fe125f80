import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { eqnRecorded, runFinished, runStarted, stageStarted } from '../test/events';
import type { FrameScheduler } from './session.svelte';
import { PLAY_INTERVAL_MS, RunSession } from './session.svelte';

/** Applies each event at once (as if every event had a frame of its own). */
const EVERY_EVENT: FrameScheduler = { request: (callback) => callback() };

/** Holds the frame callbacks until the test calls `frame()`. */
function manualFrames(): FrameScheduler & { frame: () => void; waiting: () => number } {
  let callbacks: (() => void)[] = [];
  return {
    request: (callback) => void callbacks.push(callback),
    frame: () => {
      const due = callbacks;
      callbacks = [];
      for (const callback of due) callback();
    },
    waiting: () => callbacks.length,
  };
}

describe('RunSession', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('follows a streaming run, steps back, and plays to the end on a timer', () => {
    let clock = 0;
    const session = new RunSession(() => clock, EVERY_EVENT);
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
    const session = new RunSession(() => 5, EVERY_EVENT);
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

  it('applies the events of a frame as one batch, asking for one frame per batch', () => {
    const frames = manualFrames();
    const session = new RunSession(() => 7, frames);
    session.begin('r1', 'tracing', { calls: [], known: null });
    const before = session.run;
    session.receive(runStarted('r1', 0));
    for (let i = 0; i < 1000; i++) session.receive(eqnRecorded('r1', i + 1, i));
    expect(frames.waiting()).toBe(1);
    expect(session.run).toBe(before);
    frames.frame();
    expect(session.run.events).toHaveLength(1001);
    expect(session.stepper.cursor).toBe(1000);
    session.receive(runFinished('r1', 1001));
    expect(frames.waiting()).toBe(1);
    frames.frame();
    expect(session.run.status).toBe('finished');
  });

  it('a lost socket first applies what arrived before it closed', () => {
    const frames = manualFrames();
    const session = new RunSession(() => 7, frames);
    session.begin('r1', 'tracing', { calls: [], known: null });
    session.receive(runStarted('r1', 0));
    session.receive(runFinished('r1', 1));
    session.lose('connection to the server lost');
    expect([session.run.status, session.run.clientError]).toEqual(['finished', null]);
  });

  it('events held for a run that was replaced never reach the new one', () => {
    const frames = manualFrames();
    const session = new RunSession(() => 7, frames);
    session.begin('r1', 'tracing', { calls: [], known: null });
    session.receive(runStarted('r1', 0));
    session.begin('r2', 'tracing', { calls: [], known: null });
    session.receive(runStarted('r2', 0));
    frames.frame();
    expect(session.run.events.map((e) => e.run_id)).toEqual(['r2']);
  });
});
