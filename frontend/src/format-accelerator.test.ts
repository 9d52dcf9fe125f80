import { describe, expect, it } from 'vitest';
import lane from '../../recordings/tpu-v5e/lane.json';
import { formatQueue, formatWorkerStart } from './format';

// The run_queued events the second of two runs at once got on the lent TPU v5e host
// (bench/accelerator_lane.py, design 0069): it waited for the chip, then for a fresh worker to
// open it.
const second = lane.back_to_back.runs[1]!;

describe('the wait for the accelerator', () => {
  it('says the chip is held, then that a fresh worker opens it', () => {
    const texts = second.queued.map((q) =>
      formatQueue({ position: q.position, waiting: 1, estimate_s: q.estimate_s, reason: q.reason as 'pool_full' | 'worker_starting', worker_kind: 'accelerator' }),
    );
    expect(texts).toEqual([
      'Waiting for the accelerator: one run holds the chip at a time; this run is next, about 9 s',
      'Opening the accelerator for this run: a fresh worker opens the chip, ~9 s',
    ]);
  });

  it('counts the runs ahead', () => {
    expect(formatQueue({ position: 3, waiting: 3, estimate_s: 40, reason: 'pool_full', worker_kind: 'accelerator' })).toBe(
      'Waiting for the accelerator: one run holds the chip at a time; 2 runs ahead, about 40 s',
    );
  });

  it("tells a finished run how much of it was the chip's opening", () => {
    expect(formatWorkerStart({ kind: 'accelerator', ms: 13810 })).toBe(
      '13.8 s of it went to opening the accelerator in a fresh worker (one run holds the chip at a time; design 0069)',
    );
  });
});
