/**
 * The nan_finder exhibit's view model: pure functions from the run's events (up to the stepper's
 * cursor) to what the view shows — the backward walk so far with the NaN step marked, the values
 * going in and out of that step with their NaN/Inf elements, whether the forward value was already
 * non-finite, the double-where cure as a before/after snippet, and jax.grad's gradient.
 */
import type { Selection } from '../../frontend/src/exhibit-api';
import type { Event, EventOf, RunFailed } from '../../frontend/src/protocol';
import { listsPending } from '../../frontend/src/store/list-ranges';
import { eventsOf, lastOf } from '../../frontend/src/widgets/events';
import { LOADING, formatScalar } from '../../frontend/src/widgets/format';

export type Found = EventOf<'nonfinite_found'>;
export type Step = EventOf<'transpose_stepped'>;
export type Linear = EventOf<'linear_jaxpr_staged'>;
export type MarkedValue = Found['values_in'][number];
export type Cure = NonNullable<Found['cure']>;
export type EnclosingCall = Found['inside'][number];

export interface NanModel {
  linear: Linear | undefined;
  /** the steps walked so far (the stepper replays them one event at a time) */
  steps: Step[];
  /** the step the cursor is on (the last one so far) */
  current: Step | undefined;
  found: Found | undefined;
  /** a NaN/Inf the forward pass made and f's outputs hide (where it was born, what dropped it) */
  hidden: EventOf<'forward_nonfinite_hidden'> | undefined;
  failure: RunFailed | undefined;
  /** the run has begun at the cursor (some event of it is there): a replayed prefix of a
   * finished run, or a live one */
  started: boolean;
}

export function nanModel(events: readonly Event[]): NanModel {
  const steps = eventsOf(events, 'transpose_stepped');
  return {
    linear: lastOf(events, 'linear_jaxpr_staged'),
    steps,
    current: steps[steps.length - 1],
    found: lastOf(events, 'nonfinite_found'),
    hidden: lastOf(events, 'forward_nonfinite_hidden'),
    failure: lastOf(events, 'run_failed'),
    started: events.length > 0,
  };
}

/** True when a step wrote a NaN or Inf cotangent. */
export function stepWritesNonfinite(step: Step): boolean {
  return step.writes.some((w) => w.contribution.nonfinite || w.running.nonfinite);
}

export type StepStatus = 'finite' | 'nonfinite';

export interface StepRow {
  step: Step;
  status: StepStatus;
  /** `mul ← sqrt` style: the linear primitive and the primal one that emitted it */
  origin: string;
  /** `d ← [nan, nan, 0.25]`: what the step wrote, first write only, shortened */
  wrote: string;
}

function short(text: string | null | undefined, max = 40): string {
  const t = (text ?? '').replace(/\s+/g, ' ');
  return t.length > max ? `${t.slice(0, max - 1)}…` : t;
}

/** An eqn's text on one line, an inner jaxpr elided: `f:f32[3] = jit[name=_where …] b c e`. */
export function eqnLine(text: string): string {
  const flat = text.replace(/\s+/g, ' ');
  const m = /^(.*?\bjit\[)\s*name=(\S+?)\s.*\](.*)$/.exec(flat);
  if (m) return `${m[1]}name=${m[2]} …]${m[3]}`;
  return flat.length > 72 ? `${flat.slice(0, 71)}…` : flat;
}

/**
 * True when `step` is a summary whose written cotangents' values are left out (details on
 * demand: once the run ended, a step away from the stepper's cursor streams without them): the
 * table's row asks for its whole event when it is shown or clicked.
 */
export function stepWantsDetail(step: Step): boolean {
  return step.detail_id != null && step.writes.some((w) => w.contribution.deferred === true);
}

/** What a write's contribution shows in the table: its preview, or LOADING until it arrives. */
function contributionText(w: Step['writes'][number]): string {
  if (w.contribution.preview == null && w.contribution.deferred === true) return LOADING;
  return short(w.contribution.preview, 28);
}

export function stepRows(steps: readonly Step[]): StepRow[] {
  return steps.map((step) => ({
    step,
    status: stepWritesNonfinite(step) ? 'nonfinite' : 'finite',
    origin:
      step.primal_primitive && step.primal_primitive !== step.primitive
        ? `${step.primitive} (from ${step.primal_primitive})`
        : step.primitive,
    wrote:
      step.writes.length === 0
        ? '—'
        : step.writes.map((w) => `${w.var} ${w.mode === 'set' ? '←' : '+='} ${contributionText(w)}`).join('; '),
  }));
}

