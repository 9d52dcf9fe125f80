import { describe, expect, it } from 'vitest';
import { avalText, compactParams, formatMs, humanBytes, shortDtypeName } from './format';

describe('avalText', () => {
  it('writes dtypes as the jaxpr printout does and marks weak types like str(aval)', () => {
    expect(avalText({ shape: [3], dtype: 'float32', weak_type: false, short: 'float32[3]' })).toBe('f32[3]');
    expect(avalText({ shape: [], dtype: 'float32', weak_type: true, short: 'float32[]' })).toBe('~f32[]');
    expect(avalText({ shape: [2, 2], dtype: 'bool', weak_type: false, short: 'bool[2,2]' })).toBe('bool[2,2]');
    // Already short or already marked: unchanged, never marked twice.
    expect(avalText({ shape: [], dtype: 'int32', weak_type: true, short: '~i32[]' })).toBe('~i32[]');
  });

  it('follows jax._src.dtypes.short_dtype_name', () => {
    // The names JAX prints in jaxprs (e.g. `bf16[8]`, `u8[]`, `c64[4]`).
    expect(['float32', 'bfloat16', 'float16', 'uint8', 'int32', 'int64', 'complex64', 'bool'].map(shortDtypeName)).toEqual(
      ['f32', 'bf16', 'f16', 'u8', 'i32', 'i64', 'c64', 'bool'],
    );
  });
});

describe('numbers for people', () => {
  it('humanBytes uses binary units and says when a figure is missing', () => {
    expect(humanBytes(0)).toBe('0 B');
    expect(humanBytes(1000)).toBe('1000 B');
    expect(humanBytes(1536)).toBe('1.50 KiB');
    expect(humanBytes(4_000_000)).toBe('3.81 MiB');
    expect(humanBytes(-1)).toBe('not reported');
  });

  it('formatMs keeps three significant digits', () => {
    expect(formatMs(0.028432)).toBe('0.0284 ms');
    expect(formatMs(7.0555)).toBe('7.06 ms');
    expect(formatMs(1234)).toBe('1.23 s');
  });

  it('compactParams keeps JAX order and cuts long text', () => {
    expect(compactParams({ axes: '(0,)', out_sharding: 'None' })).toBe('axes=(0,) out_sharding=None');
    expect(compactParams({ a: 'x'.repeat(100) }, 10)).toHaveLength(10);
    expect(compactParams({ donated_invars: '(False,)', name: '_where' })).toBe('name=_where donated_invars=(False,)');
  });
});
