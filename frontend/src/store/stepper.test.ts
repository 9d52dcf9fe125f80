import { describe, expect, it } from 'vitest';
import {
  INITIAL_STEPPER,
  eventsChanged,
  first,
  last,
  next,
  pause,
  play,
  prev,
  resetStepper,
  tick,
  visibleEvents,
} from './stepper';
import type { StepperState } from './stepper';
import { runStarted, eqnRecorded } from '../test/events';

describe('stepper', () => {
  it('stays in bounds', () => {
    let s: StepperState = resetStepper(3);
    expect(s.cursor).toBe(2);
    s = next(s, 3);
    expect(s.cursor).toBe(2);
    s = first(s, 3);
    expect(s.cursor).toBe(0);
    s = prev(s, 3);
    expect(s.cursor).toBe(0);
    expect(first(INITIAL_STEPPER, 0).cursor).toBe(-1);
    expect(last(INITIAL_STEPPER, 0).cursor).toBe(-1);
    expect(next(INITIAL_STEPPER, 0).cursor).toBe(-1);
  });

  it('follows the newest event while streaming', () => {
    let s = resetStepper();
    for (let n = 1; n <= 5; n++) {
      s = eventsChanged(s, n);
      expect(s.cursor).toBe(n - 1);
    }
  });

  it('stops following when the user steps back, and follows again at the last event', () => {
    let s = eventsChanged(resetStepper(), 4);
    s = prev(s, 4);
    expect([s.cursor, s.follow]).toEqual([2, false]);
    s = eventsChanged(s, 6);
    expect(s.cursor).toBe(2);
    s = next(s, 6);
    s = next(s, 6);
    s = next(s, 6);
    expect([s.cursor, s.follow]).toEqual([5, true]);
    s = eventsChanged(s, 7);
    expect(s.cursor).toBe(6);
    s = first(s, 7);
    s = last(s, 7);
    expect(s.follow).toBe(true);
  });

  it('plays from the start when at the end, one event per tick, then stops and follows', () => {
    let s = play(resetStepper(3), 3);
    expect([s.cursor, s.playing]).toEqual([0, true]);
    s = tick(s, 3);
    expect([s.cursor, s.playing]).toEqual([1, true]);
    s = tick(s, 3);
    expect([s.cursor, s.playing, s.follow]).toEqual([2, false, true]);
    expect(tick(s, 3)).toBe(s);
  });

  it('plays from the cursor when stepped back; pause keeps the cursor; stepping stops play', () => {
    let s = prev(prev(resetStepper(5), 5), 5);
    s = play(s, 5);
    expect(s.cursor).toBe(2);
    s = eventsChanged(s, 8);
    expect([s.cursor, s.playing]).toEqual([2, true]);
    s = pause(tick(s, 8));
    expect([s.cursor, s.playing]).toEqual([3, false]);
    expect(next(play(s, 8), 8).playing).toBe(false);
    expect(play(INITIAL_STEPPER, 0)).toBe(INITIAL_STEPPER);
  });

  it('views see the prefix up to the cursor', () => {
    const events = [runStarted('r', 0), eqnRecorded('r', 1, 0), eqnRecorded('r', 2, 1)];
    expect(visibleEvents(events, 1).map((e) => e.seq)).toEqual([0, 1]);
    expect(visibleEvents(events, -1)).toEqual([]);
    expect(visibleEvents(events, 2)).toHaveLength(3);
  });
});