/**
 * A walk's step as the page shows it: counted from 1, as the steps table, the card and the
 * transpose exhibit's badge count it (the events' `step` and `inner_step` are 0-based).
 */
export function stepNumber(step: number | null | undefined): string {
  return step == null ? '?' : (step + 1).toLocaleString('en-US');
}

/** The headline over the whole exhibit. */
export function headline(model: NanModel, running: boolean): string {
  const f = model.found;
  if (f === undefined) {
    if (model.failure) return 'The backward pass could not be walked (see the error).';
    if (model.steps.length > 0) return `Walking the backward pass… step ${stepNumber(model.steps.length - 1)}`;
    if (model.linear) return 'Linearized f at your arguments; walking the backward pass… (no step yet)';
    return running || model.started
      ? 'Linearizing f at your arguments…'
      : 'Run the snippet to walk its backward pass on values.';
  }
  if (!f.found) {
    return `No NaN or Inf: all ${f.steps_walked} steps of the backward pass wrote finite cotangents.`;
  }
  const what = f.kind === 'inf' ? 'an Inf' : 'a NaN';
  const origin = f.primal_primitive && f.primal_primitive !== f.primitive ? ` (from ${f.primal_primitive})` : '';
  const line = f.source ? ` on line ${f.source.line}` : '';
  const path = insidePath(f);
  if (f.bwd_name) {
    // The bad value was made inside the user's custom_vjp backward rule: name its line.
    const op = f.bwd_primitive ? `, ${f.bwd_primitive}${f.bwd_source ? ` on line ${f.bwd_source.line}` : ''}` : '';
    const via = path !== null ? ` (${path}, its step ${stepNumber(f.inner_step)})` : '';
    return `Step ${stepNumber(f.step)} wrote ${what}: your custom_vjp backward rule ${f.bwd_name}${op}${via}, run for the call${line}.`;
  }
  if (path !== null) {
    return `Step ${stepNumber(f.step)} went bad; ${path}, its step ${stepNumber(f.inner_step)} wrote ${what} first: ${f.primitive ?? '?'}${origin}${line}.`;
  }
  return `Step ${stepNumber(f.step)} wrote ${what}: ${f.primitive ?? '?'}${origin}${line}.`;
}

/** The callee, as the user wrote it: `jit(norm)`, `cond (branch 1)`, `jax.checkpoint(g)` (remat2). */
function calleeText(c: EnclosingCall): string {
  if (c.primitive === 'jit') return `jit(${c.name ?? '?'})`;
  if (c.primitive === 'cond') return `cond (${c.name ?? '?'})`;
  if (c.primitive === 'remat2') return `jax.checkpoint(${c.name ?? '?'})`;
  return c.primitive;
}

/**
 * A call the finder descended into: `jit(norm) on line 11`, `scan on line 9, iteration 2`,
 * `jax.checkpoint(g) on line 9`.
 */
export function callText(c: EnclosingCall): string {
  const what = calleeText(c);
  const line = c.source ? ` on line ${c.source.line}` : '';
  const iteration = c.iteration !== null && c.iteration !== undefined ? `, iteration ${c.iteration}` : '';
  return `${what}${line}${iteration}`;
}

/** What to know about the scans the finder walked inside: the order scan's transpose walks the
 * iterations in (the reverse of the forward pass), and where the forward pass already made the
 * residuals NaN/Inf (then the backward pass only carries them back). */
export function scanNotes(f: Found): string[] {
  const notes: string[] = [];
  const remat = underCheckpoint(f);
  for (const c of f.inside) {
    if (c.primitive !== 'scan') continue;
    notes.push(
      c.reverse
        ? 'This scan ran with reverse=True, so its transpose walks index 0 first; iterations are numbered by their index along the scanned axis.'
        : "Scan's transpose walks the iterations last first; iterations are numbered by their index along the scanned axis.",
    );
    const k = c.forward_nonfinite_iteration;
    if (k !== null && k !== undefined) {
      notes.push(
        `Its residuals (${residualWhat(remat)}: values, and derivative factors such as 0.5/sqrt(x)) first hold NaN/Inf at iteration ${k}, in the order the scan ran: that is where it starts; later iterations of the backward pass only carry it back.`,
      );
    }
  }
  return notes;
}

