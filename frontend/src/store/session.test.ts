import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Event, EventOf } from '../protocol';
import { eqnRecorded, runFinished, runStarted, stageStarted } from '../test/events';
import { splitList } from '../test/list-ranges';
import type { FrameScheduler } from './session.svelte';
import { PLAY_INTERVAL_MS, RunSession, unresolvedDetails } from './session.svelte';

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

  it('asks for the list ranges of jaxpr views once the run ended, the next after each answer; Download asks for every list', () => {
    // A real event (transpose's mlp_loss golden) with its view's constvars in a head and 2
    // ranges, its invars in a head and 1 range, and its own residuals in a head and 1 range.
    const golden = fileURLToPath(new URL('../../../exhibits/transpose/golden/mlp_loss.events.jsonl', import.meta.url));
    const whole = readFileSync(golden, 'utf8')
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => ({ ...(JSON.parse(l) as Event), run_id: 'r1', seq: 1 }))
      .find((e): e is EventOf<'linear_jaxpr_staged'> => e.type === 'linear_jaxpr_staged');
    if (whole === undefined) throw new Error('no linear_jaxpr_staged');
    const event = structuredClone(whole);
    const consts = splitList(event.jaxpr, 'constvars', 'jaxpr.constvars', [3, 6], 1, 'r1');
    const invars = splitList(event.jaxpr, 'invars', 'jaxpr.invars', [2], 1, 'r1');
    const residuals = splitList(event, 'residuals', 'residuals', [4], 1, 'r1');
    const id = (a: { detail_of?: string | null } | undefined): string => a?.detail_of ?? '?';

    const sent: string[] = [];
    const session = new RunSession(() => 0, EVERY_EVENT, (_run, detail) => sent.push(detail));
    session.begin('r1', 'transpose', { calls: [] });
    session.receive(runStarted('r1', 0));
    session.receive(event);
    expect(sent).toEqual([]); // the run still streams
    session.receive(runFinished('r1', 2));
    expect(sent).toEqual([id(consts[0]), id(invars[0])]);
    expect(unresolvedDetails(session.run)).toEqual([id(residuals[0]), id(consts[0]), id(invars[0])]);
    session.goTo(0); // stepping asks for nothing again
    expect(sent).toHaveLength(2);
    session.receive(consts[0] as Event);
    expect(sent).toEqual([id(consts[0]), id(invars[0]), id(consts[1])]);
    session.receive(invars[0] as Event);
    session.receive(consts[1] as Event);
    expect(sent).toHaveLength(3); // the views are complete; the event's own list is the view's to ask for
    expect(unresolvedDetails(session.run)).toEqual([id(residuals[0])]);
    session.wantRange(id(residuals[0]));
    session.receive(residuals[0] as Event);
    expect(unresolvedDetails(session.run)).toEqual([]);
    expect(session.run.events[1]).toEqual(whole);
  });
});
