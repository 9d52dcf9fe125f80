/**
 * The s11 break-it cases, on events captured from the real probe (fixtures/capture.py, sources in
 * its SNIPPETS): a NaN inside a jax.checkpoint'ed function, an Inf made by a custom_vjp bwd rule,
 * and a vector output walked from an all-ones cotangent.
 */
import { describe, expect, it } from 'vitest';
import type { Event } from '../../frontend/src/protocol';
import {
  callText,
  cursorSelection,
  forwardVerdict,
  gradientRows,
  gradientSource,
  headline,
  insidePath,
  nanModel,
  seedNote,
  seedValue,
} from './view-model';
import { fixtureLoader } from '../../frontend/src/test/fixtures';

const load = fixtureLoader(import.meta.url);

describe('checkpoint_sqrt: the Inf is born inside a jax.checkpoint body', () => {
  const model = nanModel(load('checkpoint_sqrt'));
  const f = model.found!;

  it('names the checkpointed function and lands on its sqrt line', () => {
    expect(f.inside.map((c) => [c.primitive, c.name])).toEqual([['remat2', 'g']]);
    expect(callText(f.inside[0]!)).toBe('jax.checkpoint(g) on line 11');
    expect(insidePath(f)).toBe('inside jax.checkpoint(g) on line 11');
    expect(headline(model, false)).toBe(
      'Step 2 went bad; inside jax.checkpoint(g) on line 11, its step 1 wrote an Inf first: mul (from sqrt) on line 7.',
    );
    // At the finding, the editor shows the line inside g and the jaxpr the remat2 step's eqn.
    const remat = model.steps.find((s) => s.primitive === 'remat2')!;
    expect(cursorSelection(model)).toEqual({ origin: 'eqn', lines: [7], eqnIndices: [remat.eqn_index], opLines: [] });
  });

  it('says the forward value of sqrt is finite while its saved derivative factor is not', () => {
    expect(forwardVerdict(f)).toContain('The forward value of sqrt on line 7 is finite');
    expect(forwardVerdict(f)).toContain('0.5/sqrt(x)');
    expect(f.no_cure).not.toContain('remat2');
  });
});

describe('custom_vjp_bwd: the user bwd rule made the Inf', () => {
  const f = nanModel(load('custom_vjp_bwd')).found!;

  it('names h_bwd and its line, and gives no custom_jvp advice', () => {
    expect(f.primitive).toBe('custom_lin');
    expect(f.no_cure).toContain('custom_vjp backward rule h_bwd (defined on line 14)');
    expect(f.no_cure).toContain('div on line 15');
    expect(f.no_cure).not.toContain('custom_jvp');
  });
});

describe('vector_where: a vector output, walked from ones', () => {
  const f = nanModel(load('vector_where')).found!;

  it('shows the seed note and says which JAX call the gradient is', () => {
    expect(seedValue(f)).toBe('ones(f32[3])');
    expect(seedNote(f)).toContain('ones(f32[3]): the output is not a scalar; this is the gradient of sum(f)');
    expect(gradientSource(f)).toBe('jax.vjp(f, *args)[1](ones(f32[3]))');
    expect(gradientRows(f.gradient)[0]?.cells?.map((c) => c.bad)).toEqual([true, true, false]);
  });

  it('keeps 1.0 for a scalar output (and for an older server that sends no seed)', () => {
    const scalar = nanModel(load('where_sqrt')).found!;
    expect(seedValue(scalar)).toBe('1.0');
    expect(seedNote(scalar)).toBeNull();
    expect(gradientSource(scalar)).toBe('jax.grad');
    const { seed: _drop, ...old } = scalar;
    expect(seedNote(old as typeof scalar)).toBeNull();
    expect(seedValue(undefined)).toBe('1.0');
  });
});
