import { describe, expect, it } from 'vitest';
import { defaultRunOptions } from '../protocol';
import { runFinished } from '../test/events';
import { IDLE_STATE, applyEvent, startRun } from './reducer';
import { runBlocked, shownRun } from './shown';

function finishedRun(exhibit: string) {
  const started = startRun('r1', exhibit, defaultRunOptions(), 1000);
  return applyEvent(started, runFinished('r1', 0), 4500);
}

describe('shownRun', () => {
  it('shows a run on its own exhibit: events, status and the bar', () => {
    const run = finishedRun('caches');
    const view = shownRun(run, 'caches');
    expect(view.shown).toBe(true);
    expect(view.bar).toBe(run);
    expect(view.bar.status).toBe('finished');
    expect(view.elsewhere).toBeNull();
  });

  it('gives another exhibit an idle bar, not the finished run of the one left', () => {
    const view = shownRun(finishedRun('transpose'), 'caches');
    expect(view.shown).toBe(false);
    expect(view.bar).toBe(IDLE_STATE);
    expect(view.bar.status).toBe('idle');
    expect(view.elsewhere).toBeNull();
  });

  it('names the exhibit of a run still in flight elsewhere', () => {
    const running = startRun('r2', 'sharding', defaultRunOptions(), 1000);
    const view = shownRun(running, 'jvp');
    expect(view.shown).toBe(false);
    expect(view.bar.status).toBe('idle');
    expect(view.elsewhere).toBe('sharding');
    expect(shownRun(running, 'sharding')).toEqual({ shown: true, bar: running, elsewhere: null });
  });

  it('shows nothing before the first run', () => {
    expect(shownRun(IDLE_STATE, 'tracing')).toEqual({ shown: false, bar: IDLE_STATE, elsewhere: null });
  });
});

describe('runBlocked', () => {
  it('blocks a second run of the exhibit whose run is in flight', () => {
    expect(runBlocked(startRun('r1', 'caches', defaultRunOptions(), 0), 'caches')).toBe(true);
  });

  it('lets the exhibit on screen replace a run of another exhibit', () => {
    expect(runBlocked(startRun('r1', 'transpose', defaultRunOptions(), 0), 'caches')).toBe(false);
  });

  it('never blocks after a run ended or before the first', () => {
    expect(runBlocked(finishedRun('caches'), 'caches')).toBe(false);
    expect(runBlocked(IDLE_STATE, 'caches')).toBe(false);
  });
});
