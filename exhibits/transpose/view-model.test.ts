import { describe, expect, it } from 'vitest';
import type { Event } from '../../frontend/src/protocol';
import { goldenLoader } from '../../frontend/src/test/fixtures';
import {
  accumulationSteps,
  attemptsNote,
  codeSegments,
  cotangentsSoFar,
  arrayText,
  errorText,
  fdCoverage,
  failedStep,
  fdNotCompared,
  failureHeadline,
  gradientRows,
  innerWalkTitle,
  innerWriteText,
  nestedText,
  openedSentence,
  outputLeafNote,
  previousRunning,
  previousWrite,
  roleLabel,
  ruleLocation,
  sameAsFailure,
  tableLabel,
  transposeModel,
  valueText,
  walkCapNote,
  walkStepCount,
  writeSentence,
  type GradAttempted,
  type GradientChecked,
  type LinearJaxprStaged,
  type TransposeCallOpened,
  type TransposeStepped,
  type ValueView,
} from './view-model';

// The shape of the events the probe sends for f(x) = sin(x) * x at 1.0 (previews as the probe
// writes them): linear jaxpr { lambda a b; c. let d = mul c a; e = mul b c; f = add_any d e in (f,) }.
const aval = { shape: [], dtype: 'float32', weak_type: true, short: 'f32[]' };
const v = (role: ValueView['role'], preview: string | null, name: string | null, zero = false): ValueView => ({
  role,
  aval,
  preview,
  var: name,
  zero,
  nonfinite: false,
});
const rule = { table: 'fancy_transposes', name: 'fancy_bilinear_transpose', file: 'jax/_src/lax/lax.py', line: 5018 };

const step = (n: number, eqn: number, primitive: string, writes: TransposeStepped['writes']): TransposeStepped => ({
  type: 'transpose_stepped',
  seq: 10 + n,
  run_id: 'r',
  step: n,
  eqn_index: eqn,
  primitive,
  primal_primitive: primitive === 'add_any' ? 'mul' : 'sin',
  source: { line: 7, column: 11, end_line: 7, end_column: 25, function: 'f', callers: null },
  rule,
  eqn_text: `${primitive} ...`,
  cts_in: [v('cotangent', '1.0', 'f')],
  args: [v('undefined_primal', null, 'c'), v('residual', '0.5403023', 'a')],
  writes,
  error_class: null,
  error: null,
});

const s0 = step(0, 2, 'add_any', [
  { var: 'd', mode: 'set', contribution: v('cotangent', '1.0', 'd'), running: v('cotangent', '1.0', 'd') },
  { var: 'e', mode: 'set', contribution: v('cotangent', '1.0', 'e'), running: v('cotangent', '1.0', 'e') },
]);
const s1 = step(1, 1, 'mul', [
  {
    var: 'c',
    mode: 'set',
    contribution: v('cotangent', '0.84147096', 'c'),
    running: v('cotangent', '0.84147096', 'c'),
  },
]);
const s2 = step(2, 0, 'mul', [
  {
    var: 'c',
    mode: 'accumulate',
    contribution: v('cotangent', '0.5403023', 'c'),
    running: v('cotangent', '1.3817732', 'c'),
  },
]);

const attempt = (mode: 'jit' | 'eager', ok: boolean): GradAttempted => ({
  type: 'grad_attempted',
  seq: mode === 'jit' ? 1 : 2,
  run_id: 'r',
  mode,
  ok,
  error_class: ok ? null : 'TypeError',
  message: ok ? null : 'Shapes must be 1D sequences of concrete values of integer type',
  source: null,
  explanation: null,
  fix: null,
});

const check: GradientChecked = {
  type: 'gradient_checked',
  seq: 20,
  run_id: 'r',
  argnums: [0],
  seed: '1.0',
  gradient: [1.3817732334136963, null],
  jax_grad: [1.3817732334136963, null],
  jax_vjp: [1.3817732334136963, null],
  equal_to_jax: true,
  finite_difference: [1.3817732906760363, null],
  max_abs_err: 2.1e-11,
  max_rel_err: 1.5e-11,
  leaves: [],
  compared: 1,
  not_compared: [],
  not_compared_count: 0,
  elements: 1,
  fd_sampled: 1,
  leaves_not_sent: 0,
  max_leaf_values: 4096,
  float64_walk: true,
  program_eqns: 3,
  verdict: 'agree',
  headline: 'The gradient agrees with the float64 finite differences at every element (1), within float32 precision.',
  checked: 1,
  disagreements: [],
  disagree_count: 0,
  fd_dtype: 'float64',
  rules_on_path: [],
};

