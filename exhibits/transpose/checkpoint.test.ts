/** A jax.checkpoint step (remat2) opened: its heading and sentence (the probe's event is tested
 * against JAX in test_checkpoint.py). */
import { describe, expect, it } from 'vitest';
import type { TransposeCallOpened } from '../../frontend/src/gen/protocol';
import { innerWalkTitle, openedSentence } from './view-model';

describe('a jax.checkpoint step', () => {
  const opened = {
    type: 'transpose_call_opened',
    seq: 7,
    run_id: 'r',
    step: 1,
    primitive: 'remat2',
    name: 'g',
    walks: [{ iteration: null, steps: [], truncated: 0 }],
    more_iterations: 0,
    max_steps: 200,
    max_iterations: 3,
  } as unknown as TransposeCallOpened;

  it('is titled by the checkpointed function and says that the body is recomputed', () => {
    expect(innerWalkTitle(opened, opened.walks[0]!)).toBe('the body of jax.checkpoint(g)');
    expect(openedSentence(opened)).toContain("jax.checkpoint's transpose (remat2) recomputes g's forward values");
    expect(openedSentence(opened)).not.toContain("jit's transpose");
  });
});
