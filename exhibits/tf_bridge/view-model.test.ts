import { describe, expect, it } from 'vitest';
import { goldenLoader } from '../../frontend/src/test/fixtures';
import { attrRows, bridgeModel, diffRows, eqnRows, sameModule } from './view-model';

const golden = goldenLoader(import.meta.url);

describe('tf_bridge view model', () => {
  it('reads the XlaCallModule op of the golden run', () => {
    const m = bridgeModel(golden('dense'));
    expect(m.graph?.ops.map((op) => op.type)).toContain('XlaCallModule');
    const module = m.module;
    if (module === undefined) throw new Error('no xla_call_module_read');
    const attrs = Object.fromEntries(attrRows(module).map((r) => [r.key, r.value]));
    expect(attrs.platforms).toBe('CPU');
    // the batch dimension is symbolic: TensorFlow's output shape says -1
    expect(attrs.Sout).toBe('[-1, 2]');
    expect(sameModule(module).same).toBe(true);
    expect(module.out_avals).toEqual(['float32[b,2]']);
  });

  it('puts each tf2jax eqn beside its TensorFlow op and its line', () => {
    const t = bridgeModel(golden('dense')).tf2jax;
    if (t === undefined) throw new Error('no tf2jax_converted');
    expect(eqnRows(t).map((r) => [r.primitive, r.op.split(' ')[0], r.line])).toEqual([
      ['dot_general', 'MatMul', 15],
      ['broadcast_in_dim', 'AddV2', 15],
      ['add', 'AddV2', 15],
      ['tanh', 'Tanh', 15],
    ]);
  });

  it('prints the comparisons and shows only what the stepper reached', () => {
    const events = golden('dense');
    const outputs = bridgeModel(events).outputs;
    expect(outputs && diffRows(outputs.outputs).map((r) => r.shape)).toEqual(['float32[4,2]']);
    const first = events.findIndex((e) => e.type === 'xla_call_module_read');
    const early = bridgeModel(events.slice(0, first));
    expect(early.graph).toBeDefined();
    expect(early.module).toBeUndefined();
  });
});