/** The summary fields of a leaf whose values are sent (`size` elements). */
const sentLeaf = (size: number) => ({
  size,
  sent: true,
  equal_to_jax: true,
  max_abs: 1,
  nonfinite: 0,
  fd_sampled: size,
  fd_samples: [],
  held_at: 'float32',
  tolerance: 1e-4,
  checked: size,
  disagree: 0,
});

const leafAval = (short: string, shape: number[]) => ({ shape, dtype: 'float32', weak_type: false, short });

/** A dict argument {'b': f32[2], 'w': f32[2,3]} and an int argument, as the probe writes them. */
const dictCheck: GradientChecked = {
  ...check,
  argnums: [0],
  gradient: [[[0.5, -0.25], [[1e-7, 2, -3.123456789], [4, 5, 6]]], null],
  jax_grad: [[[0.5, -0.25], [[1e-7, 2, -3.123456789], [4, 5, 6]]], null],
  jax_vjp: [[[0.5, -0.25], [[1e-7, 2, -3.123456789], [4, 5, 6]]], null],
  finite_difference: [[[0.5000001, -0.25], [[1e-7, 2, null], [4, 5, 6]]], null],
  leaves: [
    {
      arg: 0,
      path: "args[0]['b']",
      aval: leafAval('f32[2]', [2]),
      ...sentLeaf(2),
      gradient: [0.5, -0.25],
      jax_grad: [0.5, -0.25],
      jax_vjp: [0.5, -0.25],
      finite_difference: [0.5000001, -0.25],
    },
    {
      arg: 0,
      path: "args[0]['w']",
      aval: leafAval('f32[2,3]', [2, 3]),
      ...sentLeaf(6),
      gradient: [
        [1e-7, 2, -3.123456789],
        [4, 5, 6],
      ],
      jax_grad: [
        [1e-7, 2, -3.123456789],
        [4, 5, 6],
      ],
      jax_vjp: [
        [1e-7, 2, -3.123456789],
        [4, 5, 6],
      ],
      finite_difference: [
        [1e-7, 2, null],
        [4, 5, 6],
      ],
    },
  ],
};

const events: Event[] = [attempt('jit', true), attempt('eager', true), s0, s1, s2, check];

describe('transposeModel', () => {
  it('takes the last step up to the cursor, counts all steps, and reads the check', () => {
    const m = transposeModel(events.slice(0, 4), events);
    expect(m.current?.step).toBe(1);
    expect(m.steps.map((s) => s.step)).toEqual([0, 1]);
    expect(m.allSteps).toHaveLength(3);
    expect(m.check).toBeUndefined(); // not reached by the cursor yet
    expect(m.attempts.jit?.ok).toBe(true);
    expect(transposeModel(events, events).check?.equal_to_jax).toBe(true);
  });

  it('shows a picked step only once the cursor reached it', () => {
    expect(transposeModel(events, events, 0).current?.step).toBe(0);
    expect(transposeModel(events.slice(0, 3), events, 2).current?.step).toBe(0);
  });
});

describe('writes and accumulation', () => {
  it('finds the accumulation steps and the running value each write replaced', () => {
    expect(accumulationSteps([s0, s1, s2])).toEqual([2]);
    const acc = s2.writes[0]!;
    expect(previousRunning([s0, s1, s2], s2, acc)?.preview).toBe('0.84147096');
    expect(previousRunning([s0, s1, s2], s1, s1.writes[0]!)).toBeUndefined();
    // The step whose whole event holds that value (asked for when the card shows acc).
    expect(previousWrite([s0, s1, s2], s2, acc)?.step).toBe(
      [s0, s1].reverse().find((s) => s.writes.some((w) => w.var === acc.var)),
    );
    expect(writeSentence(acc)).toContain('ad.add_tangents');
    expect(writeSentence(s1.writes[0]!)).toMatch(/^set c/);
  });

  it('keeps the latest running value per var', () => {
    const so = cotangentsSoFar([s0, s1, s2]);
    expect(so.get('c')?.preview).toBe('1.3817732');
    expect([...so.keys()].sort()).toEqual(['c', 'd', 'e']);
  });
});

