import { describe, expect, it } from 'vitest';
import { loadEvents, loadTruth } from '../../test-fixtures/load';
import type { JaxprView } from '../protocol';
import { lastOf } from './events';
import { mapEqnLines, visibleRows } from './jaxpr-lines';

interface Truth {
  jaxpr_text: string;
  eqns: { primitive: string; line: number | null }[];
}

const FIXTURES = ['tracing-where', 'tracing-nested', 'tracing-c17', 'stations-mlp', 'stations-nested', 'stations-c24'];

function staged(name: string): JaxprView {
  const e = lastOf(loadEvents(name), 'jaxpr_staged');
  if (!e) throw new Error(`${name} has no jaxpr_staged`);
  return e.jaxpr;
}

describe.each(FIXTURES)('mapEqnLines on %s', (name) => {
  const jaxpr = staged(name);
  const truth = loadTruth<Truth>(name);
  const layout = mapEqnLines(
    jaxpr.text,
    jaxpr.eqns.map((e) => e.text),
  );

  it('maps the text that make_jaxpr prints', () => {
    expect(jaxpr.text).toBe(truth.jaxpr_text);
    expect(layout.lines.join('\n')).toBe(truth.jaxpr_text);
  });

  it("puts each eqn on a line that starts with JAX's printout of it and names its primitive", () => {
    expect(layout.spans).toHaveLength(truth.eqns.length);
    layout.spans.forEach((span, i) => {
      const first = (layout.lines[span.start] ?? '').trim();
      expect(first).toBe((jaxpr.eqns[i]?.text ?? '').split('\n')[0]);
      // The primitive JAX's own jaxpr object has at this position.
      expect(first).toMatch(new RegExp(`= ${truth.eqns[i]?.primitive}(\\[|\\s|$)`));
    });
  });

  it('covers the body contiguously, from after `let` to before `in`', () => {
    const body = layout.lines.findIndex((l) => l.trimEnd().endsWith('let')) + 1;
    const out = layout.lines.length - 1 - [...layout.lines].reverse().findIndex((l) => /^ {2}in[ (]/.test(l));
    expect(layout.spans[0]?.start).toBe(body);
    for (let i = 1; i < layout.spans.length; i++) {
      expect(layout.spans[i]?.start).toBe(layout.spans[i - 1]?.end);
    }
    expect(layout.spans.at(-1)?.end).toBe(out);
    for (let l = 0; l < layout.lines.length; l++) {
      expect(layout.lineToEqn[l] !== null).toBe(l >= body && l < out);
    }
  });
});

describe('multi-line eqns', () => {
  const jaxpr = staged('tracing-nested');
  const layout = mapEqnLines(
    jaxpr.text,
    jaxpr.eqns.map((e) => e.text),
  );
  const lengths = layout.spans.map((s) => s.end - s.start);

  it('gives an eqn with inner jaxprs all the lines JAX printed for it', () => {
    const prims = jaxpr.eqns.map((e) => e.primitive);
    expect(prims).toEqual(['transpose', 'dot_general', 'custom_jvp_call', 'gt', 'jit', 'add', 'scan']);
    expect(lengths).toEqual([1, 4, 13, 1, 8, 1, 12]);
    // The last line of each multi-line eqn is JAX's closing `] invars`.
    for (const span of layout.spans.filter((s) => s.end - s.start > 1)) {
      expect(layout.lines[span.end - 1]?.trim()).toMatch(/^\] /);
    }
  });

  it('folds the nested eqns to their first and last line', () => {
    const nested = new Set(jaxpr.eqns.filter((e) => e.inner_jaxprs.length > 0).map((e) => e.index));
    expect([...nested]).toEqual([2, 4, 6]);
    const rows = visibleRows(layout, nested);
    const folds = rows.filter((r) => r.kind === 'fold');
    expect(folds.map((f) => f.hidden)).toEqual([11, 6, 10]);
    expect(rows.length).toBe(layout.lines.length - 27 + 3);
    expect(visibleRows(layout, new Set()).length).toBe(layout.lines.length);
  });

  it('falls back to the eqn indentation when an eqn printout does not match', () => {
    const garbled = mapEqnLines(
      jaxpr.text,
      jaxpr.eqns.map(() => 'no such line'),
    );
    expect(garbled.spans.map((s) => s.start)).toEqual(layout.spans.map((s) => s.start));
  });
});
