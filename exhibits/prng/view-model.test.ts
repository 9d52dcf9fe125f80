import { describe, expect, it } from 'vitest';
import { goldenLoader } from '../../frontend/src/test/fixtures';
import { callsLeftOut, checkerNote, findings, keyText, keyTree } from './view-model';

const golden = goldenLoader(import.meta.url);

describe('prng view model', () => {
  it('nests the correct example by the key each call read', () => {
    const rows = keyTree(golden('split_then_draw'));
    // key -> split -> (normal, split -> (bernoulli, fold_in -> uniform))
    expect(rows.map((r) => `${'  '.repeat(r.depth)}${r.call.op}`)).toEqual([
      'key',
      '  split',
      '    normal',
      '    split',
      '      bernoulli',
      '      fold_in',
      '        uniform',
    ]);
    const [seed, split] = rows;
    expect(seed?.keyIn).toBeNull();
    expect(seed?.keysOut).toEqual(['[0 0]']);
    // split of key(0): the values numpy's Threefry gives in test_prng.py
    expect(split?.keyIn).toBe('[0 0]');
    expect(split?.keysOut).toEqual(['[1797259609 2579123966]', '[928981903 3453687069]']);
    expect(rows.some((r) => r.reuse)).toBe(false);
    expect(findings(golden('split_then_draw'))).toEqual([]);
    expect(checkerNote(golden('split_then_draw'))).toBeNull();
  });

  it("reports JAX's checker's finding with both lines", () => {
    const events = golden('reuse_bug');
    const found = findings(events);
    expect(found?.map((f) => [f.line, f.firstLine, f.checker])).toEqual([[11, 10, 'jax.debug_key_reuse']]);
    expect(found?.[0]?.text).toBe('line 11 consumes a key that line 10 already consumed');
    // the reusing row is marked; the first use is not
    expect(keyTree(events).map((r) => [r.call.op, r.reuse])).toEqual([
      ['key', false],
      ['normal', false],
      ['bernoulli', true],
    ]);
  });

  it("labels a raw key's reuse as jaxscope's own check and says why", () => {
    const events = golden('prngkey_loop');
    expect(findings(events)?.map((f) => [f.line, f.firstLine, f.checker])).toEqual([[12, 11, 'jaxscope']]);
    expect(checkerNote(events)).toContain('cannot see');
    expect(keyTree(events)[0]?.call.op).toBe('PRNGKey');
  });

  it('shows only what the stepper reached', () => {
    const events = golden('reuse_bug');
    const first = events.findIndex((e) => e.type === 'random_call_recorded');
    expect(keyTree(events.slice(0, first))).toEqual([]);
    expect(keyTree(events.slice(0, first + 1)).length).toBe(1);
    expect(findings(events.slice(0, first + 1))).toBeNull();
    expect(keyText([0, 42])).toBe('[0 42]');
    expect(callsLeftOut(events)).toBe(0);
  });
  it('words randomness that does not advance as the finding and its fix', () => {
    const [found] = findings(golden('dropout_not_advancing')) ?? [];
    expect(found?.line).toBe(15);
    expect(found?.message).toBeNull();
    expect(found?.text).toMatch(/^randomness does not advance: jax\.random\.bernoulli at line 15/);
    expect(found?.fix).toMatch(/^use nnx\.jit/);
  });
});
