import { describe, expect, it } from 'vitest';
import { EXHIBITS } from './exhibits';
import { EXHIBIT_TABLE } from './gen/exhibits';
import { RUN_HINTS, runHint } from './run-hint';

describe('the Press Run hint', () => {
  it('says PyTorch/XLA, not JAX, on every exhibit of the PyTorch/XLA track', () => {
    // the kinds come from exhibits/registry.py through `npm run gen` (worker="torch")
    const torch = Object.keys(EXHIBIT_TABLE).filter((id) => EXHIBIT_TABLE[id]?.group === 'PyTorch/XLA');
    expect(torch).toContain('lazy_tensor');
    expect(torch.length).toBeGreaterThanOrEqual(6);
    for (const id of torch) {
      expect(EXHIBIT_TABLE[id]?.worker).toBe('torch');
      expect(runHint(id)).toBe('to run this snippet with PyTorch/XLA.');
    }
  });

  it('says TensorFlow for the TF bridge, and tracing with JAX for a JAX exhibit', () => {
    expect(EXHIBIT_TABLE.tf_bridge?.worker).toBe('tf');
    expect(runHint('tf_bridge')).toContain('TensorFlow');
    expect(runHint('tracing')).toBe('to trace this snippet with JAX.');
    expect(runHint('dtypes')).toBe('to trace this snippet with JAX.');
    // an unknown id, or one of Object.prototype's names, is not an exhibit
    expect(runHint('no_such_exhibit')).toBe(RUN_HINTS.jax);
    expect(runHint('constructor')).toBe(RUN_HINTS.jax);
  });

  it('gives each exhibit entry its worker kind, and only a JAX worker\'s hint says "with JAX."', () => {
    for (const [id, entry] of Object.entries(EXHIBITS)) {
      expect(entry.worker).toBe(EXHIBIT_TABLE[id]?.worker);
      expect(runHint(id).endsWith('with JAX.')).toBe(entry.worker === 'jax');
    }
  });
});