describe('formatting', () => {
  it('names rule tables, roles and values', () => {
    expect(ruleLocation(rule)).toBe('jax/_src/lax/lax.py:5018');
    expect(ruleLocation(null)).toBeNull();
    expect(tableLabel('fancy_transposes')).toContain('accumulators');
    expect(roleLabel(v('undefined_primal', null, 'c'))).toBe('UndefinedPrimal');
    expect(valueText(v('cotangent', null, 'x', true))).toBe('ad.Zero(f32[])');
    expect(valueText(v('undefined_primal', null, 'c'))).toBe('UndefinedPrimal(f32[])');
    expect(valueText(undefined)).toBe('—');
  });

  it('writes nested numbers compactly and errors in scientific notation', () => {
    expect(nestedText([[1.23456789, 2], 'nan'])).toBe('[[1.234568,2],"nan"]');
    expect(nestedText(null)).toBe('—');
    expect(nestedText(Array.from({ length: 200 }, () => 1.5), 20)).toHaveLength(20);
    expect(errorText(null)).toContain('not comparable');
    expect(errorText(2.1e-11)).toBe('2.10e-11');
    expect(errorText(0)).toBe('0');
  });

  it('lists one gradient row per argument when the event has no leaves', () => {
    const rows = gradientRows(check);
    expect(rows).toHaveLength(2);
    expect(rows[0]).toMatchObject({ arg: 0, path: 'args[0]', differentiated: true, walk: '1.381773', fd: '1.381773' });
    expect(rows[1]?.differentiated).toBe(false);
  });

  it('lists one row per leaf of a pytree argument, with its key path and aval', () => {
    const rows = gradientRows(dictCheck);
    expect(rows.map((r) => [r.path, r.aval, r.differentiated])).toEqual([
      ["args[0]['b']", 'f32[2]', true],
      ["args[0]['w']", 'f32[2,3]', true],
      ['args[1]', '', false],
    ]);
    expect(rows[0]?.walk).toBe('[0.5, -0.25]');
    expect(rows[0]?.fd).toBe('[0.5000001, -0.25]');
    // one line per matrix row; the float32 columns as numpy prints float32 (formatScalar, as the
    // walk), the float64 finite differences to 7 digits, a kink as — (with a title on the page)
    expect(rows[1]?.walk).toBe('[[1e-07, 2.0, -3.123457],\n [4.0, 5.0, 6.0]]');
    expect(rows[1]?.fd).toBe('[[1e-7, 2, —],\n [4, 5, 6]]');
    expect(rows[1]?.fdKink).toBe(true);
    expect(rows[0]?.fdKink).toBe(false);
    // the reviewer's value: the float32 0.33166807889938354 is 0.331668 in the walk and here
    expect(arrayText([0.33166807889938354], 100, 'float32')).toBe('[0.331668]');
    expect(new Set(rows.map((r) => r.key)).size).toBe(3);
  });

  it('writes arrays so that lines break only between numbers', () => {
    const text = arrayText(Array.from({ length: 50 }, (_, i) => -0.001234567 * (i + 1)));
    // every space follows a comma: a wrap (at a space) never splits a number
    expect([...text.matchAll(/ /g)].every((m) => text[m.index - 1] === ',')).toBe(true);
    expect(text.split(', ')).toHaveLength(50);
    expect(arrayText([['nan', 'inf'], [1.5, '-inf']])).toBe('[[nan, inf],\n [1.5, -inf]]');
    expect(arrayText(Array.from({ length: 500 }, () => 1.5), 30)).toHaveLength(30);
    expect(arrayText(2.5)).toBe('2.5');
  });

  it('splits explanations at backticks', () => {
    expect(codeSegments('use `lax.scan` or `fori_loop`.')).toEqual([
      { text: 'use ', code: false },
      { text: 'lax.scan', code: true },
      { text: ' or ', code: false },
      { text: 'fori_loop', code: true },
      { text: '.', code: false },
    ]);
  });

  it('explains when jit and eager differ', () => {
    expect(attemptsNote(attempt('jit', false), attempt('eager', true))).toContain('abstract');
    expect(attemptsNote(attempt('jit', true), attempt('eager', true))).toBeNull();
  });
});

