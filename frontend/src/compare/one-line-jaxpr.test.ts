/**
 * Short jaxprs, which JAX prints on one line, compared eqn by eqn (`expandOneLine`). The texts
 * are `jax.make_jaxpr`'s (JAX 0.10.2 in .venv) of `sin(x) * 2`, `cos(x) * 2`,
 * `(cos(x) * 2, sum(x))` and the identity, at `jnp.ones(3)`; the expanded form is the one JAX
 * prints for a jaxpr too long for one line (the third text is JAX's own, multi-line).
 */
import { describe, expect, it } from 'vitest';
import { expandOneLine } from './jaxpr-normalise';
import { countRows, jaxprRows } from './structural-diff';

const SIN = '{ lambda ; a:f32[3]. let b:f32[3] = sin a; c:f32[3] = mul b 2.0:f32[] in (c,) }';
const COS = '{ lambda ; a:f32[3]. let b:f32[3] = cos a; c:f32[3] = mul b 2.0:f32[] in (c,) }';
const COS_SUM =
  '{ lambda ; a:f32[3]. let\n    b:f32[3] = cos a\n    c:f32[3] = mul b 2.0:f32[]\n' +
  '    d:f32[] = reduce_sum[axes=(0,) out_sharding=None] a\n  in (c, d) }';
const IDENTITY = '{ lambda ; a:f32[3]. let  in (a,) }';

describe('expandOneLine', () => {
  it("writes a one-line jaxpr in JAX's multi-line form", () => {
    expect(expandOneLine(COS)).toBe(
      '{ lambda ; a:f32[3]. let\n    b:f32[3] = cos a\n    c:f32[3] = mul b 2.0:f32[]\n  in (c,) }',
    );
    expect(expandOneLine(IDENTITY)).toBe('{ lambda ; a:f32[3]. let\n  in (a,) }');
  });

  it('leaves a multi-line jaxpr and other text as they are', () => {
    expect(expandOneLine(COS_SUM)).toBe(COS_SUM);
    expect(expandOneLine('f32[3]')).toBe('f32[3]');
  });

  it('splits only at the eqns, not inside params', () => {
    const text = '{ lambda ; a:f32[3]. let b:f32[3] = foo[p={ lambda ; c:f32[]. let  in (c,) }; q=1] a in (b,) }';
    const lines = expandOneLine(text).split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[1]).toBe('    b:f32[3] = foo[p={ lambda ; c:f32[]. let  in (c,) }; q=1] a');
  });
});

describe('jaxprRows on one-line jaxprs', () => {
  it('marks only the changed eqn (sin to cos)', () => {
    const rows = jaxprRows(SIN, COS);
    expect(rows).toHaveLength(4);
    expect(countRows(rows)).toMatchObject({ changed: 1, added: 0, removed: 0 });
    expect(rows.find((r) => r.kind === 'changed')?.bText.trim()).toBe('b:f32[3] = cos a');
  });

  it('pairs a one-line jaxpr with a multi-line one eqn by eqn', () => {
    const rows = jaxprRows(COS, COS_SUM);
    expect(rows.find((r) => r.bText.includes('reduce_sum'))?.kind).toBe('added');
    expect(rows.find((r) => r.bText.includes('cos a'))?.kind).not.toBe('changed');
    expect(countRows(rows)).toMatchObject({ added: 1, removed: 0 });
  });
});
