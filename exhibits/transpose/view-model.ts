/**
 * The transpose exhibit's view model: pure functions from the run's events to what the view shows.
 *
 * The probe emits `linear_jaxpr_staged` (the linear jaxpr the backward pass walks), one
 * `transpose_stepped` per linear eqn (last eqn first, each as walked), `grad_attempted` (jit, then
 * eager), then `gradient_checked`; a walk that raises sends its failing step last, then the
 * attempts, then `run_failed` (docs/design/0083); a run whose linearisation fails (or with an int
 * input) sends the attempts first. Nothing here depends on that order. The stepper walks the
 * steps: the current step is the last `transpose_stepped` up to the cursor, or the one the user
 * picked. Every artefact is read from the events up to the cursor (as nan_finder does): stepping
 * back hides what comes later.
 */
import type { Event, EventOf, RunFailed } from '../../frontend/src/protocol';
import { listLength } from '../../frontend/src/store/list-ranges';
import { eventsOf, lastOf } from '../../frontend/src/widgets/events';
import { LOADING, formatScalar } from '../../frontend/src/widgets/format';

export type TransposeStepped = EventOf<'transpose_stepped'>;
export type LinearJaxprStaged = EventOf<'linear_jaxpr_staged'>;
export type GradientChecked = EventOf<'gradient_checked'>;
export type GradAttempted = EventOf<'grad_attempted'>;
export type TransposeCallOpened = EventOf<'transpose_call_opened'>;
export type InnerWalk = TransposeCallOpened['walks'][number];
export type ValueView = TransposeStepped['args'][number];
export type CotangentWrite = TransposeStepped['writes'][number];
export type RuleView = NonNullable<TransposeStepped['rule']>;

export interface TransposeModel {
  linear: LinearJaxprStaged | undefined;
  /** the steps up to the cursor, in walk order */
  steps: TransposeStepped[];
  /** every step of the run (for the step count) */
  allSteps: TransposeStepped[];
  /** the walk's steps after the first `MAX_STEP_EVENTS` (2,000), not sent (`gradient_checked`'s
   * `steps_left_out`, 0 when none or before the check came) */
  stepsLeftOut: number;
  /** the step shown in the card */
  current: TransposeStepped | undefined;
  /** what the current step's transpose rule walked inside (a jit/cond/scan step), once reached */
  opened: TransposeCallOpened | undefined;
  /** the gradient check, once the cursor reached it */
  check: GradientChecked | undefined;
  /** jit and eager attempts, once the cursor reached them */
  attempts: { jit: GradAttempted | undefined; eager: GradAttempted | undefined };
  /** the run's error, once the cursor reached it */
  failure: RunFailed | undefined;
  /** the step whose transpose rule raised, once the cursor reached it */
  failedAt: TransposeStepped | undefined;
  /** artefacts the run sends after the cursor: the view says "(not yet at this point of the run)" */
  later: { linear: boolean; attempts: boolean; failure: boolean };
  /** the gradient check is still to come: `recorded` when the run sent it after the cursor,
   * `running` when the run is still going with both attempts in (the finite differences take a
   * while on a big model: the section says what the run waits for), else null */
  checkComing: 'recorded' | 'running' | null;
}