describe('inside a call step', () => {
  const w = (mode: 'set' | 'accumulate', preview: string | null, zero = false) => ({
    var: 'c',
    mode,
    contribution: v('cotangent', preview, 'c', zero),
    running: v('cotangent', preview, 'c', zero),
  });
  const opened = (primitive: string, name: string | null, iterations: (number | null)[], more = 0) =>
    ({
      type: 'transpose_call_opened',
      seq: 40,
      run_id: 'r',
      step: 1,
      primitive,
      name,
      walks: iterations.map((iteration) => ({ iteration, steps: [], truncated: 0 })),
      more_iterations: more,
      max_steps: 200,
      max_iterations: 3,
    }) as unknown as TransposeCallOpened;

  it('names each walk and says what the rule runs', () => {
    const scan = opened('scan', null, [9, 8, 7], 7);
    expect(scan.walks.map((x) => innerWalkTitle(scan, x))).toEqual(['iteration 9', 'iteration 8', 'iteration 7']);
    expect(openedSentence(scan)).toContain('last iteration first');
    expect(openedSentence(scan)).toContain('7 more not shown');
    const jit = opened('jit', 'norm', [null]);
    expect(innerWalkTitle(jit, jit.walks[0]!)).toBe('the body of jit(norm)');
    const cond = opened('cond', 'branch 1', [null]);
    expect(innerWalkTitle(cond, cond.walks[0]!)).toBe('the branch 1 body (the branch this cond took)');
  });

  it('writes an inner write as ct var = value', () => {
    expect(innerWriteText(w('set', '0.5'))).toBe('ct c = 0.5');
    expect(innerWriteText(w('accumulate', '1.5'))).toBe('ct c += 1.5');
    expect(innerWriteText(w('set', null, true))).toBe('ct c = 0 (symbolic zero)');
  });

  it('the model picks the opened call of the current step', () => {
    const s1 = step(1, 0, 'scan', []);
    const call = opened('scan', null, [2, 1, 0]);
    const events = [s1, call] as unknown as Event[];
    expect(transposeModel(events, events).opened?.step).toBe(1);
    expect(transposeModel([s1] as unknown as Event[], events).opened).toBeUndefined();
  });
});

