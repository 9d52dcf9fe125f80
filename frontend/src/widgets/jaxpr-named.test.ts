/**
 * The jaxpr text of a jitted function whose inner jaxprs JAX names and prints BEFORE the
 * top-level jaxpr (`let g = { lambda ... } in` ... `{ lambda ; be. let bf = jit[name=g jaxpr=g] be
 * in (bf,) }`): the eqns map to the top-level body, the named jaxprs fold as one block. The texts
 * and views are JAX's own (`test-fixtures/named-jaxprs.py`: `jax.make_jaxpr`, `jaxpr_view`).
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { JaxprView } from '../protocol';
import { findOutLine, mapEqnLines, printsInnerJaxpr, visibleRows } from './jaxpr-lines';

interface Case {
  view: JaxprView;
  truth: { text: string; top_lambda_line: number; named: string[]; primitives: string[] };
}

const cases = JSON.parse(
  readFileSync(fileURLToPath(new URL('../../test-fixtures/named-jaxprs.json', import.meta.url)), 'utf8'),
) as Record<string, Case>;

describe.each(Object.keys(cases))('named jaxprs before the top-level jaxpr: %s', (name) => {
  const { view, truth } = cases[name] as Case;
  const layout = mapEqnLines(
    view.text,
    view.eqns.map((e) => e.text),
  );
  const nested = new Set(view.eqns.filter((e) => e.inner_jaxprs.length > 0).map((e) => e.index));

  it("is JAX's text, named jaxprs first", () => {
    expect(view.text).toBe(truth.text);
    expect(truth.top_lambda_line).toBeGreaterThan(0);
    expect(layout.top).toBe(truth.top_lambda_line);
    expect(layout.named).toEqual(truth.named);
    expect(view.eqns.map((e) => e.primitive)).toEqual(truth.primitives);
  });

  it("maps each top-level eqn to its line in the top-level body, none to a named jaxpr's", () => {
    expect(layout.spans).toHaveLength(truth.primitives.length);
    for (const [i, span] of layout.spans.entries()) {
      expect(span.start).toBeGreaterThanOrEqual(truth.top_lambda_line);
      const line = layout.lines[span.start] ?? '';
      // The eqn's binder and primitive, as JAX printed them for this eqn alone.
      const head = (view.eqns[i]?.text ?? '').split('\n')[0] ?? '';
      expect(line).toContain(head.slice(0, head.indexOf(truth.primitives[i] ?? '') + (truth.primitives[i] ?? '').length));
    }
    for (let l = 0; l < truth.top_lambda_line; l++) expect(layout.lineToEqn[l]).toBeNull();
    // The jitted g is called as `jit[name=g jaxpr=g]` in the top-level body.
    expect(layout.lines[layout.spans[0]?.start ?? -1]).toContain('jit[name=g jaxpr=g]');
  });

  it('folds the named jaxprs to one row and keeps the top-level lambda and its eqns', () => {
    const rows = visibleRows(layout, nested, true);
    expect(rows[0]).toEqual({ kind: 'named', eqn: null, hidden: truth.top_lambda_line, names: truth.named });
    const shown = rows.slice(1).map((r) => (r.kind === 'line' ? layout.lines[r.line] : null));
    expect(shown.join('\n')).toBe(truth.text.split('\n').slice(truth.top_lambda_line).join('\n'));
    expect(shown[0]).toMatch(/^\{ lambda ; /);
    for (const span of layout.spans) expect(rows.some((r) => r.kind === 'line' && r.line === span.start)).toBe(true);
    // An eqn calling a named jaxpr (`jit[name=g jaxpr=g]`) prints no inner jaxpr: not folded.
    expect(nested.size).toBeGreaterThan(0);
    for (const span of layout.spans) expect(printsInnerJaxpr(layout, span)).toBe(false);
    expect(rows.filter((r) => r.kind === 'fold')).toEqual([]);
    // Unfolded: every line of JAX's text, in order.
    const all = visibleRows(layout, new Set(), false);
    expect(all.map((r) => (r.kind === 'line' ? layout.lines[r.line] : '?')).join('\n')).toBe(truth.text);
  });

  it("finds the top-level jaxpr's `in (...)`, not a named jaxpr's", () => {
    const out = findOutLine(layout.lines);
    expect(out).toBeGreaterThanOrEqual(truth.top_lambda_line);
  });
});
