/**
 * The compare view's pairing of a jaxpr's `in` line: an eqn added just before it is `added`, and
 * the `in` line whose outvars grew is `changed` against the old `in` line. Before, the leftover
 * lines were paired by position, so the added `reduce_sum` eqn was shown as a change of the old
 * `in (d,) }` and the new `in (d, e) }` as added. The texts are `jax.make_jaxpr`'s (JAX 0.10.2
 * in .venv) of `tanh(sin(x) * 2)` and of `(tanh(cos(x) * 2), sum(x))` at `jnp.ones(3)`.
 */
import { describe, expect, it } from 'vitest';
import { countRows, jaxprRows } from './structural-diff';

const BEFORE =
  '{ lambda ; a:f32[3]. let\n    b:f32[3] = sin a\n    c:f32[3] = mul b 2.0:f32[]\n    d:f32[3] = tanh c\n  in (d,) }';
const AFTER =
  '{ lambda ; a:f32[3]. let\n    b:f32[3] = cos a\n    c:f32[3] = mul b 2.0:f32[]\n    d:f32[3] = tanh c\n' +
  '    e:f32[] = reduce_sum[axes=(0,) out_sharding=None] a\n  in (d, e) }';

describe('jaxprRows: the in line pairs with the in line', () => {
  it('marks an eqn added before the in line as added, and the in line as changed', () => {
    const rows = jaxprRows(BEFORE, AFTER);
    const reduce = rows.find((r) => r.bText.includes('reduce_sum'));
    expect(reduce?.kind).toBe('added');
    expect(reduce?.aText).toBe('');
    const outs = rows.find((r) => r.bText.trim() === 'in (d, e) }');
    expect(outs?.kind).toBe('changed');
    expect(outs?.aText.trim()).toBe('in (d,) }');
    const sin = rows.find((r) => r.aText.includes('sin a'));
    expect(sin?.kind).toBe('changed');
    expect(sin?.bText.trim()).toBe('b:f32[3] = cos a');
    expect(countRows(rows)).toMatchObject({ changed: 2, added: 1, removed: 0 });
  });

  it('pairs a header whose signature changed with the header, not with an eqn', () => {
    const before = '{ lambda ; a:f32[3]. let\n    b:f32[3] = sin a\n  in (b,) }';
    const after = '{ lambda ; a:f32[3] b:f32[3]. let\n    c:f32[3] = add a b\n    d:f32[3] = sin c\n  in (d,) }';
    const rows = jaxprRows(before, after);
    expect(rows[0]?.a).toBe(0);
    expect(rows[0]?.b).toBe(0);
    expect(rows.find((r) => r.bText.includes('add a b'))?.kind).toBe('added');
  });
});