describe('a backward pass that raises (no_transpose_rule: double has no transpose rule)', () => {
  const message = "Transpose rule (for reverse-mode differentiation) for 'double' not implemented";
  const failing: TransposeStepped = {
    ...step(1, 1, 'double', []),
    rule: null,
    error_class: 'NotImplementedError',
    error: message,
  };
  const raised = (mode: 'jit' | 'eager'): GradAttempted => ({
    ...attempt(mode, false),
    error_class: 'NotImplementedError',
    message,
  });
  const failure = {
    type: 'run_failed',
    seq: 30,
    run_id: 'r',
    kind: 'user_exception',
    error_class: 'NotImplementedError',
    message,
    source: { line: 12, column: null, end_line: null, end_column: null, function: '<lambda>', callers: null },
    traceback: [],
    explanation: null,
    fix: null,
    stage: 'run',
    during: 'while transposing double (the backward pass of jax.grad)',
  } satisfies Event;
  // The probe's order (docs/design/0083): the steps as walked, the failing one last, then the
  // attempts, then the run's error.
  const all: Event[] = [s0, failing, raised('jit'), raised('eager'), failure];

  it('says no check is coming once a step failed (the run ends with its error, not a check)', () => {
    // live, between the eager attempt and run_failed: no "finite differences running" note
    const linear = { type: 'linear_jaxpr_staged' } as unknown as Event;
    const live: Event[] = [linear, s0, failing, raised('jit'), raised('eager')];
    expect(transposeModel(live, live).checkComing).toBeNull();
  });

  it('finds the failing step, last, and names what is missing', () => {
    const model = transposeModel(all, all);
    expect(model.steps.map((s) => s.primitive)).toEqual(['add_any', 'double']);
    expect(failedStep(model.allSteps)).toBe(failing);
    expect(failedStep([s0, s1])).toBeUndefined();
    expect(model.current).toBe(failing);
    expect(failureHeadline(failing)).toBe('no transpose rule for double');
    expect(failureHeadline({ ...failing, primitive: 'custom_lin', rule, error_class: 'TypeError' })).toBe(
      "custom_lin's transpose rule raised TypeError",
    );
  });

  it('says the attempts failed with the run error instead of repeating it', () => {
    const model = transposeModel(all, all);
    expect(sameAsFailure(raised('jit'), model.failure)).toBe(true);
    expect(sameAsFailure(attempt('jit', false), model.failure)).toBe(false); // another error
    expect(sameAsFailure(attempt('jit', true), model.failure)).toBe(false);
    expect(sameAsFailure(raised('eager'), undefined)).toBe(false);
  });

  it('lists the entries the fd check left out (C22: gradient [nan, nan, 0.25], fd [0, kink, 0.25])', () => {
    const c22: GradientChecked = {
      ...check,
      gradient: [['nan', 'nan', 0.25]],
      finite_difference: [[0.0, null, 0.2500000000013047]],
      max_abs_err: 1.3e-12,
      max_rel_err: 5.2e-12,
      compared: 1,
      not_compared: [
        { path: 'args[0]', index: [0], gradient: 'nan', gradient_f64: 'nan', finite_difference: 0.0, why: 'the gradient is nan', reason: '' },
        {
          path: 'args[0]',
          index: [1],
          gradient: 'nan',
          gradient_f64: 'nan',
          finite_difference: null,
          why: 'a kink (no finite difference) and the gradient is nan',
          reason: 'kink',
        },
      ],
      not_compared_count: 2,
    };
    const skipped = fdNotCompared(c22);
    expect(skipped.compared).toBe(1);
    expect(skipped.more).toBe(0);
    expect(skipped.rows.map((r) => [r.where, r.gradient, r.gradientF64, r.fd, r.reason])).toEqual([
      ['args[0][0]', 'nan', 'nan', '0', 'the gradient is nan'],
      ['args[0][1]', 'nan', 'nan', 'kink', 'a kink (no finite difference) and the gradient is nan'],
    ]);
    expect(errorText(c22.max_abs_err, skipped.compared)).toBe('1.30e-12');
    // a finite gradient beside an infinite finite difference; a scalar leaf has no index
    const fdInf = fdNotCompared({
      ...check,
      compared: 0,
      max_abs_err: null,
      not_compared: [{ path: 'args[1]', index: [], gradient: 2, gradient_f64: 2, finite_difference: 'inf', why: '', reason: '' }],
      not_compared_count: 70,
    });
    // an older server's entry (no why): the reason worked out here; the float32 gradient as numpy prints it
    expect(fdInf.rows.map((r) => [r.where, r.gradient, r.reason])).toEqual([['args[1]', '2.0', 'the finite difference is inf']]);
    // the NaN-input case: the finite difference itself is nan (no kink), the probe's why shown
    const fdNan = fdNotCompared({
      ...check,
      compared: 0,
      max_abs_err: null,
      not_compared: [
        {
          path: 'args[0]',
          index: [0],
          gradient: 2,
          gradient_f64: 2,
          finite_difference: 'nan',
          why: 'the finite difference is nan (f is not finite near this point)',
          reason: 'nonfinite',
        },
      ],
      not_compared_count: 1,
    });
    expect(fdNan.rows.map((r) => [r.fd, r.reason])).toEqual([['nan', 'the finite difference is nan (f is not finite near this point)']]);
    expect(fdInf.more).toBe(69);
    expect(errorText(null, fdInf.compared)).toBe('nothing to compare (every entry is NaN, Inf or a kink)');
    // an event from an older server: no count, null meant a NaN somewhere
    expect(errorText(null, null)).toContain('not comparable');
    expect(fdNotCompared({ ...check, compared: null, not_compared: [], not_compared_count: 0 }).compared).toBeNull();
  });
});