/** Derive the model; `picked` is a step number the user clicked (shown when reached). */
export function transposeModel(
  events: readonly Event[],
  allEvents: readonly Event[],
  picked?: number | null,
): TransposeModel {
  // Only the events up to the cursor: a later artefact (the linear jaxpr, the attempts, the
  // error) is not shown before its step; `later` says it is coming.
  const steps = eventsOf(events, 'transpose_stepped');
  const attempts = eventsOf(events, 'grad_attempted');
  const pickedStep = picked == null ? undefined : steps.find((s) => s.step === picked);
  const linear = lastOf(events, 'linear_jaxpr_staged');
  const failure = lastOf(events, 'run_failed');
  return {
    linear,
    steps,
    allSteps: eventsOf(allEvents, 'transpose_stepped'),
    // A count of the whole run (the badge's "of N"): read from every event, not just those up to
    // the cursor, as the step count is.
    stepsLeftOut: lastOf(allEvents, 'gradient_checked')?.steps_left_out ?? 0,
    current: pickedStep ?? steps.at(-1),
    opened: eventsOf(events, 'transpose_call_opened').find((o) => o.step === (pickedStep ?? steps.at(-1))?.step),
    check: lastOf(events, 'gradient_checked'),
    attempts: {
      jit: attempts.find((a) => a.mode === 'jit'),
      eager: attempts.find((a) => a.mode === 'eager'),
    },
    failure,
    failedAt: failedStep(steps),
    later: {
      linear: !linear && lastOf(allEvents, 'linear_jaxpr_staged') !== undefined,
      attempts: attempts.length === 0 && (lastOf(allEvents, 'grad_attempted') !== undefined || attemptsComing(allEvents)),
      failure: !failure && lastOf(allEvents, 'run_failed') !== undefined,
    },
    checkComing: checkComing(events, allEvents, attempts.length),
  };
}

/** Whether (and how) the gradient check is still to come at the cursor: see `checkComing`. */
function checkComing(
  events: readonly Event[],
  allEvents: readonly Event[],
  attemptsIn: number,
): 'recorded' | 'running' | null {
  if (lastOf(events, 'gradient_checked') !== undefined) return null;
  if (lastOf(allEvents, 'gradient_checked') !== undefined) return 'recorded';
  // A step that failed ends the run with an error (the probe's _fail_after_walk), never a check.
  if (failedStep(eventsOf(allEvents, 'transpose_stepped')) !== undefined) return null;
  const going = lastOf(allEvents, 'run_finished') === undefined && lastOf(allEvents, 'run_failed') === undefined;
  return going && attemptsIn === 2 && lastOf(events, 'linear_jaxpr_staged') !== undefined ? 'running' : null;
}

/** Whether the run is still going and its attempts come after the walk: its linear jaxpr came
 * first (the probe sends the summary before the attempts when the walk works). The section stays
 * in place, saying they are not there yet, instead of appearing above the walk later. */
function attemptsComing(allEvents: readonly Event[]): boolean {
  return (
    lastOf(allEvents, 'linear_jaxpr_staged') !== undefined &&
    lastOf(allEvents, 'run_finished') === undefined &&
    lastOf(allEvents, 'run_failed') === undefined
  );
}

/** The badge of the walk: `step 12 / 2,000 of 20,001` when steps were left out. The step under the
 * cursor counts from 1, as the card, the steps table and the texts show it (the events' `step` is
 * 0-based: it stays the key and the test ids). */
export function walkStepCount(shown: number, steps: number, left: number): string {
  const n = (x: number): string => x.toLocaleString('en-US');
  return left > 0 ? `step ${n(shown)} / ${n(steps)} of ${n(steps + left)}` : `step ${n(shown)} / ${n(steps)}`;
}

/** Null when every step of the walk was sent; else the note saying the stepper stops early. */
export function walkCapNote(steps: number, left: number): string | null {
  if (left <= 0) return null;
  const n = (x: number): string => x.toLocaleString('en-US');
  return (
    `The backward pass has ${n(steps + left)} steps; the stepper shows the first ${n(steps)} ` +
    `(${n(left)} not sent). The linear jaxpr and the gradient checked below are the whole walk's.`
  );
}

/** The heading of one inner walk: `the body of jit(norm)`, `branch 1`, `iteration 3`. */
export function innerWalkTitle(opened: TransposeCallOpened, w: InnerWalk): string {
  if (w.iteration !== null && w.iteration !== undefined) return `iteration ${w.iteration}`;
  if (opened.primitive === 'cond') return `the ${opened.name ?? 'taken'} body (the branch this cond took)`;
  if (opened.primitive === 'remat2') return `the body of jax.checkpoint(${opened.name ?? '?'})`;
  return `the body of ${opened.primitive}(${opened.name ?? '?'})`;
}

