import { describe, expect, it } from 'vitest';
import type { Event } from '../../frontend/src/protocol';
import { cacheKeyModel, changeSummary, ingredientRows, slug, splitKey, type CacheKeyComputed } from './view-model';

const NAMES = [
  'computation',
  'jax_lib version',
  'backend version',
  'XLA flags',
  'compile_options',
  'accelerator_config',
  'compression',
  'custom_hook',
];

function key(perturbation: string | null, digests: string[], changed: string[] = []): CacheKeyComputed {
  return {
    type: 'cache_key_computed',
    seq: 0,
    run_id: 'r',
    perturbation,
    perturbation_detail: '',
    function: 'f',
    ingredients: NAMES.map((name, i) => ({
      name,
      digest: digests[i] ?? 'x',
      running: digests.slice(0, i + 1).join(''),
      helper: '',
      detail: '',
    })),
    changed,
    key: 'jit_f-abc',
    jax_key: 'jit_f-abc',
    returned_key: 'jit_f-abc',
    cache_file: 'jit_f-abc-cache',
    cache_dir: '',
    persistent: 'miss',
    equal: true,
    stripped_module: '',
  };
}

const BASE = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'];

describe('cache_key view model', () => {
  it('marks exactly the ingredient whose digest changed, and the running digests from there on', () => {
    const other = key('compiler_options', ['a', 'b', 'c', 'd', 'E', 'f', 'g', 'h'], ['compile_options']);
    const rows = ingredientRows(key(null, BASE), other);
    expect(rows.filter((r) => r.changed).map((r) => r.name)).toEqual(['compile_options']);
    expect(rows.map((r) => r.runningChanged)).toEqual([false, false, false, false, true, true, true, true]);
  });

  it('has no changes without a perturbation', () => {
    const rows = ingredientRows(key(null, BASE));
    expect(rows.every((r) => !r.changed && r.otherDigest === undefined)).toBe(true);
  });

  it('picks base and perturbed keys by their perturbation field', () => {
    const events = [key(null, BASE), key('line', BASE)] as Event[];
    const m = cacheKeyModel(events, events);
    expect(m.base?.perturbation).toBeNull();
    expect(m.other?.perturbation).toBe('line');
    expect(changeSummary(m.other)).toContain('no digest changed');
    // stepping back to the first event shows the base key alone
    expect(cacheKeyModel(events.slice(0, 1), events).other).toBeUndefined();
  });

  it('splits a key at its last dash and makes test ids', () => {
    expect(splitKey('jit_f_renamed-0123')).toEqual({ module: 'jit_f_renamed', hex: '0123' });
    expect(slug('jax_lib version')).toBe('jax_lib-version');
    expect(changeSummary(key('x', BASE, ['computation', 'XLA flags']))).toBe(
      '2 digests changed: computation, XLA flags',
    );
  });
});
