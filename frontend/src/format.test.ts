import { describe, expect, it } from 'vitest';
import { countOf, formatQueue, formatSeconds, formatWorkerStart } from './format';

describe('formatSeconds', () => {
  it('shows one decimal and clamps bad input to 0', () => {
    expect([formatSeconds(1234), formatSeconds(-5), formatSeconds(Number.NaN)]).toEqual(['1.2 s', '0.0 s', '0.0 s']);
  });
});

describe('formatQueue', () => {
  it('names the place and the estimate when there is one', () => {
    expect(formatQueue({ position: 2, waiting: 5, estimate_s: 7.6, reason: 'pool_full' })).toBe(
      'Waiting for a sandbox worker: position 2 of 5, about 8 s',
    );
    expect(formatQueue({ position: 1, waiting: 1, estimate_s: null, reason: 'pool_full' })).toBe(
      'Waiting for a sandbox worker: position 1 of 1',
    );
    expect(formatQueue({ position: 1, waiting: 1, estimate_s: 0.2, reason: 'pool_full' })).toBe(
      'Waiting for a sandbox worker: position 1 of 1, about 1 s',
    );
  });

  it("says when the client's other tabs hold its share", () => {
    expect(formatQueue({ position: 1, waiting: 2, estimate_s: 3, reason: 'client_share' })).toBe(
      "Waiting for a sandbox worker: your other tabs hold this client's share of workers (position 1 of 2, about 3 s)",
    );
  });
});

describe('formatQueue while a worker starts', () => {
  it('names the kind of worker and its start time', () => {
    expect(
      formatQueue({ position: 1, waiting: 1, estimate_s: 3, reason: 'worker_starting', worker_kind: 'jax' }),
    ).toBe('Starting a JAX sandbox worker for this run, ~3 s');
    expect(
      formatQueue({ position: 1, waiting: 1, estimate_s: 0.34, reason: 'worker_starting', worker_kind: 'jax' }),
    ).toBe('Starting a JAX sandbox worker for this run, ~0.3 s');
    expect(
      formatQueue({ position: 2, waiting: 2, estimate_s: 9.6, reason: 'worker_starting', worker_kind: 'torch' }),
    ).toBe('Starting a PyTorch/XLA sandbox worker for this run (a new process importing torch and torch_xla), ~10 s');
  });
});

describe('formatQueue ticks while a worker starts', () => {
  it('says how long the start has taken so far beside the estimate, from the first second', () => {
    const tf = { position: 1, waiting: 1, estimate_s: 30, reason: 'worker_starting', worker_kind: 'tf' } as const;
    expect(formatQueue(tf, 400)).toBe('Starting a TensorFlow sandbox worker for this run, ~30 s');
    expect(formatQueue(tf, 27_900)).toBe('Starting a TensorFlow sandbox worker for this run, ~30 s, 27 s so far');
    // Past the estimate the clock keeps counting: the estimate is not a promise.
    expect(formatQueue(tf, 38_200)).toBe('Starting a TensorFlow sandbox worker for this run, ~30 s, 38 s so far');
    const chip = { position: 1, waiting: 1, estimate_s: 9, reason: 'worker_starting', worker_kind: 'accelerator' } as const;
    expect(formatQueue(chip, 4_000)).toBe('Opening the accelerator for this run: a fresh worker opens the chip, ~9 s, 4 s so far');
    // A run waiting in the queue (no start of its own) keeps its place and estimate only.
    expect(formatQueue({ position: 2, waiting: 2, estimate_s: 5, reason: 'pool_full' }, 3_000)).toBe(
      'Waiting for a sandbox worker: position 2 of 2, about 5 s',
    );
  });
});

describe('formatWorkerStart: why a finished run was slow (issue 31, item 5)', () => {
  it('says how much of a run went to starting its torch worker, and why', () => {
    const note = formatWorkerStart({ kind: 'torch', ms: 8_460 });
    expect(note).toBe(
      "8.5 s of it went to starting a PyTorch/XLA worker (a new process importing torch and torch_xla); torch_xla's PJRT client and its first compile inside the run take milliseconds, and the next run finds a worker started",
    );
    expect(formatWorkerStart({ kind: 'jax', ms: 1_200 })).toBe('1.2 s of it went to starting a JAX sandbox worker');
  });

  it('says nothing of a ready worker or a start under a second', () => {
    expect(formatWorkerStart(null)).toBeNull();
    expect(formatWorkerStart({ kind: 'torch', ms: 400 })).toBeNull();
  });
});

describe('countOf', () => {
  it('says 1 eqn, 0 eqns and 2,447 eqns', () => {
    expect([countOf(1, 'eqn'), countOf(0, 'eqn'), countOf(2447, 'eqn'), countOf(1, 'group')]).toEqual([
      '1 eqn',
      '0 eqns',
      '2,447 eqns',
      '1 group',
    ]);
  });
});