describe('a large program (the 12-layer transformer): leaves summarised, fd sampled', () => {
  const big: GradientChecked = {
    ...check,
    gradient: [[null], null],
    jax_grad: [[null], null],
    jax_vjp: [[null], null],
    finite_difference: [[null], null],
    leaves: [
      {
        arg: 0,
        path: "args[0]['tok_emb']",
        aval: leafAval('f32[512,256]', [512, 256]),
        gradient: null,
        jax_grad: null,
        jax_vjp: null,
        finite_difference: null,
        size: 131072,
        sent: false,
        equal_to_jax: true,
        max_abs: 0.0123,
        nonfinite: 0,
        fd_sampled: 8,
        fd_samples: [
          { index: [0, 0], gradient: 0.001, finite_difference: 0.0010000002 },
          { index: [3, 7], gradient: -0.25, finite_difference: null },
        ],
        held_at: 'float32',
        tolerance: 1e-4,
        checked: 7,
        disagree: 0,
      },
    ],
    compared: 16,
    elements: 9604608,
    fd_sampled: 16,
    leaves_not_sent: 1,
    max_leaf_values: 4096,
    float64_walk: false,
    program_eqns: 2715,
  };

  it('writes a summary row for a leaf whose values are not sent', () => {
    const [row] = gradientRows(big);
    expect(row).toMatchObject({ path: "args[0]['tok_emb']", aval: 'f32[512,256]', differentiated: true });
    expect(row?.walk).toBe('131,072 elements, values not sent; max |g| 0.0123');
    expect(row?.jaxGrad).toBe('bit-identical to the walk');
    expect(row?.jaxVjp).toBe('bit-identical to the walk');
    expect(row?.fd).toBe('[0, 0] 0.001 (walk 0.001)\n[3, 7] — (walk -0.25)\n… 6 more sampled');
    expect(row?.fdKink).toBe(true);
  });

  it('says what the finite differences sampled and that the float64 walk was skipped', () => {
    const text = fdCoverage(big) ?? '';
    expect(text).toContain('Finite differences at 16 of 9,604,608 elements');
    expect(text).toContain('2,715 eqns');
    expect(text).toContain('float64 walk was skipped');
    expect(text).toContain('1 leaf of more than 4,096 elements is summarised');
    expect(fdCoverage(check)).toBe('Finite differences at every element (1).');
    expect(fdCoverage({ ...check, elements: null, fd_sampled: null })).toBeNull();
  });

  it('does not say a few of each leaf when some leaves got no sample (more leaves than samples)', () => {
    expect(fdCoverage(big)).toContain('a few of each leaf, the rest evenly spaced');
    const [leaf] = big.leaves;
    const unsampled = { ...leaf!, path: "args[0]['ln']", size: 4, fd_sampled: 0, fd_samples: [], checked: 0 };
    const text = fdCoverage({ ...big, leaves: [...big.leaves, unsampled, { ...unsampled, size: 0 }] }) ?? '';
    expect(text).not.toContain('a few of each leaf');
    expect(text).toContain('16 of 9,604,608 elements: evenly spaced; 1 leaf is not sampled at all');
  });

  it('reads the first-leaf note of a train step from the linear jaxpr', () => {
    const note = 'f returns a pytree of 5 leaves (tuple); differentiating its first leaf …';
    const linear = {
      output_leaf: { leaves: 5, kind: 'tuple', structure: '(f32[], {…})', path: '[0]', aval: 'f32[]', note, chip: null },
    } as unknown as LinearJaxprStaged;
    expect(outputLeafNote(linear)).toBe(note);
    expect(outputLeafNote(undefined)).toBeNull();
    expect(outputLeafNote({ output_leaf: null } as unknown as LinearJaxprStaged)).toBeNull();
  });
});