/** Whether the finding sits inside a jax.checkpoint (remat2) call the finder walked into. */
export function underCheckpoint(f: Found): boolean {
  return f.inside.some((c) => c.primitive === 'remat2');
}

/** What a residual is: saved by the forward pass, or, inside jax.checkpoint, recomputed in the
 * backward pass from the checkpoint's inputs (remat_transpose evaluates the non-linear part of
 * the body again before transposing the linear part). */
export function residualWhat(remat: boolean): string {
  return remat
    ? 'what the backward pass needs from the forward computation; inside jax.checkpoint it is not saved by the forward pass but recomputed in the backward pass, from the checkpoint\'s inputs'
    : 'what the forward pass saved for the backward pass';
}

/** `inside jit(norm) on line 11, inside scan on line 4, iteration 2`; null at top level. */
export function insidePath(f: Found): string | null {
  if (f.inside.length === 0) return null;
  return f.inside.map((c) => `inside ${callText(c)}`).join(', ');
}

/**
 * The output cotangent the walk started from: `1.0` (a scalar output, as jax.grad), or
 * `ones(f32[3])` for a non-scalar output (the gradient of sum(f)); `1.0` before the finding.
 */
export function seedValue(f: Found | undefined): string {
  const seed = f?.seed ?? '1.0';
  return seed.split(':')[0]!;
}

/**
 * The note for a non-scalar output (the transpose exhibit's `seed` text: the walk starts from an
 * all-ones cotangent, the gradient of sum(f)); null for a scalar output or an older server.
 */
export function seedNote(f: Found | undefined): string | null {
  const seed = f?.seed;
  if (!seed || seed === '1.0') return null;
  return `Seed cotangent ${seed}. jax.grad itself refuses a non-scalar output ("Gradient only defined for scalar-output functions"); the walk, the gradient below and the cure's check are jax.vjp with this cotangent.`;
}

/** The gradient section's heading: what JAX computed (jax.grad, or jax.vjp with ones). */
export function gradientSource(f: Found | undefined): string {
  return seedNote(f) === null ? 'jax.grad' : `jax.vjp(f, *args)[1](${seedValue(f)})`;
}

export interface Cell {
  text: string;
  bad: boolean;
}

/** One element as the value previews print it, in its dtype (widgets/format.ts). */
function cellText(v: unknown, dtype: string): string {
  if (typeof v === 'number' || typeof v === 'string' || typeof v === 'boolean') return formatScalar(v, dtype);
  return String(v);
}

/** Flatten nested numbers (NaN/Inf as strings) in C order. */
export function flatten(numbers: unknown): unknown[] {
  if (Array.isArray(numbers)) return numbers.flatMap((n) => flatten(n));
  return [numbers];
}

/** The elements of a marked value as cells, NaN/Inf cells marked; `null` when too large. */
export function cells(value: MarkedValue): Cell[] | null {
  if (value.numbers === null || value.numbers === undefined) return null;
  return flatten(value.numbers).map((n) => ({
    text: cellText(n, value.value.aval.dtype),
    bad: typeof n === 'string' && /nan|inf/.test(n),
  }));
}

/** One line about where the NaN/Inf elements of a value are. */
export function nonfiniteSummary(value: MarkedValue): string {
  if (value.value.zero) return 'symbolic zero (no array)';
  if (value.nonfinite_count === 0) return 'all finite';
  const at = value.nonfinite_at.join(', ');
  const more = value.nonfinite_count > value.nonfinite_at.length ? ', …' : '';
  const n = value.nonfinite_count;
  return `${n} element${n === 1 ? '' : 's'} NaN/Inf, at flat index ${at}${more}`;
}

/** The factor of the JVP that JAX's rule (`jax/_src/lax/lax.py`) saves as a residual, for the
 * primitives whose derivative is infinite where their value is finite. */
export const DERIVATIVE_FACTORS: Readonly<Record<string, string>> = {
  sqrt: '0.5/sqrt(x)',
  asin: '1/sqrt(1 - x²)',
  acos: '-1/sqrt(1 - x²)',
};

/** The residuals the bad step's rule read that hold NaN/Inf. */
export function nonfiniteResiduals(f: Found): MarkedValue[] {
  return f.values_in.filter((v) => v.value.role === 'residual' && v.nonfinite_count > 0);
}

