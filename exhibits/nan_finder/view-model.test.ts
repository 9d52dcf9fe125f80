import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { Event } from '../../frontend/src/protocol';
import {
  cells,
  cureLines,
  cursorSelection,
  eqnLine,
  forwardVerdict,
  gradientDtype,
  gradientRows,
  callText,
  headline,
  insidePath,
  landingSelection,
  scanNotes,
  hiddenText,
  nanModel,
  nonfiniteSummary,
  stepRows,
  stepSelection,
  stepWantsDetail,
  type MarkedValue,
} from './view-model';
import { fixtureLoader, goldenLoader } from '../../frontend/src/test/fixtures';
import { splitList } from '../../frontend/src/test/list-ranges';
import { applyItemsSent } from '../../frontend/src/store/list-ranges';

// Captured from the real probe by fixtures/capture.py (never written by hand).
const load = fixtureLoader(import.meta.url);
const lineOf = (source: string, text: string): number => source.split('\n').findIndex((l) => l.includes(text)) + 1;
const example = (name: string): string =>
  readFileSync(fileURLToPath(new URL(`./examples/${name}.py`, import.meta.url)), 'utf8');

describe('where_sqrt (C22 broken): lands on the sqrt on line 7', () => {
  const events = load('where_sqrt');
  const model = nanModel(events);
  const f = model.found;

  it('finds the NaN at the mul that sqrt emitted, line 7', () => {
    expect(f?.found).toBe(true);
    expect(headline(model, false)).toBe('Step 3 wrote a NaN: mul (from sqrt) on line 7.');
    // counted from 1, as the steps table's third row (the event's step is 2)
    expect(f?.step).toBe(2);
    expect(landingSelection(f!)).toEqual({ origin: 'eqn', lines: [7], eqnIndices: [f!.eqn_index], opLines: [] });
  });

  it('replays one step per event, the last one non-finite', () => {
    const counts = events.map((_, k) => nanModel(events.slice(0, k + 1)).steps.length);
    events.forEach((e, k) => {
      const before = k === 0 ? 0 : counts[k - 1];
      expect(counts[k]).toBe(before! + (e.type === 'transpose_stepped' ? 1 : 0));
    });
    const rows = stepRows(model.steps);
    expect(rows.map((r) => r.status)).toEqual(['finite', 'finite', 'nonfinite']);
    expect(rows[2]?.origin).toBe('mul (from sqrt)');
    expect(eqnLine(model.steps[1]!.eqn_text)).toBe('f:f32[3] = jit[name=_where …] b c e');
    expect(eqnLine(model.steps[2]!.eqn_text)).toBe('e:f32[3] = mul d a');
    expect(stepSelection(model.steps[2]!).lines).toEqual([7]);
    // Mid-walk the headline says so, and nothing is found yet.
    const mid = nanModel(events.slice(0, events.findIndex((e) => e.type === 'transpose_stepped') + 1));
    expect(mid.found).toBeUndefined();
    expect(headline(mid, true)).toBe('Walking the backward pass… step 1');
  });

  it('marks the NaN/Inf elements of the values in and out', () => {
    const [arriving, residual] = f!.values_in;
    expect(cells(arriving!)?.map((c) => c.bad)).toEqual([false, false, false]);
    expect(cells(residual!)?.map((c) => [c.text, c.bad])).toEqual([
      ['nan', true],
      ['inf', true],
      ['0.25', false],
    ]);
    expect(nonfiniteSummary(f!.values_out[0]!)).toBe('2 elements NaN/Inf, at flat index 0, 1');
    expect(gradientRows(f!.gradient)[0]?.cells?.map((c) => c.bad)).toEqual([true, true, false]);
  });

  it('says the forward sqrt(-1) was already NaN, as jax_debug_nans sees it', () => {
    expect(forwardVerdict(f!)).toContain('was already NaN/Inf (at flat index 0)');
    expect(forwardVerdict(f!)).toContain('FloatingPointError: invalid value (nan) encountered in sqrt');
  });

  it('shows the cure as the exact before/after of line 7', () => {
    const lines = cureLines(f!.cure!);
    const src = example('where_sqrt').split('\n');
    expect(lines.before).toEqual([{ n: 7, text: src[6], changed: true }]);
    expect(lines.after.map((l) => l.changed)).toEqual([true, true]);
    expect(lines.after[0]?.text).toBe('    safe_x = jnp.where(x > 0, x, 1.0)');
    expect(f!.cure!.verified).toBe(true);
  });
});

