import { describe, expect, it } from 'vitest';
import { decodeFragment, encodeFragment, loadDraft, parseOptions, saveDraft } from './url-state';
import type { SharedState } from './url-state';

const CODE = [
  'import jax.numpy as jnp',
  '',
  'def f(x, y):',
  '    return jnp.sin(x) * y  # ünïcödé, #hash & ampersand = sign',
  '',
  'args = (jnp.arange(3.0), 2.0)',
  '',
].join('\n');

describe('URL fragment', () => {
  it('round-trips exhibit, code and options', () => {
    const state: SharedState = {
      exhibit: 'tracing',
      code: CODE,
      options: { calls: [{ change: 'same', expr: null }, { change: 'expr', expr: '(jnp.ones(4), 1.0)' }], known: [true, false] },
    };
    const fragment = encodeFragment(state);
    expect(fragment.startsWith('#e=tracing&c=')).toBe(true);
    // The fragment is URL-safe: nothing a browser would re-escape.
    expect(fragment.slice(1)).toMatch(/^[A-Za-z0-9+\-_$=&.]*$/);
    expect(decodeFragment(fragment)).toEqual(state);
    expect(decodeFragment(new URL(`http://h/${fragment}`).hash)).toEqual(state);
  });

  it('round-trips empty code and default options', () => {
    const state: SharedState = { exhibit: 'stations', code: '', options: { calls: [], known: null } };
    expect(decodeFragment(encodeFragment(state))).toEqual(state);
  });

  it('rejects fragments without exhibit or code, and corrupt code', () => {
    expect(decodeFragment('')).toBeNull();
    expect(decodeFragment('#e=tracing')).toBeNull();
    expect(decodeFragment('#c=abc')).toBeNull();
    expect(decodeFragment('#e=tracing&c=%%%')).toBeNull();
  });

  it('drops malformed options instead of failing', () => {
    expect(parseOptions({ calls: [{ change: 'bogus' }, { change: 'dtype' }, 3] })).toEqual({
      calls: [{ change: 'dtype', expr: null }],
      known: null,
    });
    expect(parseOptions('x')).toEqual({ calls: [], known: null });
    expect(parseOptions({ in_axes: '(0, None)', stack: ['vmap', 'grad'] })).toEqual({
      calls: [],
      known: null,
      in_axes: '(0, None)',
      stack: ['vmap', 'grad'],
    });
    expect(parseOptions({ in_axes: 3, stack: ['vmap', 'rm -rf'] })).toEqual({ calls: [], known: null });
    const good = encodeFragment({ exhibit: 'tracing', code: 'x', options: { calls: [], known: null } });
    expect(decodeFragment(good.replace(/&o=.*$/, '&o=garbage'))?.options).toEqual({ calls: [], known: null });
  });
});

describe('drafts', () => {
  it('survive a reload per exhibit, and storage errors are swallowed', () => {
    const map = new Map<string, string>();
    const storage = {
      getItem: (k: string) => map.get(k) ?? null,
      setItem: (k: string, v: string) => void map.set(k, v),
    };
    saveDraft(storage, 'tracing', CODE);
    expect(loadDraft(storage, 'tracing')).toBe(CODE);
    expect(loadDraft(storage, 'stations')).toBeNull();
    const broken = {
      getItem: (): string | null => {
        throw new Error('denied');
      },
      setItem: () => {
        throw new Error('quota');
      },
    };
    expect(() => saveDraft(broken, 'tracing', CODE)).not.toThrow();
    expect(loadDraft(broken, 'tracing')).toBeNull();
  });
});