/** What a call step's rule does inside, in one sentence. */
export function openedSentence(opened: TransposeCallOpened): string {
  const n = opened.walks.length;
  if (opened.primitive === 'scan') {
    const more = opened.more_iterations > 0 ? `; ${opened.more_iterations} more not shown` : '';
    return `scan's transpose runs this backward pass once per iteration, last iteration first (a scan of the transposed body): the first ${n} walked${more}.`;
  }
  if (opened.primitive === 'cond') {
    return 'cond\'s transpose runs the backward pass of the branch the forward pass took (its index is a residual).';
  }
  if (opened.primitive === 'remat2') {
    return `jax.checkpoint's transpose (remat2) recomputes ${opened.name ?? 'the function'}'s forward values from its saved inputs, then runs the backward pass of its body: here the recomputed eqns are evaluated and the linear ones walked step by step.`;
  }
  return `jit's transpose runs the backward pass of ${opened.name ?? 'the'} body, compiled as one program; here it is walked step by step.`;
}

/** `ct a += …` lines of an inner step's writes (var, mode, contribution preview). */
export function innerWriteText(w: CotangentWrite): string {
  const op = w.mode === 'accumulate' ? '+=' : '=';
  const value = w.contribution.zero ? '0 (symbolic zero)' : valueText(w.contribution);
  return `ct ${w.var} ${op} ${value}`;
}

/** `jax/_src/lax/lax.py:5018`, or null when JAX gave no location. */
export function ruleLocation(rule: RuleView | null | undefined): string | null {
  if (!rule?.file) return null;
  return rule.line == null ? rule.file : `${rule.file}:${rule.line}`;
}

/** What the rule table means, in words. */
export function tableLabel(table: string): string {
  if (table === 'fancy_transposes') return 'ad.fancy_transposes (gets the accumulators, writes itself)';
  if (table === 'primitive_transposes') return 'ad.primitive_transposes (returns cotangents)';
  return `ad.${table}`;
}

/** The badge text of an argument of a transpose rule. */
export function roleLabel(v: ValueView): string {
  switch (v.role) {
    case 'undefined_primal':
      return 'UndefinedPrimal';
    case 'residual':
      return 'residual';
    case 'literal':
      return 'literal';
    default:
      return v.role;
  }
}

/** A value's text: its preview, `ad.Zero(f32[3])` for a symbolic zero, or the aval alone. */
export function valueText(v: ValueView | undefined): string {
  if (!v) return '—';
  if (v.zero) return `ad.Zero(${v.aval.short})`;
  if (v.role === 'undefined_primal') return `UndefinedPrimal(${v.aval.short})`;
  if (v.deferred === true) return `${v.aval.short} ${LOADING}`;
  return v.preview ?? v.aval.short;
}

/** One sentence for a write: `set e` or `accumulate into e (ad.add_tangents)`. */
export function writeSentence(w: CotangentWrite): string {
  return w.mode === 'set'
    ? `set ${w.var}: its first cotangent`
    : `accumulate into ${w.var}: ad.add_tangents(previous, contribution)`;
}

/** The step numbers whose writes include an accumulation (for "jump to an accumulation"). */
export function accumulationSteps(steps: readonly TransposeStepped[]): number[] {
  return steps.filter((s) => s.writes.some((w) => w.mode === 'accumulate')).map((s) => s.step);
}

/** The running value a write replaced: the last earlier write to the same var, if any. */
export function previousRunning(
  steps: readonly TransposeStepped[],
  step: TransposeStepped,
  w: CotangentWrite,
): ValueView | undefined {
  return previousWrite(steps, step, w)?.value;
}

/**
 * The step that last wrote `w.var` before `w`, and the running value it left: an accumulation's
 * "previous" (its values come with that step's whole event: details on demand).
 */
