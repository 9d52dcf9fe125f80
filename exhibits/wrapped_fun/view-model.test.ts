import { describe, expect, it } from 'vitest';
import { goldenLoader } from '../../frontend/src/test/fixtures';
import { headline, noStackText, stacks, summary, timeline, transformRows } from './view-model';

const golden = goldenLoader(import.meta.url);

describe('wrapped_fun view model', () => {
  it('reads the vmap stack outermost first, with the order it was applied in', () => {
    const events = golden('vmap_sin');
    const [stack] = stacks(events);
    expect(stack?.core_name).toBe('f');
    const rows = stack ? transformRows(stack) : [];
    expect(rows.map((r) => r.name)).toEqual(['_batch_outer', '_batch_inner', 'flatten_fun_for_vmap']);
    expect(rows.map((r) => r.applied)).toEqual(['3rd applied', '2nd applied', '1st applied']);
    expect(rows[0]?.role).toBe('arguments meet it first, results last');
    expect(rows[2]?.role).toBe('results meet it first, arguments last');
    expect(rows[2]?.params).toBe('in_tree=PyTreeDef(((*, *), {}))');
    expect(rows[2]?.store).toBe('Store');
  });

  it('lays out the real order as an indented timeline', () => {
    const rows = timeline(golden('vmap_sin'));
    expect(rows.map((r) => r.text)).toEqual([
      '→ _batch_outer',
      '→ _batch_inner',
      '→ flatten_fun_for_vmap',
      '→ f (your function)',
      '← f (your function)',
      '■ flatten_fun_for_vmap fills its store',
      '← flatten_fun_for_vmap',
      '← _batch_inner',
      '← _batch_outer',
    ]);
    expect(rows.map((r) => r.depth)).toEqual([0, 1, 2, 3, 3, 3, 2, 1, 0]);
  });

  it('lists the custom_vjp stacks entered first, then the primal built but never run', () => {
    const all = stacks(golden('custom_vjp_clip'));
    expect(all.map((s) => [s.core_name, s.entered])).toEqual([
      ['clip_fwd', 1],
      ['clip_bwd', 1],
      ['clip_gradient', 0],
    ]);
    expect(all[2]?.stores[0]?.write_once).toBe('StoreException: Store empty');
  });

  it('says plainly that grad builds no stack, and what traced f', () => {
    const w = summary(golden('grad_no_stack'));
    expect(w?.built_around).toBe(0);
    expect(w ? headline(w) : '').toBe('0 WrappedFun objects built around your functions, 0 stacks');
    expect(w ? noStackText(w) : '').toMatch(/^No WrappedFun stack: jax\.grad built no WrappedFun around your function; it traces f with \S+ \(jax\/_src\/[^)]+\) directly\.$/);
    if (w) {
      expect(noStackText({ ...w, transform: 'custom_vjp' })).toMatch(
        /^No WrappedFun stack: f calls no jax\.custom_vjp function, and jax\.vjp built no WrappedFun around your function;/,
      );
    }
    const v = summary(golden('vmap_sin'));
    expect(v ? noStackText(v) : 'x').toBeNull();
  });

  it('shows only what the stepper reached', () => {
    const events = golden('vmap_sin');
    const first = events.findIndex((e) => e.type === 'wrapped_fun_stack_built');
    expect(stacks(events.slice(0, first))).toEqual([]);
    expect(timeline(events.slice(0, first + 1))).toEqual([]);
    expect(summary(events.slice(0, first + 1))).toBeUndefined();
  });
});