/** `Inf`, `NaN` or `NaN/Inf`: what a value's bad elements are (from its shown elements). */
export function badKind(v: MarkedValue): string {
  const bad = v.numbers === null || v.numbers === undefined ? [] : flatten(v.numbers).filter((n) => typeof n === 'string');
  const nan = bad.some((n) => n === 'nan');
  const inf = bad.some((n) => typeof n === 'string' && n.includes('inf'));
  return nan && !inf ? 'NaN' : inf && !nan ? 'Inf' : 'NaN/Inf';
}

/** What jax_debug_nans (and, for an Inf, jax_debug_infs) does with this gradient: jax.grad, or
 * for a non-scalar output (which jax.grad refuses) jax.vjp with the all-ones cotangent. */
export function debugFlagsText(f: Found): string {
  const vector = seedNote(f) !== null;
  const grad = vector ? `jax.vjp with the ${seedValue(f)} cotangent (jax.grad itself refuses a non-scalar output)` : 'jax.grad';
  let text = f.debug_nans
    ? ` Under jax_debug_nans, ${grad} stops with ${f.debug_nans}.`
    : ` Under jax_debug_nans, ${grad} raises nothing${f.kind === 'inf' ? ' (it checks for NaN only, not Inf)' : ''}.`;
  if (f.kind === 'inf') {
    text += f.debug_infs
      ? ` Its Inf counterpart, jax_debug_infs, stops at the first Inf: ${f.debug_infs}.`
      : ' Its Inf counterpart, jax_debug_infs, raises nothing here either.';
  }
  return text;
}

/** Whether the forward pass was already bad, and what jax_debug_nans does. */
export function forwardVerdict(f: Found): string {
  const prim = f.primal_primitive ?? f.primitive ?? 'this eqn';
  const scans = f.inside.filter((c) => c.primitive === 'scan' && c.iteration !== null);
  const at = scans.length > 0 ? `, iteration ${scans.map((c) => c.iteration).join(' / ')} of the scan,` : '';
  const line = f.source ? ` on line ${f.source.line}${at}` : '';
  const dn = debugFlagsText(f);
  const output =
    f.output_nonfinite === true
      ? " f's own output is NaN/Inf at these inputs too: the function itself is not finite there, so neither is its gradient."
      : '';
  if (f.bwd_name) {
    const op = f.bwd_primitive
      ? `its ${f.bwd_primitive}${f.bwd_source ? ` on line ${f.bwd_source.line}` : ''} is the first operation with a NaN/Inf output`
      : 'no single operation in it made the NaN/Inf (check the residuals its forward rule saved)';
    return `The bad cotangent was made in the backward pass, by your custom_vjp backward rule ${f.bwd_name}: run on this step's residuals and cotangent (shown above), ${op}.${output}${dn}`;
  }
  if (f.forward_nonfinite === true) {
    const idx = f.forward_value ? ` (at flat index ${f.forward_value.nonfinite_at.join(', ')})` : '';
    const downstream =
      f.output_nonfinite === true
        ? " f's output itself is NaN/Inf at these inputs: the bad forward value is part of what f returns, so its gradient cannot be finite either."
        : f.output_nonfinite === false
          ? " f's output is finite, so nothing downstream used it (e.g. a where discarded it): the forward pass computed it anyway, and its derivative still enters the backward pass."
          : '';
    return `The forward value of ${prim}${line} was already NaN/Inf${idx}.${downstream}${dn}`;
  }
  if (f.forward_nonfinite === false) {
    const bad = nonfiniteResiduals(f);
    if (bad.length > 0) {
      const kinds = new Set(bad.map(badKind));
      const kind = kinds.size === 1 ? [...kinds][0]! : 'NaN/Inf';
      const names =
        bad.length === 1
          ? `${bad[0]!.label}, which the rule reads, is`
          : `residuals ${bad.map((v) => v.label.replace(/^residual /, '')).join(', ')}, which the rule reads, are`;
      const factor = DERIVATIVE_FACTORS[prim];
      const saved = factor ? `for ${prim}, its derivative factor ${factor}` : `for ${prim}, a factor of its derivative`;
      const at = kind === 'Inf' ? 'infinite' : kind === 'NaN' ? 'undefined (NaN)' : 'infinite or undefined';
      return (
        `The forward value of ${prim}${line} is finite, but ${names} ${kind}. A residual is ` +
        `${residualWhat(underCheckpoint(f))}: ${saved}, ${at} at this input while ${prim}'s own value is ` +
        `finite. The bad value is born in the backward pass, from the derivative, not from the value.${dn}`
      );
    }
    return `The forward value of ${prim}${line} is finite: only the cotangent went bad, in the backward pass.${dn}`;
  }
  return `The forward value of ${prim} could not be located in the primal jaxpr (a helper called twice, or a loop JAX does not unroll).${output}${dn}`;
}

