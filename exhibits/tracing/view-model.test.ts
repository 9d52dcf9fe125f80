import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadEvents, loadTruth } from '../../frontend/test-fixtures/load';
import { ROW_AVALS, codeSpans, failureBanner, failureFamily, rowAvals, rowMark, tracingModel } from './view-model';

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

describe('the banner above the eqns, chosen by the error class', () => {
  it('keeps the concretization account for a Python if on a tracer, at the line of the if', () => {
    const model = tracingModel(loadEvents('tracing-tracer-error'));
    const banner = failureBanner(model.failure, model.staged);
    expect(banner?.family).toBe('concretization');
    expect(banner?.text).toContain(`Tracing stopped at line ${model.failure?.source?.line}`);
    expect(banner?.text).toContain('cannot branch on them');
  });

  // A real leak: scale (jitted) appends its tracer to a global list, f uses it after that trace.
  const events = loadEvents('tracing-tracer-leak');
  const truth = loadTruth<{ jaxpr_text: string; call_error_class: string; call_error_message: string }>('tracing-tracer-leak');
  const source = readFileSync(`${__dirname}/../../frontend/test-fixtures/snippets/tracer_leak.py`, 'utf8').split('\n');
  const model = tracingModel(events);
  const banner = failureBanner(model.failure, model.staged);

  it('calls a leak a leak: a tracer escaped the trace of scale, not a branch, and tracing f finished', () => {
    // JAX itself, in the capture process, fails the call of jax.jit(f) with the same class.
    expect(truth.call_error_class).toBe('UnexpectedTracerError');
    expect(model.failure?.error_class).toBe(truth.call_error_class);
    expect(model.staged?.jaxpr.text).toBe(truth.jaxpr_text);
    expect(banner?.family).toBe('leak');
    expect(banner?.text).not.toContain('Tracing stopped');
    expect(banner?.text).not.toContain('branch');
    expect(banner?.text).toContain('A tracer escaped its trace');
    // the function JAX names, at the line of its decorated def (co_firstlineno: the decorator)
    const decorator = source.findIndex((l) => l.trim() === '@jax.jit') + 1;
    expect(truth.call_error_message).toContain(`was scale at <snippet>:${decorator} traced for jit`);
    expect(banner?.text).toContain(`the trace of \`scale\` (line ${decorator})`);
    expect(banner?.text).toContain('when `jax.jit(f)` was called');
    expect(banner?.text).toContain('Tracing `f` itself finished');
  });

  it("claims no line JAX did not give: the run's source is only f's def, so no 'at line' for the use", () => {
    const defLine = source.findIndex((l) => l.startsWith('def f(')) + 1;
    expect(model.failure?.source?.line).toBe(defLine);
    expect(model.failure?.traceback).toEqual([]);
    expect(banner?.text).not.toContain(`line ${defLine}`);
  });

  it('names the constvar that holds the leaked tracer in the staged jaxpr', () => {
    const held = model.staged?.jaxpr.constvars.filter((c) => c.value_preview.includes('Tracer')) ?? [];
    expect(held.length).toBe(1);
    // the constvar JAX's text binds before the ';' and uses in the add
    expect(truth.jaxpr_text).toMatch(new RegExp(`lambda ${held[0]?.var.name}:f32\\[3\\];`));
    expect(banner?.text).toContain(`constvar \`${held[0]?.var.name}\` (${held[0]?.value_preview})`);
  });

  it('gives other tracer errors a neutral account, and ordinary exceptions none', () => {
    expect(failureFamily('NonConcreteBooleanIndexError')).toBe('other');
    expect(failureFamily('TracerIntegerConversionError')).toBe('concretization');
    const failure = model.failure;
    if (failure === undefined) throw new Error('no failure');
    const other = failureBanner({ ...failure, error_class: 'NonConcreteBooleanIndexError', message: '' }, undefined);
    expect(other?.family).toBe('other');
    expect(other?.text).toContain('JAX raised `NonConcreteBooleanIndexError` when `jax.jit(f)` was called near line');
    expect(other?.text).toContain('recorded before the error');
    expect(failureBanner({ ...failure, kind: 'user_exception' }, model.staged)).toBeNull();
    expect(codeSpans('a `b` c')).toEqual([
      { code: false, text: 'a ' },
      { code: true, text: 'b' },
      { code: false, text: ' c' },
    ]);
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

describe('rowAvals', () => {
  it('shows every aval of a short row, the first ones and a count of a long one', () => {
    const avals = Array.from({ length: 150 }, (_, i) => `f32[${i}]`);
    expect(rowAvals(avals.slice(0, 3))).toEqual({ shown: avals.slice(0, 3), more: 0 });
    expect(rowAvals(avals.slice(0, ROW_AVALS))).toEqual({ shown: avals.slice(0, ROW_AVALS), more: 0 });
    const long = rowAvals(avals);
    expect(long.shown).toEqual(avals.slice(0, ROW_AVALS));
    expect(long.more + long.shown.length).toBe(150);
  });
});
