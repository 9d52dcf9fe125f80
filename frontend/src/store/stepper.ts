/**
 * The stepper: a cursor over the current run's events (first, previous, next, last, play).
 *
 * Pure functions over `StepperState`; `n` is always the number of events held. The cursor is an
 * index into `events` (-1 while there are none). While a run streams the cursor follows the
 * newest event (`follow`), until the user steps back; stepping to the last event follows again.
 * Views receive `visibleEvents(events, cursor)`, the prefix up to and including the cursor.
 */
import type { Event } from '../protocol';

export interface StepperState {
  /** index of the current event in `events`; -1 when there are no events */
  cursor: number;
  /** true when the cursor should jump to each new event as it arrives */
  follow: boolean;
  /** true while play advances the cursor on a timer */
  playing: boolean;
}

export const INITIAL_STEPPER: StepperState = { cursor: -1, follow: true, playing: false };

/** The stepper of a fresh run with `n` events so far (following the newest). */
export function resetStepper(n = 0): StepperState {
  return { cursor: n - 1, follow: true, playing: false };
}

function clamp(cursor: number, n: number): number {
  return Math.max(Math.min(cursor, n - 1), n > 0 ? 0 : -1);
}

/** Move the cursor to `cursor` (clamped); follows again when it lands on the last event. */
export function goTo(_s: StepperState, cursor: number, n: number): StepperState {
  const c = clamp(cursor, n);
  return { cursor: c, follow: c === n - 1, playing: false };
}

export function first(s: StepperState, n: number): StepperState {
  return goTo(s, 0, n);
}

export function prev(s: StepperState, n: number): StepperState {
  return goTo(s, s.cursor - 1, n);
}

export function next(s: StepperState, n: number): StepperState {
  return goTo(s, s.cursor + 1, n);
}

export function last(s: StepperState, n: number): StepperState {
  return goTo(s, n - 1, n);
}

/** The stepper after the events grew (or shrank) to `n`: the cursor follows the newest when following. */
export function eventsChanged(s: StepperState, n: number): StepperState {
  if (s.follow && !s.playing) return { ...s, cursor: n - 1 };
  const cursor = clamp(s.cursor, n);
  return cursor === s.cursor ? s : { ...s, cursor };
}

/** Start playing: from the first event when the cursor is already at the end. */
export function play(s: StepperState, n: number): StepperState {
  if (n === 0) return s;
  const cursor = s.cursor >= n - 1 ? 0 : s.cursor;
  return { cursor, follow: false, playing: true };
}

export function pause(s: StepperState): StepperState {
  return s.playing ? { ...s, playing: false } : s;
}

/** One play tick: advance by one; at the last event stop playing and follow again. */
export function tick(s: StepperState, n: number): StepperState {
  if (!s.playing) return s;
  const cursor = clamp(s.cursor + 1, n);
  const atEnd = cursor >= n - 1;
  return { cursor, follow: atEnd, playing: !atEnd };
}

/** The events a view shows: the prefix up to and including the cursor. */
export function visibleEvents(events: readonly Event[], cursor: number): readonly Event[] {
  return events.slice(0, cursor + 1);
}