export interface CodeLine {
  /** 1-based snippet line of the original (before), or the line the new one takes (after) */
  n: number;
  text: string;
  changed: boolean;
}

/** The before/after snippets of a cure, numbered as in the editor. */
export function cureLines(cure: Cure): { before: CodeLine[]; after: CodeLine[] } {
  const changed = new Set(cure.changed);
  const beforeLines = cure.before.split('\n');
  const afterLines = cure.after.split('\n');
  const removed = new Set(beforeLines.map((t, i) => (afterLines.includes(t) ? -1 : i)).filter((i) => i >= 0));
  return {
    before: beforeLines.map((text, i) => ({ n: cure.start_line + i, text, changed: removed.has(i) })),
    after: afterLines.map((text, i) => ({ n: cure.start_line + i, text, changed: changed.has(i) })),
  };
}

/** The gradient (one entry per argument) as labelled rows of cells. */
/**
 * The dtype of the gradient's elements: that of the linear jaxpr's inputs (the cotangents it
 * sends back, one per differentiated leaf) when they all share one, else float64 (the JSON
 * number printed with float64 digits, capped as the previews are); float64 too while the
 * jaxpr's variable lists are partial (list ranges, design 0045: the rest may have other dtypes).
 */
export function gradientDtype(linear: NanModel['linear']): string {
  if (linear !== undefined && listsPending(linear.jaxpr)) return 'float64';
  const dtypes = new Set((linear?.jaxpr.invars ?? []).map((v) => v.aval.dtype));
  return dtypes.size === 1 ? [...dtypes][0]! : 'float64';
}

/** The probe sends a gradient leaf with more elements than this as null (probe.py's
 * MAX_GRADIENT_ELEMENTS). */
export const MAX_GRADIENT_ELEMENTS = 4096;
/** A gradient leaf shows at most this many elements as cells; the rest are counted. */
export const GRADIENT_CELLS = 64;

type LeafAval = Linear['jaxpr']['invars'][number]['aval'];

/** Why a gradient row has no cells: `not-differentiated` (the argument is held fixed: not in
 * argnums), `too-large` (a differentiated leaf of more than 4,096 elements, sent without its
 * values), `unknown` (a whole argument with no value when the leaves' avals are not known: one
 * or the other). `shown`: the row has cells. */
export type GradientStatus = 'shown' | 'not-differentiated' | 'too-large' | 'unknown';

export interface GradientRow {
  /** `args[0]['a']['w']`: the argument, then the leaf's key path (as jax.tree_util.keystr) */
  label: string;
  /** the leaf's aval (`f32[2]`) when the linear jaxpr's inputs say, else null */
  aval: string | null;
  /** the first GRADIENT_CELLS elements, NaN/Inf marked; null when there are no values */
  cells: Cell[] | null;
  /** elements beyond the cells shown */
  more: number;
  /** NaN/Inf elements in the whole leaf */
  bad: number;
  status: GradientStatus;
}

/** What a gradient row without cells says, by its status. */
export function gradientStatusText(row: GradientRow): string {
  switch (row.status) {
    case 'not-differentiated':
      return 'not differentiated: held fixed (not in argnums; without an argnums setting, ints, bools, complex and static arguments are)';
    case 'too-large':
      return `too large to show: over ${MAX_GRADIENT_ELEMENTS.toLocaleString('en-US')} elements, sent without its values`;
    case 'unknown':
      return `no values: either not differentiated (held fixed) or one array of over ${MAX_GRADIENT_ELEMENTS.toLocaleString('en-US')} elements (too large to show)`;
    default:
      return '';
  }
}

/** The avals of the differentiated leaves, in the order the gradient's leaves flatten (the
 * linear jaxpr's inputs: one tangent per differentiated leaf); null while its lists are partial
 * (list ranges) or without a linear jaxpr. */