export function previousWrite(
  steps: readonly TransposeStepped[],
  step: TransposeStepped,
  w: CotangentWrite,
): { step: TransposeStepped; value: ValueView } | undefined {
  let found: { step: TransposeStepped; value: ValueView } | undefined;
  for (const s of steps) {
    if (s.step > step.step) break;
    for (const x of s.writes) {
      if (x === w) return found;
      if (x.var === w.var) found = { step: s, value: x.running };
    }
  }
  return found;
}

/** The linear vars that received a write up to the cursor (their latest running value). */
export function cotangentsSoFar(steps: readonly TransposeStepped[]): Map<string, ValueView> {
  const out = new Map<string, ValueView>();
  for (const s of steps) for (const w of s.writes) out.set(w.var, w.running);
  return out;
}

/** Nested numbers (as the protocol writes them) as compact text, cut at `max` characters. */
export function nestedText(x: unknown, max = 240): string {
  const text = x === null || x === undefined ? '—' : JSON.stringify(x, (_k, v: unknown) => roundFloat(v));
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

function roundFloat(v: unknown): unknown {
  if (typeof v === 'number' && !Number.isInteger(v)) return Number(v.toPrecision(7));
  return v;
}

/**
 * Scientific notation for an error figure. Null: nothing was compared (`compared` 0: every entry
 * is NaN/Inf or a kink); an event without `compared` (older servers) left the figures out as soon
 * as one entry was NaN or Inf.
 */
export function errorText(x: number | null | undefined, compared?: number | null): string {
  if (x === null || x === undefined)
    return compared == null
      ? 'not comparable (NaN or Inf in the gradient)'
      : 'nothing to compare (every entry is NaN, Inf or a kink)';
  return x === 0 ? '0' : x.toExponential(2);
}

/** The verdict of the gradient check, as the view leads with it. */
export interface VerdictView {
  verdict: 'agree' | 'disagree' | 'incomplete';
  /** the tag's text */
  label: string;
  headline: string;
  /**
   * every element of the gradient and every checked finite difference is exactly 0 (`all_zero`):
   * the agreement says nothing about the rules; the gradient vanishes (the tag says so, in amber)
   */
  allZero: boolean;
}

const VERDICT_LABELS = {
  agree: 'agrees with the finite differences',
  disagree: 'disagrees with the finite differences',
  incomplete: 'not fully checked',
} as const;

/**
 * The check's verdict and headline (the probe's sentence: the first disagreeing element, or the
 * first one left out, by key path and index, the gradient in its dtype's digits); null for an
 * event from an older server, which had none.
 */
export function verdictView(check: GradientChecked): VerdictView | null {
  if (check.verdict == null) return null;
  const allZero = check.all_zero === true && check.verdict !== 'disagree';
  const label = allZero ? `${VERDICT_LABELS[check.verdict]}: all 0, f is flat here` : VERDICT_LABELS[check.verdict];
  return { verdict: check.verdict, label, headline: check.headline ?? '', allZero };
}

/** One element whose gradient disagrees with its finite difference. */
export interface FdDisagreeRow {
  key: string;
  /** `args[0][1]`: the leaf's key path, then the element's index in it */
  where: string;
  /** the walk's gradient in its leaf's dtype (the shared `formatScalar`) */
  gradient: string;
  gradientF64: string;
  fd: string;
  /** the largest |gradient - fd| the tolerance accepts there, and at which precision */
  allowed: string;
  why: string;
  kind: 'nonfinite' | 'zero' | 'off';
}

/** The dtype of the leaf at `path` (its aval's), float32 when the event does not say. */
function leafDtype(check: GradientChecked, path: string): string {
  return (check.leaves ?? []).find((l) => l.path === path)?.aval.dtype ?? 'float32';
}

/** `args[0]['w'][1, 2]`: a leaf's key path and an element's index in it. */
function elementWhere(path: string, index: readonly number[]): string {
  return index.length === 0 ? path : `${path}[${index.join(', ')}]`;
}

/**
 * The disagreements (the first 64; `more` counts the rest), the gradient in its leaf's dtype as
 * numpy prints it (`0.3333` for a float16 0.333251953125), the float64 columns at 7 significant
 * digits.
 */
export function fdDisagreements(check: GradientChecked): { rows: FdDisagreeRow[]; more: number } {
  const listed = check.disagreements ?? [];
  const rows = listed.map((d, i) => ({
    key: `${i}`,
    where: elementWhere(d.path, d.index),
    gradient: scalarText(d.gradient, leafDtype(check, d.path)),
    gradientF64: numberText(d.gradient_f64),
    fd: numberText(d.finite_difference),
    allowed: `${Number(d.allowed.toPrecision(2))} (${d.dtype})`,
    why: d.why,
    kind: d.kind,
  }));
  return { rows, more: Math.max(0, (check.disagree_count ?? 0) - rows.length) };
}

/** The key of the gradient table's row (`arg:leaf`) holding the first disagreement, if any. */
export function firstDisagreementRow(check: GradientChecked): string | null {
  const first = (check.disagreements ?? [])[0];
  if (!first) return null;
  const leaves = check.leaves ?? [];
  const leaf = leaves.find((l) => l.path === first.path);
  if (!leaf) return null;
  const j = leaves.filter((l) => l.arg === leaf.arg).indexOf(leaf);
  return `${leaf.arg}:${j}`;
}

/** What a left-out element's missing finite difference was, for its cell. */
const LEFT_OUT_FD: Readonly<Record<string, string>> = {
  kink: 'kink',
  rounded: 'f rounds it',
  not_sampled: 'not sampled',
};

/** One element the check left out: a kink, a NaN/Inf difference, an input f rounds... */
export interface FdSkipRow {
  key: string;
  /** `args[0][1]`: the leaf's key path, then the element's index in it */
  where: string;
  gradient: string;
  gradientF64: string;
  fd: string;
  /** why it was left out */
  reason: string;
}

function nonfinite(v: unknown): boolean {
  return v === 'nan' || v === 'inf' || v === '-inf';
}

/** What a `null` finite difference means, for the cell's title. */
export const NO_FD_TITLE =
  'no finite difference here: a kink (the one-sided differences disagree), or an element not sampled';

/**
 * The elements the check left out (at most 64 listed; `more` counts the rest), and how many the
 * error figures compare (`null` for an event from an older server). The walk's gradient in its
 * leaf's dtype (the shared `formatScalar`), the float64 columns at 7 significant digits, a
 * missing finite difference named by its reason; the reason is the probe's `why` (older
 * servers: worked out here).
 */
export function fdNotCompared(check: GradientChecked): { rows: FdSkipRow[]; more: number; compared: number | null } {
  const listed = check.not_compared ?? [];
  const rows = listed.map((n, i) => ({
    key: `${i}`,
    where: elementWhere(n.path, n.index),
    gradient: scalarText(n.gradient, leafDtype(check, n.path)),
    gradientF64: numberText(n.gradient_f64),
    fd:
      n.finite_difference === null || n.finite_difference === undefined
        ? (LEFT_OUT_FD[n.reason ?? ''] ?? 'kink')
        : numberText(n.finite_difference),
    reason:
      n.why ||
      (nonfinite(n.gradient) || nonfinite(n.gradient_f64)
        ? `the gradient is ${nonfinite(n.gradient) ? String(n.gradient) : String(n.gradient_f64)}`
        : `the finite difference is ${String(n.finite_difference)}`),
  }));
  return { rows, more: Math.max(0, (check.not_compared_count ?? 0) - rows.length), compared: check.compared ?? null };
}

/** Significant digits of the float64 columns (finite differences agree to ~1e-9). */
const TABLE_DIGITS = 7;

function numberText(v: unknown): string {
  if (v === null || v === undefined) return '—';
  if (typeof v === 'number') return Number.isInteger(v) ? String(v) : String(Number(v.toPrecision(TABLE_DIGITS)));
  return String(v); // "nan", "inf", "-inf"
}

/** One value of an array of `dtype`, as the shared rule prints it (`formatScalar`). */
function scalarText(v: unknown, dtype: string): string {
  if (typeof v === 'number' || typeof v === 'string') return formatScalar(v, dtype);
  return numberText(v);
}

function arrayLines(x: unknown, indent: string, text: (v: unknown) => string): string {
  if (!Array.isArray(x)) return text(x);
  if (x.length === 0) return '[]';
  if (x.every((e) => !Array.isArray(e))) return `[${x.map(text).join(', ')}]`;
  const inner = indent + ' ';
  return `[${x.map((e) => arrayLines(e, inner, text)).join(`,\n${inner}`)}]`;
}

/**
 * One array (nested lists as the protocol writes them) as readable text, separated by `, ` (so a
 * line wraps between numbers, never inside one), one line per row of a matrix; cut at `max`
 * characters with `…`. With a `dtype`, each number as the shared rule prints a value of that
 * dtype (`formatScalar`: `0.331668` for a float32, as in the walk); without one (the float64
 * finite differences), 7 significant digits and `—` where there is none (a kink).
 */
export function arrayText(x: unknown, max = 2000, dtype?: string): string {
  const text = arrayLines(x, '', dtype === undefined ? numberText : (v) => scalarText(v, dtype));
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** Whether nested numbers hold a `null` (a finite difference not known). */
export function hasNull(x: unknown): boolean {
  return x === null || (Array.isArray(x) && x.some(hasNull));
}

/** One row of the gradient table: a leaf of an argument with its gradients. */
export interface GradientRow {
  key: string;
  arg: number;
  /** `args[0]['b1']` (the leaf's key path, as `jax.tree_util.keystr` writes it after `args[i]`) */
  path: string;
  /** `f32[16]`; empty for an argument not differentiated */
  aval: string;
  differentiated: boolean;
  walk: string;
  jaxGrad: string;
  jaxVjp: string;
  fd: string;
  /** the finite differences hold a `—` (a kink or an element not sampled) */
  fdKink: boolean;
}

/**
 * One row per leaf of each differentiated argument (key path, aval, values), one row for each
 * argument not differentiated, in argument order. Events without `leaves` (older servers) get
 * one row per argument.
 */
export function gradientRows(check: GradientChecked): GradientRow[] {
  const gradient = check.gradient as unknown[];
  const leaves = check.leaves ?? [];
  // A summary (details on demand): the figures are here, the values come with the whole event.
  const summarised = check.detail_id != null;
  const rows: GradientRow[] = [];
  gradient.forEach((g, i) => {
    const differentiated = check.argnums.includes(i);
    const mine = leaves.filter((l) => l.arg === i);
    if (differentiated && mine.length > 0) {
      mine.forEach((l, j) =>
        rows.push(
          l.sent === false
            ? summaryRow(`${i}:${j}`, i, l)
            : summarised
              ? loadingRow(`${i}:${j}`, i, l)
              : {
                key: `${i}:${j}`,
                arg: i,
                path: l.path,
                aval: l.aval.short,
                differentiated,
                walk: arrayText(l.gradient, 2000, l.aval.dtype),
                jaxGrad: arrayText(l.jax_grad, 2000, l.aval.dtype),
                jaxVjp: arrayText(l.jax_vjp, 2000, l.aval.dtype),
                fd: arrayText(l.finite_difference),
                fdKink: hasNull(l.finite_difference),
              },
        ),
      );
      return;
    }
    rows.push({
      key: `${i}`,
      arg: i,
      path: `args[${i}]`,
      aval: '',
      differentiated,
      walk: arrayText(g),
      jaxGrad: arrayText((check.jax_grad as unknown[])[i]),
      jaxVjp: arrayText((check.jax_vjp as unknown[])[i]),
      fd: arrayText((check.finite_difference as unknown[])[i]),
      fdKink: hasNull((check.finite_difference as unknown[])[i]),
    });
  });
  return rows;
}

type GradientLeaf = NonNullable<GradientChecked['leaves']>[number];

/**
 * How many rows of the gradient table are still to come: a check too large for one line (a
 * jitted GPT stack's, 2.4 MB) has its `leaves` in list ranges (design 0045), and the table asks
 * for them as it shows them; 0 once every leaf arrived (or for a check sent whole). The count is
 * the whole list's (`listLength`), never the loaded one.
 */
export function leavesToCome(check: GradientChecked): number {
  return Math.max(0, listLength(check, 'leaves') - (check.leaves ?? []).length);
}

/** The row of a leaf whose values are still in the worker (the event is a summary). */
function loadingRow(key: string, arg: number, l: GradientLeaf): GradientRow {
  const same = l.equal_to_jax === true ? 'bit-identical to the walk' : l.equal_to_jax === false ? 'differs from the walk' : LOADING;
  return {
    key,
    arg,
    path: l.path,
    aval: l.aval.short,
    differentiated: true,
    walk: LOADING,
    jaxGrad: same,
    jaxVjp: same,
    fd: LOADING,
    fdKink: false,
  };
}

/** At most this many finite-difference samples are written in a summarised leaf's row. */
export const FD_SAMPLES_SHOWN = 6;

/**
 * The row of a leaf too large for its values to be sent (`sent` false): the walk's column says
 * how many elements and the largest |gradient|, the jax.grad/jax.vjp columns whether this leaf is
 * bit-identical to the walk's, the finite-difference column the sampled elements (`[i, j] fd`).
 */
function summaryRow(key: string, arg: number, l: GradientLeaf): GradientRow {
  const same = l.equal_to_jax === true ? 'bit-identical to the walk' : l.equal_to_jax === false ? 'differs from the walk' : '';
  const bad = (l.nonfinite ?? 0) > 0 ? `, ${(l.nonfinite ?? 0).toLocaleString('en-US')} NaN/Inf` : '';
  const max = l.max_abs == null ? '' : `; max |g| ${scalarText(l.max_abs, l.aval.dtype)}`;
  const samples = l.fd_samples ?? [];
  const shown = samples
    .slice(0, FD_SAMPLES_SHOWN)
    .map((s) => `[${s.index.join(', ')}] ${numberText(s.finite_difference)} (walk ${scalarText(s.gradient, l.aval.dtype)})`);
  const more = (l.fd_sampled ?? 0) - shown.length;
  if (more > 0) shown.push(`… ${more} more sampled`);
  return {
    key,
    arg,
    path: l.path,
    aval: l.aval.short,
    differentiated: true,
    walk: `${(l.size ?? 0).toLocaleString('en-US')} elements, values not sent${max}${bad}`,
    jaxGrad: same,
    jaxVjp: same,
    fd: shown.length > 0 ? shown.join('\n') : 'not sampled',
    fdKink: samples.some((s) => s.finite_difference === null),
  };
}

/**
 * What the finite-difference check covered, in words: how many elements were differenced, and
 * against which gradient (the float64 walk, or the float32 walk when the program was too large
 * for it). Null for an event from an older server.
 */
export function fdCoverage(check: GradientChecked): string | null {
  if (check.fd_sampled == null || check.elements == null) return null;
  const n = (x: number) => x.toLocaleString('en-US');
  // Non-empty leaves without a single difference: more leaves than samples (the spread alone).
  const none = (check.leaves ?? []).filter((l) => l.size > 0 && l.fd_sampled === 0).length;
  const spread =
    none === 0
      ? 'a few of each leaf, the rest evenly spaced'
      : `evenly spaced; ${n(none)} ${none === 1 ? 'leaf is' : 'leaves are'} not sampled at all`;
  const sampled =
    check.fd_sampled >= check.elements
      ? `Finite differences at every element (${n(check.elements)}).`
      : `Finite differences at ${n(check.fd_sampled)} of ${n(check.elements)} elements: ${spread} (a sample: each one costs two evaluations of f).`;
  const against =
    check.float64_walk === false
      ? ` The program is large (${n(check.program_eqns ?? 0)} eqns in jax.jit(jax.grad(f))): the float64 walk was skipped, so the errors compare the float32 walk with them and include float32 rounding.`
      : '';
  const k = check.leaves_not_sent ?? 0;
  const notSent =
    k > 0
      ? ` ${n(k)} ${k === 1 ? 'leaf' : 'leaves'} of more than ${n(check.max_leaf_values ?? 0)} elements ${k === 1 ? 'is' : 'are'} summarised, not sent; bit-identity with jax.grad covers every element.`
      : '';
  return sampled + against + notSent;
}

/**
 * How the check works, under its tables: the gradient in its dtype held to float64 finite
 * differences at its dtype's precision (the step of a program that still computes in a narrower
 * dtype inside is that dtype's), left-out entries never counted as agreement, and what the error
 * figures compare.
 */
export function checkNote(check: GradientChecked): string {
  const inside =
    check.fd_dtype && check.fd_dtype !== 'float64' ? ` (f still computes in ${check.fd_dtype} inside: the step is that dtype's)` : '';
  const walk = check.float64_walk === false ? 'the walk' : 'the same walk run in float64';
  return (
    `The verdict holds the walk's gradient, in its dtype, to central differences in float64 (f on its arguments widened to float64${inside}) ` +
    "at its dtype's precision: a NaN or Inf gradient where the difference is finite disagrees, and an entry with no derivative to hold it to " +
    '(— = a kink, or not sampled) is left out, never counted as agreement. ' +
    `The errors compare ${walk} with the differences over the checked entries (JAX's rules without the dtype's rounding), relative to the largest gradient entry.`
  );
}

/** The first-leaf note (f returned a pytree: its first leaf, the loss, is differentiated). */
export function outputLeafNote(linear: LinearJaxprStaged | undefined): string | null {
  const leaf = linear?.output_leaf;
  return leaf ? leaf.note : null;
}

/** Why the jit and eager outcomes differ, when they do (null when they agree). */
export function attemptsNote(jit: GradAttempted | undefined, eager: GradAttempted | undefined): string | null {
  if (!jit || !eager || jit.ok === eager.ok) return null;
  if (eager.ok)
    return (
      'jax.grad(f) works eagerly but jax.jit(jax.grad(f)) fails: under jit every argument is an abstract ' +
      'tracer (shape and dtype only), so a value used as a shape, a loop bound or in Python control flow is ' +
      'not available. The walk below is the eager one, which saw concrete values.'
    );
  return 'jax.jit(jax.grad(f)) traces but the eager jax.grad(f) fails: see the error.';
}

/** `text` split at backticks: odd segments were `code` (the explanations write names so). */
export function codeSegments(text: string): { text: string; code: boolean }[] {
  return text
    .split('`')
    .map((t, i) => ({ text: t, code: i % 2 === 1 }))
    .filter((s) => s.text !== '');
}

/** The step whose transpose rule raised (the walk's last, when the backward pass failed). */
export function failedStep(steps: readonly TransposeStepped[]): TransposeStepped | undefined {
  return steps.find((s) => s.error_class != null);
}

/** The failing step's headline: `no transpose rule for double` when neither table has one. */
export function failureHeadline(step: TransposeStepped): string {
  return step.rule == null
    ? `no transpose rule for ${step.primitive}`
    : `${step.primitive}'s transpose rule raised ${step.error_class ?? 'an exception'}`;
}

/**
 * Whether an attempt failed with the run's own error (same class and message): its card then
 * says so in one line instead of repeating JAX's message, explanation and fix.
 */
export function sameAsFailure(a: GradAttempted, failure: RunFailed | undefined): boolean {
  return !a.ok && failure !== undefined && a.error_class === failure.error_class && a.message === failure.message;
}
