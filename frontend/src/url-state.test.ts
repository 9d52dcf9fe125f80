import { describe, expect, it } from 'vitest';
import { defaultRunOptions } from './protocol';
import {
  OPTION_NAMES,
  decodeFragment,
  decodePlace,
  encodeFragment,
  encodePlace,
  linkOptions,
  loadDraft,
  parseOptions,
  saveDraft,
} from './url-state';
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

describe('place fragment', () => {
  it('round-trips an exhibit alone and with an example, a real program included', () => {
    expect(encodePlace({ exhibit: 'transpose', example: null })).toBe('#e=transpose');
    expect(encodePlace({ exhibit: 'transpose', example: '' })).toBe('#e=transpose');
    for (const example of [null, 'mlp_loss', 'real/gpt_stack']) {
      const place = { exhibit: 'partial_eval', example };
      const fragment = encodePlace(place);
      expect(decodePlace(fragment)).toEqual(place);
      // as the browser gives it back from a pasted URL
      expect(decodePlace(new URL(`http://h/${fragment}`).hash)).toEqual(place);
    }
    expect(encodePlace({ exhibit: 'partial_eval', example: 'real/gpt_stack' })).toBe('#e=partial_eval&x=real%2Fgpt_stack');
  });

  it('is no shared link (no code), and a shared link names its exhibit as a place', () => {
    expect(decodeFragment(encodePlace({ exhibit: 'jvp', example: 'mlp_loss' }))).toBeNull();
    const link = encodeFragment({ exhibit: 'tracing', code: 'x', options: { calls: [], known: null } });
    expect(decodePlace(link)).toEqual({ exhibit: 'tracing', example: null });
  });

  it('names no exhibit for an empty or foreign fragment; leaves unknown names to the caller', () => {
    for (const fragment of ['', '#', '#e=', '#x=mlp_loss', '#section-2', '#%%']) {
      expect(decodePlace(fragment)).toBeNull();
    }
    expect(decodePlace('#e=no_such_exhibit&x=')).toEqual({ exhibit: 'no_such_exhibit', example: null });
    expect(decodePlace('e=jvp')).toEqual({ exhibit: 'jvp', example: null });
  });

  it("names a shared link's exhibit as decodeFragment does, when the link names two", () => {
    // Back onto this entry must show the exhibit a reload of it shows (decodeFragment's: the last)
    const link = `#e=transpose&e=jvp&c=${encodeFragment({ exhibit: 'jvp', code: 'x = 1', options: defaultRunOptions() }).split('&c=')[1]}`;
    expect(decodeFragment(link)?.exhibit).toBe('jvp');
    expect(decodePlace(link)?.exhibit).toBe('jvp');
    expect(decodePlace('#e=transpose&x=a&e=jvp&x=b')).toEqual({ exhibit: 'jvp', example: 'b' });
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

/** A value for every option the backend's RunOptions defines (one per exhibit control). */
const EVERY_OPTION: Record<string, unknown> = {
  calls: [{ change: 'shape', expr: null }, { change: 'expr', expr: '(jnp.ones(2),)' }],
  known: [true, false, false],
  in_axes: '(0, None)',
  out_axes: '1',
  stack: ['jit', 'vmap', 'grad'],
  preset: 'new_shape',
  perturb: 'jax_version',
  steps: 12,
  xla_flags: '--xla_cpu_enable_fast_math=true',
  target: 'tpu-v5e',
  mesh: "jax.make_mesh((2, 4), ('x', 'y'))",
  spec: "P('x', None)",
  array_shape: '(8, 16)',
  transform: 'custom_vjp',
  eager_mode: true,
  torchax: true,
  pjrt_device: 'TPU',
  dynamic_plugins: 'off',
};

describe('every option survives a copied link', () => {
  it('has a value above for each option the backend defines (a new option must be added here)', () => {
    expect(Object.keys(EVERY_OPTION).sort()).toEqual([...OPTION_NAMES].sort());
  });

  it('round-trips each option alone and all of them together', () => {
    for (const [key, value] of Object.entries(EVERY_OPTION)) {
      const options = parseOptions({ [key]: value });
      const state: SharedState = { exhibit: 'caches', code: 'x = 1', options };
      const reopened = decodeFragment(encodeFragment(state));
      expect(reopened?.options, key).toEqual(options);
      expect((reopened?.options as unknown as Record<string, unknown>)[key], key).toEqual(value);
    }
    const all = parseOptions(EVERY_OPTION);
    expect(all).toEqual(EVERY_OPTION);
    expect(decodeFragment(encodeFragment({ exhibit: 'sharding', code: '', options: all }))?.options).toEqual(EVERY_OPTION);
  });

  it('drops an option the backend model would refuse', () => {
    expect(parseOptions({ steps: 0 })).toEqual({ calls: [], known: null });
    expect(parseOptions({ steps: 201 })).toEqual({ calls: [], known: null });
    expect(parseOptions({ preset: 'x'.repeat(201) })).toEqual({ calls: [], known: null });
    expect(parseOptions({ stack: ['vmap', 'pmap'] })).toEqual({ calls: [], known: null });
    expect(parseOptions({ mesh: 3, spec: "P('x')" })).toEqual({ calls: [], known: null, spec: "P('x')" });
  });
});

describe('the options a shared link will run with (issue 31, item 1)', () => {
  it("lists the options the exhibit reads that are not the defaults, in the link's words", () => {
    const options = parseOptions({
      mesh: "jax.make_mesh((2, 4), ('x', 'y'))",
      spec: "P('x', None)",
      array_shape: '(8, 16)',
      in_axes: '(None, 0)',
      calls: [{ change: 'shape' }],
    });
    expect(linkOptions(options, 'sharding')).toEqual([
      { name: 'array_shape', text: '(8, 16)' },
      { name: 'mesh', text: "jax.make_mesh((2, 4), ('x', 'y'))" },
      { name: 'spec', text: "P('x', None)" },
    ]);
    expect(linkOptions(options, 'shard_map').map((o) => o.name)).toEqual(['mesh', 'spec']);
    expect(linkOptions(options, 'vmap')).toEqual([{ name: 'in_axes', text: '(None, 0)' }]);
    expect(linkOptions(options, 'tracing')).toEqual([{ name: 'calls', text: 'new shape' }]);
  });

  it('lists nothing for default options, and every kind of value readably', () => {
    for (const exhibit of ['tracing', 'sharding', 'partial_eval', 'transform_order']) {
      expect(linkOptions(defaultRunOptions(), exhibit)).toEqual([]);
    }
    const options = parseOptions({
      known: [true, false, true],
      stack: ['vmap', 'grad'],
      steps: 12,
      eager_mode: true,
      calls: [{ change: 'same' }, { change: 'expr', expr: '(jnp.ones(4),)' }],
    });
    expect(linkOptions(options, 'partial_eval')).toEqual([{ name: 'known', text: '[true,false,true]' }]);
    expect(linkOptions(options, 'transform_order')).toEqual([{ name: 'stack', text: 'vmap ∘ grad' }]);
    expect(linkOptions(options, 'recompile_hunt')).toEqual([{ name: 'steps', text: '12' }]);
    expect(linkOptions(options, 'lazy_tensor')).toEqual([{ name: 'eager_mode', text: 'true' }]);
    expect(linkOptions(options, 'tracing')).toEqual([{ name: 'calls', text: 'same shapes, args (jnp.ones(4),)' }]);
  });
});
