import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadEvents, loadTruth } from '../../frontend/test-fixtures/load';
import { avalText } from '../../frontend/src/widgets/format';
import {
  ROW_AVALS,
  argsDiff,
  argsNote,
  codeSpans,
  failureBanner,
  failureFamily,
  leavesOf,
  rowAvals,
  rowMark,
  tracingModel,
} from './view-model';

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

describe('the calls table says which argument leaves changed since the previous call', () => {
  it('marks the one aval of a teaching snippet that changed, by its name', () => {
    const model = tracingModel(loadEvents('tracing-where'));
    const changed = model.calls.map((r) => r.args.changed.map((l) => l.path));
    expect(changed).toEqual([[], [], ['x'], ['x', 'y']]);
    expect(model.calls.map((r) => r.argsNote)).toEqual([
      '2 leaves',
      '2 leaves, same avals as call #0',
      '1 of 2 leaves changed since call #1: x: f32[3] → f32[4]',
      // y came from a Python float (weak); the dtype change makes it a float16 array
      '2 of 2 leaves changed since call #2: x: f32[4] → f16[3]; y: ~f32[] → f16[]',
    ]);
    expect(model.calls[2]?.args.leaves.map((l) => l.before !== undefined)).toEqual([true, false]);
  });

  // A stack of 27 parameter leaves called again: the same, one more token, then float16/int16.
  const model = tracingModel(loadEvents('tracing-params-calls'));
  /** JAX's own account of a miss (`jax_explain_cache_misses`): `* at tokens, now i32[5] and before
   * i32[4]`, an aval written `f16[8,8]{weak_type=False}` where the weak types differ. */
  const jaxSays = (explanation: string): { path: string; now: string; before: string }[] =>
    [...explanation.matchAll(/^\s*\* at (.+), now (\S+) and before (\S+?)(?:https:\S*)?$/gm)].map((m) => {
      const aval = (s: string): string => (s.endsWith('{weak_type=True}') ? '~' : '') + s.replace(/\{weak_type=\w+\}$/, '');
      return { path: m[1] ?? '', now: aval(m[2] ?? ''), before: aval(m[3] ?? '') };
    });

  it("names each leaf by the staged jaxpr's keypath and summarizes a model's row", () => {
    expect(model.calls.map((r) => r.args.leaves.map((l) => l.path))).toEqual(
      model.calls.map(() => model.staged?.jaxpr.arg_names),
    );
    expect(model.calls.map((r) => r.args.changed.length)).toEqual([0, 0, 1, 27]);
    expect(model.calls[0]?.argsNote).toBe('27 leaves');
    expect(model.calls[1]?.argsNote).toBe('27 leaves, same avals as call #0');
    expect(model.calls[2]?.argsNote).toBe('1 of 27 leaves changed since call #1: tokens: i32[4] → i32[5]');
    expect(model.calls[3]?.argsNote).toBe(
      "27 of 27 leaves changed since call #2: params['emb']: f32[16,8] → f16[16,8]; " +
        "params['head']: f32[8,16] → f16[8,16]; params['layers'][0]['b_in']: f32[8] → f16[8]; +24 more",
    );
  });

  it("finds the leaves JAX's cache-miss explanation names, with the same avals", () => {
    const grown = model.calls[2];
    expect(grown?.args.changed.map((l) => ({ path: l.path, now: avalText(l.aval), before: avalText(l.before ?? l.aval) }))).toEqual(
      jaxSays(grown?.call.explanation ?? ''),
    );
    // JAX compares with the closest cached key (call #0's tokens, i32[4]), the row with the
    // previous call (#2's, i32[5]): the leaves and their new avals agree.
    const cast = model.calls[3];
    const said = jaxSays(cast?.call.explanation ?? '');
    expect(said.length).toBe(27);
    expect(cast?.args.changed.map((l) => [l.path, avalText(l.aval)])).toEqual(said.map((s) => [s.path, s.now]));
  });

  it('compares no leaves when the structure changed, and numbers unnamed leaves', () => {
    const [first, second] = model.calls.map((r) => r.call);
    if (first === undefined || second === undefined) throw new Error('two calls expected');
    const typed = { ...second, change: 'expr' as const, arg_avals: second.arg_avals.slice(0, 2) };
    const diff = argsDiff(typed, first, model.staged?.jaxpr.arg_names);
    expect(diff.structureChanged).toBe(true);
    expect(diff.changed).toEqual([]);
    expect(diff.leaves.map((l) => l.path)).toEqual(['leaf 0', 'leaf 1']);
    expect(argsNote(diff)).toBe("the arguments' structure changed: 2 leaves where call #0 had 27");
    expect(leavesOf(1)).toBe('1 leaf');
    expect(leavesOf(1500)).toBe('1,500 leaves');
  });
});
