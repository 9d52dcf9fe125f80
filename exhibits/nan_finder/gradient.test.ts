/**
 * "What jax.grad returns" for a pytree argument: one row per leaf with its key path (a nested
 * dict of parameters, as a linen model's), never `[object Object]`; an argument held fixed says
 * "not differentiated", a leaf too large to send says "too large to show", each by its own
 * status (the linear jaxpr's inputs, one per differentiated leaf, tell them apart). Fixture
 * nested_params: f(params, x, n) with params = {'a': {'w', 'c': (…,)}, 'b': f32[70,70]}, n an int.
 */
import { describe, expect, it } from 'vitest';
import { fixtureLoader } from '../../frontend/src/test/fixtures';
import { renderView } from '../../frontend/src/test/render-view';
import View from './View.svelte';
import { gradientDtype, gradientLeafAvals, gradientRows, gradientStatusText, nanModel } from './view-model';

const load = fixtureLoader(import.meta.url);

describe('the gradient of a nested-dict argument', () => {
  const events = load('nested_params');
  const model = nanModel(events);
  const f = model.found!;
  const rows = gradientRows(f.gradient, gradientDtype(model.linear), gradientLeafAvals(model.linear));

  it('has one row per leaf, labelled by its key path, with its aval', () => {
    expect(rows.map((r) => [r.label, r.aval, r.status])).toEqual([
      ["args[0]['a']['c'][0]", 'f32[2]', 'shown'],
      ["args[0]['a']['w']", 'f32[2]', 'shown'],
      ["args[0]['b']", 'f32[70,70]', 'too-large'],
      ['args[1]', 'f32[]', 'shown'],
      ['args[2]', null, 'not-differentiated'],
    ]);
    expect(rows[0]!.cells!.map((c) => c.text)).toEqual(['3.0', '3.0']);
    expect(rows[1]!.cells!.map((c) => [c.text, c.bad])).toEqual([
      ['inf', true],
      ['0.707107', false],
    ]);
    expect(rows[1]!.bad).toBe(1);
    expect(rows.flatMap((r) => r.cells ?? []).some((c) => c.text.includes('[object'))).toBe(false);
  });

  it('says which applies: not differentiated, or too large to show', () => {
    expect(gradientStatusText(rows[2]!)).toMatch(/^too large to show: over 4,096 elements/);
    expect(gradientStatusText(rows[4]!)).toMatch(/^not differentiated/);
    expect(gradientStatusText(rows[4]!)).not.toContain('too large');
    // Without the leaves' avals the leaves are still walked by key path; a null argument says
    // it may be either.
    const guessed = gradientRows(f.gradient);
    expect(guessed.map((r) => r.label)).toContain("args[0]['a']['w']");
    expect(guessed.find((r) => r.label === "args[0]['b']")?.status).toBe('too-large');
    expect(guessed.at(-1)?.status).toBe('unknown');
    expect(gradientStatusText(guessed.at(-1)!)).toContain('either not differentiated');
  });

  it('caps a leaf at 64 cells and counts the rest', () => {
    const big = Array.from({ length: 100 }, (_, i) => (i === 90 ? 'nan' : i));
    const [row] = gradientRows([big]);
    expect(row!.cells).toHaveLength(64);
    expect(row!.more).toBe(36);
    expect(row!.bad).toBe(1);
  });

  it('renders a row per leaf, the first 40 of hundreds, and no [object Object]', () => {
    const html = renderView(View, events);
    expect(html).not.toContain('[object Object]');
    expect(html).toContain(`data-path="args[0]['a']['w']"`);
    expect(html.match(/data-testid="gradient-row"/g)).toHaveLength(5);
    expect(html).toContain('data-status="not-differentiated"');
    // 150 parameter leaves (a transformer's): 40 rows and a button for the rest.
    const many = structuredClone(events);
    const found = many.find((e) => e.type === 'nonfinite_found')!;
    const params = Object.fromEntries(Array.from({ length: 150 }, (_, i) => [`p${i}`, [1, 2]]));
    (found as { gradient: unknown }).gradient = [params];
    const manyHtml = renderView(View, many);
    expect(manyHtml.match(/data-testid="gradient-row"/g)).toHaveLength(40);
    expect(manyHtml).toContain('Show all 150 leaves');
  });
});