describe('the stepper: the editor line and the highlighted eqn follow the cursor', () => {
  it('where_sqrt: each step under the cursor is selected, the landing once the finding is reached', () => {
    const events = load('where_sqrt');
    const found = events.findIndex((e) => e.type === 'nonfinite_found');
    events.forEach((e, k) => {
      const prefix = nanModel(events.slice(0, k + 1));
      const sel = cursorSelection(prefix);
      if (k >= found) {
        expect(sel).toEqual(landingSelection(prefix.found!, prefix.steps));
      } else if (prefix.current === undefined) {
        expect(sel).toBeNull();
      } else {
        const step = prefix.current;
        expect(e.type === 'transpose_stepped' ? e : step).toBe(step);
        expect(sel).toEqual({ origin: 'eqn', lines: [step.source!.line], eqnIndices: [step.eqn_index], opLines: [] });
      }
    });
    // Step 0 (g = reduce_sum f) highlights its own eqn, not the NaN step's `e = mul d a`.
    const step0 = events.findIndex((e) => e.type === 'transpose_stepped');
    const m0 = nanModel(events.slice(0, step0 + 1));
    expect(eqnLine(m0.current!.eqn_text)).toMatch(/^g:f32\[\] = reduce_sum/);
    expect(cursorSelection(m0)?.eqnIndices).toEqual([m0.current!.eqn_index]);
    expect(cursorSelection(m0)?.eqnIndices).not.toEqual([nanModel(events).found!.eqn_index]);
  });

  it('scan_sqrt: step 0 is the reduce_sum on the return line; the finding is the sqrt inside the body', () => {
    const events = load('scan_sqrt');
    const source = example('scan_sqrt');
    const step0 = events.findIndex((e) => e.type === 'transpose_stepped');
    const m0 = nanModel(events.slice(0, step0 + 1));
    expect(m0.current?.primitive).toBe('reduce_sum');
    expect(cursorSelection(m0)).toEqual({
      origin: 'eqn',
      lines: [lineOf(source, 'return jnp.sum(hs)')],
      eqnIndices: [m0.current!.eqn_index],
      opLines: [],
    });
    const all = nanModel(events);
    const scanStep = all.steps.find((s) => s.primitive === 'scan')!;
    expect(cursorSelection(all)).toEqual({
      origin: 'eqn',
      lines: [lineOf(source, 'jnp.sqrt(x)')],
      eqnIndices: [scanStep.eqn_index],
      opLines: [],
    });
    // Before the first step nothing is selected.
    expect(cursorSelection(nanModel(events.slice(0, step0)))).toBeNull();
  });
});

describe('where_sqrt_fixed: finite', () => {
  const model = nanModel(load('where_sqrt_fixed'));
  it('reports no NaN and no landing line', () => {
    expect(model.found?.found).toBe(false);
    expect(headline(model, false)).toBe(
      `No NaN or Inf: all ${model.steps.length} steps of the backward pass wrote finite cotangents.`,
    );
    expect(landingSelection(model.found!)).toBeNull();
    expect(stepRows(model.steps).every((r) => r.status === 'finite')).toBe(true);
    expect(gradientRows(model.found!.gradient)[0]?.cells?.map((c) => c.text)).toEqual(['0.0', '0.0', '0.25']);
  });
});

describe('norm_at_zero: an Inf, no where to cure', () => {
  const f = nanModel(load('norm_at_zero')).found!;
  it('says Inf, forward finite, and why there is no cure', () => {
    expect(headline(nanModel(load('norm_at_zero')), false)).toBe('Step 1 wrote an Inf: mul (from sqrt) on line 6.');
    // sqrt(0) = 0 is finite; the residual its rule reads, 0.5/sqrt(0), is not (JAX's sqrt JVP).
    expect(0.5 / Math.sqrt(0)).toBe(Infinity);
    expect(forwardVerdict(f)).toContain('sqrt on line 6 is finite, but residual b, which the rule reads, is Inf.');
    expect(forwardVerdict(f)).toContain("its derivative factor 0.5/sqrt(x), infinite at this input while sqrt's own value");
    expect(forwardVerdict(f)).not.toContain('only the cotangent went bad');
    // With every residual finite, only the cotangent went bad.
    const finiteResiduals = { ...f, values_in: f.values_in.filter((v) => v.value.role !== 'residual') };
    expect(forwardVerdict(finiteResiduals)).toContain('is finite: only the cotangent went bad');
    expect(f.cure).toBeNull();
    expect(f.no_cure).toContain('custom_jvp');
  });
});