describe('mlp_loss golden stream: every artefact waits for its step', () => {
  // Recorded through the real sandbox (golden/mlp_loss.events.jsonl).
  const stream = goldenLoader(import.meta.url)('mlp_loss');
  const upTo = (type: string): Event[] => stream.slice(0, stream.findIndex((e) => e.type === type));

  it('before the linear jaxpr, nothing but its coming and the attempts\' is shown', () => {
    const m = transposeModel(upTo('linear_jaxpr_staged'), stream);
    expect(m.attempts).toEqual({ jit: undefined, eager: undefined });
    expect(m.linear).toBeUndefined();
    expect(m.later).toEqual({ linear: true, attempts: true, failure: false });
    expect(m.steps).toEqual([]);
    expect(m.allSteps.length).toBe(stream.filter((e) => e.type === 'transpose_stepped').length);
  });

  it('the summary first: at the last step the walk is there and the attempts are still to come', () => {
    // The probe sends the linear jaxpr and every step before the attempts (issue 36).
    const m = transposeModel(upTo('grad_attempted'), stream);
    expect(m.linear?.type).toBe('linear_jaxpr_staged');
    expect(m.steps.length).toBe(m.allSteps.length);
    expect(m.attempts).toEqual({ jit: undefined, eager: undefined });
    expect(m.later).toEqual({ linear: false, attempts: true, failure: false });
    expect(m.check).toBeUndefined();
  });

  it('while the run is still walking, the attempts are said to come (the section stays in place)', () => {
    const live = upTo('grad_attempted');
    const m = transposeModel(live, live);
    expect(m.attempts).toEqual({ jit: undefined, eager: undefined });
    expect(m.later.attempts).toBe(true);
    // before the linear jaxpr of a live run, nothing says which order the run takes
    const early = upTo('linear_jaxpr_staged');
    expect(transposeModel(early, early).later.attempts).toBe(false);
  });

  it('after the attempts and before the check, both attempts worked', () => {
    const m = transposeModel(upTo('gradient_checked'), stream);
    expect(m.attempts.jit?.ok).toBe(true);
    expect(m.attempts.eager?.ok).toBe(true);
    expect(m.later).toEqual({ linear: false, attempts: false, failure: false });
    expect(m.check).toBeUndefined();
  });

  it('after both attempts the check is said to come: recorded later, or awaited live', () => {
    const before = upTo('gradient_checked');
    expect(transposeModel(before, stream).checkComing).toBe('recorded');
    // live: the run still going, both attempts in (the finite differences run now)
    expect(transposeModel(before, before).checkComing).toBe('running');
    // live, mid-walk: the attempts not in yet, nothing said about the check
    const walking = upTo('grad_attempted');
    expect(transposeModel(walking, walking).checkComing).toBeNull();
    // the check reached, or a live run that ended without one
    expect(transposeModel(stream, stream).checkComing).toBeNull();
    const failed = { type: 'run_failed', kind: 'user_exception', message: 'x' } as unknown as Event;
    expect(transposeModel(before, [...before, failed]).checkComing).toBeNull();
  });

  it('at the end, everything is there and nothing is to come', () => {
    const m = transposeModel(stream, stream);
    expect(m.linear?.type).toBe('linear_jaxpr_staged');
    expect(m.later).toEqual({ linear: false, attempts: false, failure: false });
    expect(m.failure).toBeUndefined();
    expect(m.failedAt).toBeUndefined();
  });
});

