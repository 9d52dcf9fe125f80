import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadEvents, loadTruth } from '../../frontend/test-fixtures/load';
import { rowMark, tracingModel } from './view-model';

interface Truth {
  jaxpr_text: string;
  trace_stdout: string;
  eqns: { primitive: string; line: number | null }[];
}

describe('tracing-where: sin, where, sum and a print, called again 3 times', () => {
  const events = loadEvents('tracing-where');
  const truth = loadTruth<Truth>('tracing-where');
  const model = tracingModel(events);

  it("streams JAX's eqns in order with their primitives and user lines", () => {
    expect(model.recorded.map((e) => [e.primitive, e.source?.line ?? null])).toEqual(
      truth.eqns.map((e) => [e.primitive, e.line]),
    );
    expect(model.recorded.map((e) => e.index)).toEqual(truth.eqns.map((_, i) => i));
    expect(model.staged?.jaxpr.text).toBe(truth.jaxpr_text);
  });

  it('replays the recording one eqn at a time as the cursor moves', () => {
    const counts = events.map((_, k) => tracingModel(events.slice(0, k + 1)).recorded.length);
    const firstStaged = events.findIndex((e) => e.type === 'jaxpr_staged');
    expect(counts[firstStaged]).toBe(truth.eqns.length);
    // Each eqn_recorded event adds exactly one row; no other event does.
    events.forEach((e, k) => {
      const before = k === 0 ? 0 : (counts[k - 1] ?? 0);
      expect(counts[k]).toBe(before + (e.type === 'eqn_recorded' ? 1 : 0));
    });
    expect(tracingModel(events.slice(0, firstStaged)).staged).toBeUndefined();
  });

  it('shows what Python printed while tracing, as a plain print under make_jaxpr does', () => {
    expect(model.tracePrints.map((p) => p.text).join('')).toBe(truth.trace_stdout);
  });

  it('says which calls traced again and how the cache grew', () => {
    expect(model.calls.map((r) => [r.call.call_index, r.call.change, r.call.traced, r.call.cache_size])).toEqual([
      [0, 'same', true, 1],
      [1, 'same', false, 1],
      [2, 'shape', true, 2],
      [3, 'dtype', true, 3],
    ]);
    expect(model.calls.map((r) => r.sentence)).toEqual([
      'first call → traced: cache now holds 1 entry (jaxscope emptied the tracing cache make_jaxpr had filled, so the print fires again)',
      'same shapes → no retrace (cache hit): the print stays silent; cache size stays 1',
      'new shape → traced again, cache grew to 2',
      'new dtype → traced again, cache grew to 3',
    ]);
    // A miss prints again (the trace runs the Python body); a hit prints nothing.
    expect(model.calls.map((r) => r.call.printed !== '')).toEqual([true, false, true, true]);
    expect(model.calls[2]?.call.explanation).toContain('TRACING CACHE MISS');
  });
});

describe('C17: a print inside a jitted update', () => {
  const expected = JSON.parse(readFileSync(`${__dirname}/../../frontend/test-fixtures/cases/C17_print_broken.expect.json`, 'utf8')) as {
    jaxpr: string;
    stdout_per_call: string[];
  };
  const model = tracingModel(loadEvents('tracing-c17'));

  it('prints on the traced call only, as the case records', () => {
    expect(model.staged?.jaxpr.text).toBe(expected.jaxpr);
    expect(model.calls.map((r) => r.call.printed)).toEqual(expected.stdout_per_call);
    expect(model.calls[1]?.sentence).toBe(
      'same shapes → no retrace (cache hit): the print stays silent; cache size stays 1',
    );
  });
});

describe('a Python if on a traced value', () => {
  const model = tracingModel(loadEvents('tracing-tracer-error'));
  const source = readFileSync(`${__dirname}/../../frontend/test-fixtures/snippets/tracer_if.py`, 'utf8').split('\n');

  it('fails with a tracer error at the line of the if, after recording the eqns before it', () => {
    expect(loadTruth<{ error_class: string }>('tracing-tracer-error').error_class).toBe('TracerBoolConversionError');
    expect(model.failure?.kind).toBe('tracer_error');
    expect(model.failure?.error_class).toBe('TracerBoolConversionError');
    const ifLine = source.findIndex((l) => l.trim().startsWith('if ')) + 1;
    expect(model.failure?.source?.line).toBe(ifLine);
    expect(model.recorded.length).toBeGreaterThan(0);
    expect(model.recorded.every((e) => (e.source?.line ?? 0) <= ifLine)).toBe(true);
    expect(model.staged).toBeUndefined();
  });
});

describe('rowMark', () => {
  it('marks the selected eqn and the other eqns of its line', () => {
    const sel = { eqnIndices: [2], lines: [7] };
    expect(rowMark(2, 7, sel)).toBe('selected');
    expect(rowMark(3, 7, sel)).toBe('same-line');
    expect(rowMark(4, 8, sel)).toBeNull();
    expect(rowMark(5, null, sel)).toBeNull();
  });
});