describe('jit_helper: the NaN is born inside a jitted helper', () => {
  const model = nanModel(load('jit_helper'));
  const f = model.found!;
  const source = example('jit_helper');

  it('names the jit call and lands on the line inside the helper', () => {
    const sqrt = lineOf(source, 'jnp.sqrt(');
    const call = lineOf(source, 'norm(w - x)');
    expect(insidePath(f)).toBe(`inside jit(norm) on line ${call}`);
    expect(callText(f.inside[0]!)).toBe(`jit(norm) on line ${call}`);
    expect(headline(model, false)).toBe(
      `Step ${f.step! + 1} went bad; inside jit(norm) on line ${call}, its step ${f.inner_step! + 1} wrote an Inf first: mul (from sqrt) on line ${sqrt}.`,
    );
    expect(model.steps[f.step!]?.primitive).toBe('jit');
    // The editor lands inside the helper; the linear jaxpr's highlighted eqn is the jit step's.
    const jitEqn = model.steps.find((s) => s.step === f.step)!.eqn_index;
    expect(landingSelection(f, model.steps)).toEqual({ origin: 'eqn', lines: [sqrt], eqnIndices: [jitEqn], opLines: [] });
  });

  it('says sqrt(0) is finite while the residual 0.5/sqrt(0) is Inf, not that only the cotangent went bad', () => {
    const sqrt = lineOf(source, 'jnp.sqrt(');
    expect(f.forward_value?.numbers).toBe(0);
    expect(forwardVerdict(f)).toContain(`sqrt on line ${sqrt} is finite, but residual b, which the rule reads, is Inf.`);
    expect(forwardVerdict(f)).toContain('0.5/sqrt(x)');
  });
});

describe('scan_sqrt: the Inf is born inside a scan body, at one iteration', () => {
  const model = nanModel(load('scan_sqrt'));
  const f = model.found!;
  const source = example('scan_sqrt');

  it('names the scan, the iteration, and the line in the body', () => {
    const sqrt = lineOf(source, 'jnp.sqrt(x)');
    const scan = lineOf(source, 'jax.lax.scan(');
    // args: xs = [1, 4, 0, 9]: iteration 2 has x = 0.
    expect(insidePath(f)).toBe(`inside scan on line ${scan}, iteration 2`);
    expect(headline(model, false)).toContain(`mul (from sqrt) on line ${sqrt}.`);
    expect(headline(model, false)).toMatch(/^Step \d+ went bad; inside scan .* wrote an Inf first/);
    // sqrt's forward value at that iteration, sqrt(0) = 0, is finite (see test_nan_finder.py).
    expect(forwardVerdict(f)).toContain(`sqrt on line ${sqrt}, iteration 2 of the scan, is finite`);
    // xs = [1, 4, 0, 9]: the saved 0.5 / sqrt(x) is infinite first at iteration 2.
    const notes = scanNotes(f);
    expect(notes[0]).toContain('last first');
    expect(notes[1]).toContain('first hold NaN/Inf at iteration 2');
  });

  it('a top-level finding has no path', () => {
    expect(insidePath(nanModel(load('where_sqrt')).found!)).toBeNull();
  });
});

