import { describe, expect, it } from 'vitest';
import { goldenLoader } from '../../frontend/src/test/fixtures';
import {
  exportModel,
  fieldRows,
  formatBytes,
  markedLines,
  plural,
  readableMessage,
  roundTripVerdict,
  symbolicShapes,
} from './view-model';

const golden = goldenLoader(import.meta.url);

describe('export view model', () => {
  it('reads the polymorphic MLP export of the golden run', () => {
    const m = exportModel(golden('mlp_batch'));
    expect(m.specs?.specs.map((s) => s.spec)).toEqual([null, '(b, 8)']);
    expect(m.exported?.in_avals.map((a) => `${a.path}: ${a.aval.short}`)).toEqual([
      "args[0]['b1']: f32[16]",
      "args[0]['b2']: f32[4]",
      "args[0]['w1']: f32[8,16]",
      "args[0]['w2']: f32[16,4]",
      'args[1]: f32[b,8]',
    ]);
    expect(m.exported?.out_avals.map((a) => a.aval.short)).toEqual(['f32[b,4]']);
    expect(m.dims?.variables).toEqual([{ name: 'b', solved_as: 'args[1].shape[0]', value: 3 }]);
    expect(m.dims?.constraints.map((c) => c.text)).toEqual(['args[1].shape[0] >= 1']);
    expect(m.roundTrip?.calls.map((c) => [c.label, c.equal, c.constraint_check])).toEqual([
      ['args', true, false],
      ['b=6', true, false],
      ['b=0', false, true],
    ]);
    expect(m.roundTrip?.calls[2]?.error).toContain("Expected value >= 1 for dimension variable 'b'");
  });

  it('lists the fields with JAX names and Python-like values', () => {
    const e = exportModel(golden('multi_platform')).exported;
    expect(e).not.toBeNull();
    const rows = Object.fromEntries(fieldRows(e!).map((r) => [r.field, r.value]));
    expect(rows.platforms).toBe("('cpu', 'cuda')");
    expect(rows.module_kept_var_idx).toBe('(0,)');
    expect(rows.uses_global_constants).toBe('True');
    expect(rows.in_shardings_hlo).toBe('(None,)');
  });

  it('marks the shape assertion and the platform index lines of the module', () => {
    const mlp = exportModel(golden('mlp_batch')).module!;
    const lines = mlp.text.split('\n');
    const marked = [...markedLines(mlp.text)];
    expect(marked.length).toBe(mlp.shape_assertions);
    expect(marked.every((i) => lines[i]?.includes('stablehlo.custom_call @shape_assertion('))).toBe(true);
    const multi = exportModel(golden('multi_platform')).module!;
    // main takes the platform index first, and passes it on to the functions that branch on it
    const shown = [...markedLines(multi.text)].map((i) => multi.text.split('\n')[i] ?? '');
    expect(shown[0]).toContain('@main(%arg0: tensor<i32> {jax.global_constant = "_platform_index"}');
    expect(shown.every((l) => l.includes('{jax.global_constant = "_platform_index"}'))).toBe(true);
  });

  it('fills a constraint message with its inputs and words the verdict', () => {
    expect(readableMessage("'b' = {0} (= {0}), {1}", ['args[1].shape[0]', 'x'])).toBe("'b' = args[1].shape[0] (= args[1].shape[0]), x");
    const rt = exportModel(golden('mlp_batch')).roundTrip!;
    expect(roundTripVerdict(rt)).toEqual({ ok: true, text: '2 of 2 calls equal jit(f), max |Δ| 0' });
    expect(roundTripVerdict({ ...rt, calls: [{ ...rt.calls[0]!, equal: false, max_abs_diff: 0.5 }] })).toEqual({
      ok: false,
      text: '1 of 1 calls differ from jit(f), max |Δ| 5.0e-1',
    });
    const refused = { ...rt, calls: [{ ...rt.calls[0]!, equal: false, error: 'ValueError: no' }] };
    expect(roundTripVerdict(refused)).toEqual({ ok: false, text: 'JAX refused the call at args: see its row' });
    expect(formatBytes(3080)).toBe('3,080 bytes');
    expect([plural(1, 'constraint'), plural(3, 'constraint')]).toEqual(['1 constraint', '3 constraints']);
    expect(formatBytes(300 * 1024)).toBe('300.0 KiB');
  });

  it('shows the symbolic arguments of each round-trip call', () => {
    const m = exportModel(golden('mlp_batch'));
    expect(m.roundTrip?.calls.map((c) => symbolicShapes(c.arg_shapes, m.exported))).toEqual([['f32[3,8]'], ['f32[6,8]'], ['f32[0,8]']]);
    const multi = exportModel(golden('multi_platform'));
    expect(multi.roundTrip?.calls.map((c) => symbolicShapes(c.arg_shapes, multi.exported))).toEqual([['f32[8]']]);
  });

  it('shows only what the stepper reached', () => {
    const events = golden('mlp_batch');
    const exportedAt = events.findIndex((e) => e.type === 'function_exported');
    const m = exportModel(events.slice(0, exportedAt));
    expect(m.specs).not.toBeNull();
    expect(m.exported).toBeNull();
    expect(m.roundTrip).toBeNull();
    expect(m.failure).toBeNull();
  });
});