describe('a failing walk: the error and the failing step wait for their event', () => {
  // The probe's order (docs/design/0083): the linear jaxpr, the steps as walked (the failing one
  // last), then the attempts, then run_failed.
  const linear = { type: 'linear_jaxpr_staged' } as unknown as Event;
  const failing = { ...s2, error_class: 'NotImplementedError', rule: null } as unknown as Event;
  const failed = { type: 'run_failed', kind: 'user_exception', message: 'x', error_class: 'NotImplementedError' } as unknown as Event;
  const all = [linear, s0, s1, failing, attempt('jit', false), attempt('eager', false), failed];

  it('says the run fails later, not before', () => {
    const early = transposeModel(all.slice(0, 3), all);
    expect(early.failure).toBeUndefined();
    expect(early.failedAt).toBeUndefined();
    expect(early.later.failure).toBe(true);
    const end = transposeModel(all, all);
    expect(end.failure?.error_class).toBe('NotImplementedError');
    expect(end.failedAt?.step).toBe(2);
    expect(end.later.failure).toBe(false);
  });

  it('at the failing step the attempts are still to come, and arrive after it', () => {
    const atFailing = transposeModel(all.slice(0, 4), all);
    expect(atFailing.failedAt?.step).toBe(2);
    expect(atFailing.current?.step).toBe(2);
    expect(atFailing.attempts).toEqual({ jit: undefined, eager: undefined });
    expect(atFailing.later).toEqual({ linear: false, attempts: true, failure: true });
    // the attempts' events: the current step stays the failing one
    const atEager = transposeModel(all.slice(0, 6), all);
    expect(atEager.current?.step).toBe(2);
    expect(atEager.attempts.jit?.ok).toBe(false);
    expect(atEager.attempts.eager?.ok).toBe(false);
    expect(atEager.later).toEqual({ linear: false, attempts: false, failure: true });
  });

  it('while a failing run is live, its attempts are said to come after the failing step', () => {
    const live = all.slice(0, 4);
    const m = transposeModel(live, live);
    expect(m.failedAt?.step).toBe(2);
    expect(m.later).toEqual({ linear: false, attempts: true, failure: false });
  });
});

describe('a walk past the step cap (probe.MAX_STEP_EVENTS): steps_left_out', () => {
  // The golden mlp_loss stream as a capped run sends it: the steps after the first 5 are not
  // sent and gradient_checked counts them in steps_left_out (backend: test_transpose.py checks
  // the field against the eqns of jax.linearize's linear jaxpr on a program longer than the cap).
  const golden = goldenLoader(import.meta.url)('mlp_loss');
  const all = golden.filter((e) => e.type === 'transpose_stepped').length;
  const cap = 5;
  let kept = 0;
  const capped: Event[] = golden.flatMap((e): Event[] => {
    if (e.type === 'transpose_stepped') return kept++ < cap ? [e] : [];
    if (e.type === 'gradient_checked') return [{ ...e, steps_left_out: all - cap }];
    return [e];
  });

  it('counts the steps not sent in the badge and the note, from the first step on', () => {
    const model = transposeModel(capped, capped);
    expect(all).toBeGreaterThan(cap);
    expect(model.allSteps).toHaveLength(cap);
    expect(model.stepsLeftOut).toBe(all - cap);
    // every linear eqn is one step of the walk (this program has no ref eqns)
    expect(model.allSteps.length + model.stepsLeftOut).toBe(model.linear?.jaxpr.eqns.length);
    expect(walkStepCount(model.steps.length, model.allSteps.length, model.stepsLeftOut)).toBe(
      `step ${cap} / ${cap} of ${all}`,
    );
    // with the cursor at the first step the count is already the whole run's
    const first = capped.findIndex((e) => e.type === 'transpose_stepped') + 1;
    const early = transposeModel(capped.slice(0, first), capped);
    expect(walkStepCount(early.steps.length, early.allSteps.length, early.stepsLeftOut)).toBe(
      `step 1 / ${cap} of ${all}`,
    );
    expect(walkCapNote(model.allSteps.length, model.stepsLeftOut)).toBe(
      `The backward pass has ${all} steps; the stepper shows the first ${cap} (${all - cap} not sent). ` +
        'The linear jaxpr and the gradient checked below are the whole walk\'s.',
    );
  });

  it('thousands are grouped; the whole golden stream has no note and the plain badge', () => {
    expect(walkStepCount(2000, 2000, 18001)).toBe('step 2,000 / 2,000 of 20,001');
    expect(walkStepCount(1195, 1196, 0)).toBe('step 1,195 / 1,196');
    const model = transposeModel(golden, golden);
    expect(model.stepsLeftOut).toBe(0);
    expect(walkCapNote(model.allSteps.length, model.stepsLeftOut)).toBeNull();
    expect(walkStepCount(model.steps.length, model.allSteps.length, 0)).toBe(`step ${all} / ${all}`);
  });
});