export function gradientLeafAvals(linear: NanModel['linear']): LeafAval[] | null {
  if (linear === undefined || listsPending(linear.jaxpr)) return null;
  return linear.jaxpr.invars.map((v) => v.aval);
}

function isScalar(v: unknown): v is number | string | boolean {
  return typeof v === 'number' || typeof v === 'string' || typeof v === 'boolean';
}

/** True when `v` is an array of exactly `shape` (nested lists of scalars). */
function fitsShape(v: unknown, shape: readonly number[]): boolean {
  if (shape.length === 0) return isScalar(v);
  if (!Array.isArray(v) || v.length !== shape[0]) return false;
  const rest = shape.slice(1);
  return v.every((x) => fitsShape(x, rest));
}

/** True when `v` looks like an array (a scalar, or rectangular nested lists of scalars): the
 * guess when the leaves' avals are not known. */
function looksLikeArray(v: unknown): boolean {
  if (isScalar(v)) return true;
  if (!Array.isArray(v)) return false;
  if (v.length === 0) return true;
  if (v.every(isScalar)) return true;
  if (!v.every((x) => Array.isArray(x) && looksLikeArray(x))) return false;
  const n = (v[0] as unknown[]).length;
  return v.every((x) => (x as unknown[]).length === n);
}

interface Leaf {
  path: string;
  value: unknown;
  aval: LeafAval | null;
}

/** The leaves of one argument's gradient, walked as a pytree (a JSON object is a dict, a list
 * a list/tuple node unless it is the next leaf's array), consuming `avals` from `at`; null when
 * the structure does not fit the avals. */
function argLeaves(value: unknown, path: string, avals: readonly LeafAval[] | null, at: number): Leaf[] | null {
  const leaves: Leaf[] = [];
  let i = at;
  const walk = (v: unknown, p: string): boolean => {
    const aval = avals === null ? null : (avals[i] ?? null);
    if (avals !== null && aval === null) return false;
    const leaf =
      v === null || v === undefined || isScalar(v) || (aval !== null ? fitsShape(v, aval.shape) : looksLikeArray(v));
    if (leaf) {
      if (aval !== null && v !== null && v !== undefined && !fitsShape(v, aval.shape)) return false;
      leaves.push({ path: p, value: v ?? null, aval });
      i += 1;
      return true;
    }
    if (Array.isArray(v)) return v.every((x, k) => walk(x, `${p}[${k}]`));
    if (typeof v === 'object') return Object.entries(v as Record<string, unknown>).every(([k, x]) => walk(x, `${p}['${k}']`));
    return false;
  };
  return walk(value, path) ? leaves : null;
}

function avalSize(aval: LeafAval): number {
  return aval.shape.reduce((a, b) => a * b, 1);
}

/**
 * The gradient (one entry per argument) as one row per leaf, labelled with its key path
 * (`args[0]['a']['w']`): a nested dict of parameters gives a row per parameter. `avals` (the
 * differentiated leaves', gradientLeafAvals) tell an array leaf from a list node, and an argument
 * that is not differentiated from one array too large to show; without them (or when they do not
 * fit) the rows are guessed from the values and such an argument says it may be either.
 */
export function gradientRows(gradient: unknown, dtype = 'float64', avals: readonly LeafAval[] | null = null): GradientRow[] {
  if (!Array.isArray(gradient)) return [];
  const withAvals = avals === null ? null : assignArgs(gradient, avals);
  const rows: GradientRow[] = [];
  gradient.forEach((g, i) => {
    const label = `args[${i}]`;
    const parsed = withAvals?.[i];
    if (g === null || g === undefined) {
      const status: GradientStatus =
        withAvals === null ? 'unknown' : parsed && parsed.length === 1 ? 'too-large' : 'not-differentiated';
      rows.push({ label, aval: parsed?.[0]?.aval?.short ?? null, cells: null, more: 0, bad: 0, status });
      return;
    }
    for (const leaf of parsed ?? argLeaves(g, label, null, 0) ?? [{ path: label, value: g, aval: null }]) {
      rows.push(leafRow(leaf, dtype));
    }
  });
  return rows;
}