describe('numbers in the cells', () => {
  it('print in the value\'s dtype as the previews do (float32 0.1, never 0.10000000149011612)', () => {
    const aval = { shape: [3], dtype: 'float32', weak_type: false, short: 'f32[3]' };
    const value = {
      label: 'residual a',
      value: { role: 'residual' as const, aval, preview: '[0.1, 0.198867, inf]', zero: false, var: 'a', nonfinite: true },
      // NestedNumbers is `Any` in the protocol (generated as an object type)
      numbers: [0.10000000149011612, 0.19886744022369385, 'inf'] as unknown as MarkedValue['numbers'],
      nonfinite_at: [2],
      nonfinite_count: 1,
    };
    expect(cells(value)?.map((c) => c.text)).toEqual(['0.1', '0.198867', 'inf']);
    // The gradient takes the dtype of the linear jaxpr's inputs; float64 digits when unknown.
    expect(gradientDtype(undefined)).toBe('float64');
    const linear = nanModel(load('jit_helper')).linear!;
    expect(gradientDtype(linear)).toBe('float32');
    // Its invars still in list ranges (design 0045): the rest could have another dtype.
    const partial = structuredClone(linear);
    const [rest] = splitList(partial.jaxpr, 'invars', 'jaxpr.invars', [1], partial.seq, partial.run_id);
    expect(gradientDtype(partial)).toBe('float64');
    expect(gradientDtype(applyItemsSent(partial, rest!) as typeof linear)).toBe('float32');
    expect(gradientRows([[0.10000000149011612, 1]], 'float32')[0]?.cells?.map((c) => c.text)).toEqual(['0.1', '1.0']);
    expect(gradientRows([[0.10000000149011612]])[0]?.cells?.map((c) => c.text)).toEqual(['0.1']);
  });
});

describe('the hidden NaN/Inf of the forward pass', () => {
  const golden = goldenLoader(import.meta.url);

  it("is read from the golden run and said with the origin's and the hider's lines", () => {
    const events = golden('where_sqrt');
    const hidden = nanModel(events).hidden;
    expect(hidden).toBeDefined();
    if (!hidden) return;
    const text = hiddenText(hidden);
    expect(text).toContain(`${hidden.count} NaN value`);
    expect(text).toContain(`${hidden.origin.primitive} at line ${hidden.origin.source?.line}`);
    expect(text).toContain(`dropped by ${hidden.hider?.text} at line ${hidden.hider?.source?.line}`);
  });

  it('is absent from a run that hides nothing', () => {
    expect(nanModel([]).hidden).toBeUndefined();
  });
});

describe('a step streamed as a summary (details on demand): its row shows LOADING and asks', () => {
  // The golden where_sqrt stream with its steps as the runner streams them once far from the
  // cursor: `without_previews` (protocol.py) leaves each ValueView's preview out (None, deferred)
  // and the runner sets a detail_id; the whole event comes back with the same seq.
  const golden = goldenLoader(import.meta.url)('where_sqrt');
  const hide = <T extends { preview?: string | null; deferred?: boolean }>(v: T): T => ({ ...v, preview: null, deferred: true });
  const summaries: Event[] = golden.map((e): Event => {
    if (e.type !== 'transpose_stepped') return e;
    return {
      ...e,
      detail_id: `d${e.seq}`,
      cts_in: e.cts_in.map(hide),
      args: e.args.map(hide),
      writes: e.writes.map((w) => ({ ...w, contribution: hide(w.contribution), running: hide(w.running) })),
    };
  });

  it('a summary row shows (loading…) for each write, not an empty cell, and wants its detail', () => {
    const whole = stepRows(nanModel(golden).steps);
    const rows = stepRows(nanModel(summaries).steps);
    const written = rows.filter((r) => r.step.writes.length > 0);
    expect(written.length).toBeGreaterThan(0);
    for (const r of written) {
      expect(stepWantsDetail(r.step)).toBe(true);
      expect(r.wrote).toContain('(loading…)');
      expect(r.wrote.split('; ')).toHaveLength(r.step.writes.length);
    }
    // the NaN marking reads `nonfinite`, which a summary keeps: the same rows are marked
    expect(rows.map((r) => r.status)).toEqual(whole.map((r) => r.status));
    // the whole events (what the detail brings back) show the previews and want nothing
    for (const r of whole) {
      expect(stepWantsDetail(r.step)).toBe(false);
      expect(r.wrote).not.toContain('(loading…)');
    }
    const first = whole.find((r) => r.step.writes.length > 0);
    expect(first?.wrote).toContain(first?.step.writes[0]?.contribution.preview?.slice(0, 10));
  });
});
