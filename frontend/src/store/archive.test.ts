import { describe, expect, it } from 'vitest';
import type { Event } from '../protocol';
import { defaultRunOptions } from '../protocol';
import { EMPTY_ARCHIVE, observeRun, previousRun } from './archive';
import type { RunState } from './reducer';
import { applyEvents, startRun } from './reducer';

function finished(runId: string, exhibit: string): RunState {
  const run = startRun(runId, exhibit, defaultRunOptions(), 0);
  const events = [
    { type: 'stdout_printed', seq: 0, run_id: runId, text: exhibit },
    { type: 'run_finished', seq: 1, run_id: runId },
  ] as unknown as Event[];
  return applyEvents(run, events, 1);
}

describe('archive of previous runs', () => {
  it('keeps the last finished run of each exhibit once the next run begins', () => {
    let s = observeRun(EMPTY_ARCHIVE, finished('r1', 'tracing'), 'code 1');
    expect(previousRun(s, 'tracing')).toBeNull();
    const r2 = startRun('r2', 'tracing', finished('r1', 'tracing').options, 2);
    s = observeRun(s, r2, 'code 2');
    // r2 still runs: nothing to compare yet, but r1 is kept with its own code.
    expect(previousRun(s, 'tracing')).toBeNull();
    expect(s.previous['tracing']?.code).toBe('code 1');
    s = observeRun(s, finished('r2', 'tracing'), 'ignored: the code r2 started with is kept');
    expect(previousRun(s, 'tracing')?.runId).toBe('r1');
    expect(s.latest?.code).toBe('code 2');
  });

  it('compares with the last finished run of the same exhibit, across runs of others and failures', () => {
    let s = observeRun(EMPTY_ARCHIVE, finished('r1', 'tracing'), 'a');
    s = observeRun(s, finished('r2', 'stations'), 'b');
    s = observeRun(s, finished('r3', 'tracing'), 'c');
    expect(previousRun(s, 'tracing')?.runId).toBe('r1');
    expect(previousRun(s, 'stations')).toBeNull(); // the store's run is tracing's
    const failed = { ...startRun('r4', 'tracing', s.latest!.options, 3), status: 'failed' as const };
    s = observeRun(s, failed, 'd');
    s = observeRun(s, finished('r5', 'tracing'), 'e');
    // r4 failed: r3 (not r4) is the previous run of r5.
    expect(previousRun(s, 'tracing')?.runId).toBe('r3');
  });

  it('finds no previous run for a prototype name as exhibit id', () => {
    // A finished run of the id on screen, and no earlier run of it: nothing to compare with
    // (a plain object's prototype answered `constructor` with a function, taken for a run).
    for (const id of ['constructor', 'toString', '__proto__', 'hasOwnProperty']) {
      const s = observeRun(observeRun(EMPTY_ARCHIVE, finished('r1', 'tracing'), 'a'), finished('r2', id), 'b');
      expect(previousRun(s, id), id).toBeNull();
    }
  });
});
