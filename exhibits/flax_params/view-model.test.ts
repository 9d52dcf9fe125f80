import { describe, expect, it } from 'vitest';
import { goldenLoader } from '../../frontend/src/test/fixtures';
import {
  applied,
  container,
  derivation,
  flaxError,
  initFigures,
  initializerShort,
  invarNames,
  keyText,
  nnxSplit,
  otherKeys,
  paramRows,
  treeLines,
} from './view-model';

const golden = goldenLoader(import.meta.url);

describe('flax_params view model', () => {
  it('lists the MLP parameters in call order with their keys', () => {
    const rows = paramRows(golden('mlp'));
    expect(rows.map((r) => r.name)).toEqual([
      'Dense_0/kernel',
      'Dense_0/bias',
      'Dense_1/kernel',
      'Dense_1/bias',
      'Dense_2/kernel',
      'Dense_2/bias',
    ]);
    // fold_in(key(0), sha1('Dense_0', 1)[:4]): the values test_flax_params.py recomputes
    expect(rows[0]?.key).toBe('[3043437727 3662875008]');
    expect(rows[0]?.derivation.call).toBe('fold_in(params key [0 0], 2998342421)');
    expect(rows[0]?.derivation.why).toBe("2998342421 = sha1('Dense_0', 1)[:4]");
    expect(rows.every((r) => r.event.reproduced === true && !r.unused && !r.latest)).toBe(true);
  });

  it('grows the tree leaf by leaf, then shows it in flattening order', () => {
    const events = golden('mlp');
    const second = events.filter((e) => e.type === 'param_created')[1];
    const upTo = events.slice(0, events.indexOf(second!) + 1);
    // two leaves so far, under params/Dense_0, in creation order; the newest marked
    expect(treeLines(upTo).map((t) => [t.depth, t.name, t.aval, t.latest])).toEqual([
      [0, 'params', null, false],
      [1, 'Dense_0', null, false],
      [2, 'kernel', 'f32[4,16]', false],
      [2, 'bias', 'f32[16]', true],
    ]);
    expect(paramRows(upTo).map((r) => r.latest)).toEqual([false, true]);
    expect(initFigures(upTo)).toBeNull();
    const done = treeLines(events).filter((t) => t.aval !== null);
    // JAX flattens a dict by sorted keys: bias before kernel
    expect(done.map((t) => [t.name, t.created, t.flat])).toEqual([
      ['bias', 1, 0],
      ['kernel', 0, 1],
      ['bias', 3, 2],
      ['kernel', 2, 3],
      ['bias', 5, 4],
      ['kernel', 4, 5],
    ]);
    expect(container(events)).toBe('dict');
    expect(initFigures(events)).toMatch(/^6 leaves, 225 numbers \(900 bytes\)\. init took \d+\.\d\d s; /);
  });

  it('says what apply read, and that it read everything', () => {
    const a = applied(golden('mlp'));
    expect(a?.event.call).toBe('model.apply(variables, *args)');
    expect(a?.reads.map((r) => r.name)).toEqual(paramRows(golden('mlp')).map((r) => r.name));
    expect(a?.reads.every((r) => r.sameObject)).toBe(true);
    expect(a?.unused).toEqual([]);
  });

  it('marks the parameters the silent branch bug never reads', () => {
    const events = golden('branch_silent');
    expect(applied(events)?.unused).toEqual(['Dense_2/bias', 'Dense_2/kernel']);
    expect(paramRows(events).filter((r) => r.unused).map((r) => r.name)).toEqual(['Dense_2/kernel', 'Dense_2/bias']);
    expect(flaxError(events)).toBeNull();
  });

  it("shows Flax's error for the loud branch bug and for nn.cond", () => {
    const loud = flaxError(golden('branch_error'));
    expect(loud?.phase).toBe('apply');
    expect(loud?.errorClass).toBe('flax.errors.ScopeParamShapeError');
    expect(loud?.headline).toContain('"/Dense_1"');
    expect(loud?.line).toBe(13);
    expect(applied(golden('branch_error'))).toBeNull();
    const cond = flaxError(golden('cond_branch'));
    expect(cond?.phase).toBe('init');
    expect(cond?.errorClass).toBe('TypeError');
    expect(cond?.rest).toContain("symmetric difference of key sets: {'params'}");
    // inside nn.cond the keys are tracers: no data shown
    expect(paramRows(golden('cond_branch')).map((r) => r.key)).toEqual(['—', '—']);
  });

  it('gives the same key to Dense_0/kernel in the conv net as in the MLP', () => {
    const conv = paramRows(golden('conv')).find((r) => r.name === 'Dense_0/kernel');
    expect(conv?.key).toBe(paramRows(golden('mlp'))[0]?.key);
  });

  it('counts nnx keys and splits the model', () => {
    const events = golden('nnx_mlp');
    const rows = paramRows(events);
    expect(rows.map((r) => [r.name, r.event.folded])).toEqual([
      ['l1/kernel', 0],
      ['l1/bias', 1],
      ['l2/kernel', 3],
      ['l2/bias', 4],
    ]);
    expect(rows[0]?.derivation.call).toBe('fold_in(default key [0 0], 0)');
    expect(otherKeys(events)).toEqual([{ stream: 'default', call: 'fold_in(default key, 2)', key: '[4146024105 2718843009]' }]);
    expect(container(events)).toBe('State');
    const split = nnxSplit(events);
    expect(split?.merge_equal).toBe(true);
    expect(split?.leaves.map((l) => `${l.path.join('/')}:${l.variable_type}`)).toEqual([
      'dropout/rngs/count:RngCount',
      'dropout/rngs/key:RngKey',
      'l1/bias:Param',
      'l1/kernel:Param',
      'l2/bias:Param',
      'l2/kernel:Param',
    ]);
  });

  it("names the apply jaxpr's invars by their key paths", () => {
    const names = invarNames(golden('branch_silent'));
    expect(names.map((v) => `${v.name} = ${v.path}`)).toEqual([
      "b = ['params']['Dense_0']['bias']",
      "c = ['params']['Dense_0']['kernel']",
      "d = ['params']['Dense_1']['bias']",
      "e = ['params']['Dense_1']['kernel']",
      "f = ['params']['Dense_2']['bias']",
      "g = ['params']['Dense_2']['kernel']",
    ]);
    expect(names.filter((v) => v.unused).map((v) => v.name)).toEqual(['f', 'g']);
    expect(invarNames(golden('nnx_mlp')).map((v) => v.path)[0]).toBe("['l1']['bias'].value");
  });

  it('words keys, derivations and initializers', () => {
    expect(initializerShort('jax.nn.initializers.lecun_normal()')).toBe('lecun_normal()');
    expect(initializerShort(null)).toBe('not known');
    expect(keyText([0, 42])).toBe('[0 42]');
    expect(keyText(null)).toBe('—');
    expect(derivation({ api: 'linen', root_key: [0, 1], stream: 'params', fold_in_data: [], folded: null }).call).toBe(
      'params key [0 1]',
    );
  });
});