function leafRow(leaf: Leaf, dtype: string): GradientRow {
  const base = { label: leaf.path, aval: leaf.aval?.short ?? null };
  if (leaf.value === null) return { ...base, cells: null, more: 0, bad: 0, status: 'too-large' };
  const flat = flatten(leaf.value);
  const d = leaf.aval?.dtype ?? dtype;
  const isBad = (n: unknown): boolean => typeof n === 'string' && /nan|inf/.test(n);
  return {
    ...base,
    cells: flat.slice(0, GRADIENT_CELLS).map((n) => ({ text: cellText(n, d), bad: isBad(n) })),
    more: Math.max(0, flat.length - GRADIENT_CELLS),
    bad: flat.filter(isBad).length,
    status: 'shown',
  };
}

/** Each argument's leaves with their avals, when the avals fit the gradient's structure (a
 * null argument takes no aval, not differentiated, or one aval of more than 4,096 elements, too
 * large: the choice that makes every aval used once); null when nothing fits. */
function assignArgs(gradient: readonly unknown[], avals: readonly LeafAval[]): (Leaf[] | null)[] | null {
  const out: (Leaf[] | null)[] = [];
  const go = (i: number, at: number): boolean => {
    if (i === gradient.length) return at === avals.length;
    const g = gradient[i];
    if (g === null || g === undefined) {
      const next = avals[at];
      if (next !== undefined && avalSize(next) > MAX_GRADIENT_ELEMENTS) {
        out[i] = [{ path: `args[${i}]`, value: null, aval: next }];
        if (go(i + 1, at + 1)) return true;
      }
      out[i] = null;
      return go(i + 1, at);
    }
    const leaves = argLeaves(g, `args[${i}]`, avals, at);
    if (leaves === null) return false;
    out[i] = leaves;
    return go(i + 1, at + leaves.length);
  };
  return go(0, 0) ? out.slice(0, gradient.length) : null;
}

/** The selection that lands the editor on the NaN step's line (and the linear eqn). When the
 * finding is inside a jit/scan call, the eqn is the call's own (the top-level step the walk
 * shows, in `steps`): the finding's `eqn_index` then indexes the call's body, not the linear jaxpr. */
export function landingSelection(f: Found, steps: readonly Step[] = []): Selection | null {
  // A custom_vjp bwd made it: land on the bwd's bad line (the eqn stays custom_lin's step).
  const at = f.bwd_source ?? f.source;
  if (!f.found || !at) return null;
  const outer = f.inside.length > 0 ? steps.find((s) => s.step === f.step) : undefined;
  const eqn = f.inside.length > 0 ? (outer?.eqn_index ?? null) : f.eqn_index;
  return {
    origin: 'eqn',
    lines: [at.line],
    eqnIndices: eqn === null || eqn === undefined ? [] : [eqn],
    opLines: [],
  };
}

/** What the stepper's cursor shows in the editor and the linear jaxpr: once the cursor reached the
 * finding, its landing (the NaN step's line, or the line inside the call it was born in, with the
 * top-level eqn of the step that went bad); before that, the step under the cursor (its line and
 * linear eqn); `null` before the first step. */
export function cursorSelection(model: NanModel): Selection | null {
  const f = model.found;
  if (f?.found) {
    const land = landingSelection(f, model.steps);
    if (land) return land;
  }
  return model.current ? stepSelection(model.current) : null;
}

/** The selection made by clicking a step: its user line and its linear eqn. */
export function stepSelection(step: Step): Selection {
  return {
    origin: 'eqn',
    lines: step.source ? [step.source.line] : [],
    eqnIndices: [step.eqn_index],
    opLines: [],
  };
}

/** The sentence the page shows for a hidden NaN/Inf (the CLI's ``HiddenNonfinite`` finding). */
export function hiddenText(h: EventOf<'forward_nonfinite_hidden'>): string {
  const at = (e: { primitive: string; text: string; source?: { line: number } | null }): string => {
    const what = e.text.includes(' = ') ? e.primitive : e.text;
    return e.source ? `${what} at line ${e.source.line}` : what;
  };
  const kind = h.origin.kind === 'nan' ? 'NaN' : 'Inf';
  const dropped = h.hider ? `, dropped by ${at(h.hider)}` : '';
  return `The forward pass made ${h.count} ${kind} value${h.count === 1 ? '' : 's'} at ${at(h.origin)}${dropped}: f's output does not show ${h.count === 1 ? 'it' : 'them'}, but the gradient goes through ${h.count === 1 ? 'it' : 'them'}.`;
}
