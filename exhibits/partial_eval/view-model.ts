/**
 * The partial_eval exhibit's view model: pure functions from the run's events (up to the stepper's
 * cursor) to what the view shows — the known/unknown split of the JVP jaxpr, the inputs and their
 * known flags, where each residual is produced (known jaxpr) and consumed (unknown jaxpr), and the
 * remat table sorted as the user asks.
 *
 * A split of a large program may arrive in list ranges (design 0045): its `residuals`, the known
 * jaxpr's `outvars` and the unknown one's `invars` hold their first items until the page has
 * asked for the rest. Counts use the whole lengths (`listLength`); residual `i` is paired with
 * the variables at the whole lists' indices, and the table waits for every list
 * (`residualsLoading`), so that no residual is shown with another's variables.
 */
import type { Event, EventOf, JaxprView, RunFailed } from '../../frontend/src/protocol';
import { eqnCount } from '../../frontend/src/store/eqn-ranges';
import { listLength, listsPending } from '../../frontend/src/store/list-ranges';
import { eventsOf, lastOf } from '../../frontend/src/widgets/events';

export type JaxprSplit = EventOf<'jaxpr_split'>;
export type RematPolicyMeasured = EventOf<'remat_policy_measured'>;
export type RematUnavailable = EventOf<'remat_unavailable'>;
export type ResidualView = JaxprSplit['residuals'][number];

export interface InputRow {
  /** the argument leaf without the `primal `/`tangent ` prefix, e.g. `args[0]['w1']` */
  label: string;
  /** aval of the primal, as the jaxpr writes it */
  primalAval: string;
  tangentAval: string;
  /** index of the primal and of the tangent among the JVP jaxpr's inputs */
  primal: number;
  tangent: number;
  primalKnown: boolean;
  tangentKnown: boolean;
  /**
   * the tangent is `float0` (an integer, bool or key primal): `jax.jvp` turns it into a
   * symbolic zero (`ad.Zero`), so no eqn reads it and known/unknown only moves an unused input
   */
  tangentFloat0: boolean;
}

/** Why a float0 tangent has no toggle (the flag's tooltip). */
export const FLOAT0_TANGENT_NOTE =
  'A float0 tangent (of an integer, bool or key input) is always a symbolic zero: jax.jvp replaces it ' +
  'by ad.Zero before tracing, so no eqn of the JVP jaxpr reads it. Known or unknown would only move this ' +
  'unused input from one jaxpr to the other.';

/** One row per argument leaf: its primal input and its tangent input side by side. */
export function inputRows(split: JaxprSplit): InputRow[] {
  const n = split.n_primals;
  const rows: InputRow[] = [];
  for (let i = 0; i < n; i++) {
    rows.push({
      label: (split.input_labels[i] ?? '').replace(/^primal /, ''),
      primalAval: split.input_avals[i]?.short ?? '',
      tangentAval: split.input_avals[n + i]?.short ?? '',
      primal: i,
      tangent: n + i,
      primalKnown: split.known_inputs[i] ?? true,
      tangentKnown: split.known_inputs[n + i] ?? false,
      tangentFloat0: split.input_avals[n + i]?.short.startsWith('float0') ?? false,
    });
  }
  return rows;
}

/** An argument with this many leaves or more folds into one row of the inputs table. */
export const INPUT_GROUP_MIN = 8;

/** The inputs table's rows of one argument (`args[0]`): `folded` when it has INPUT_GROUP_MIN
 * leaves or more (a model's parameters: a transformer's ~150 leaves, ~300 flags). */
export interface InputGroup {
  arg: string;
  rows: InputRow[];
  folded: boolean;
}

/** The rows grouped by argument, in order (the leaves of one argument are contiguous). */
export function inputGroups(rows: readonly InputRow[]): InputGroup[] {
  const groups: InputGroup[] = [];
  for (const row of rows) {
    const arg = /^args\[\d+\]/.exec(row.label)?.[0] ?? row.label;
    const last = groups[groups.length - 1];
    if (last && last.arg === arg) last.rows.push(row);
    else groups.push({ arg, rows: [row], folded: false });
  }
  for (const g of groups) g.folded = g.rows.length >= INPUT_GROUP_MIN;
  return groups;
}

/** A folded argument's row: `148 leaves · primal: 148 known · tangent: 148 unknown`. */
export function inputGroupSummary(g: InputGroup): string {
  const count = (known: boolean[]): string => {
    const k = known.filter(Boolean).length;
    const u = known.length - k;
    return [k ? `${k} known` : '', u ? `${u} unknown` : ''].filter((t) => t !== '').join(', ');
  };
  return `${g.rows.length} leaves · primal: ${count(g.rows.map((r) => r.primalKnown))} · tangent: ${count(g.rows.map((r) => r.tangentKnown))}`;
}

/** The known flags with input `index` flipped (the options of the rerun a toggle asks for). */
export function toggled(known: readonly boolean[], index: number): boolean[] {
  return known.map((k, i) => (i === index ? !k : k));
}

/** Primals known, tangents unknown: what `jax.linearize` and `jax.vjp` do (the default). */
export function defaultKnown(split: JaxprSplit): boolean[] {
  return split.known_inputs.map((_, i) => i < split.n_primals);
}

export function isDefault(split: JaxprSplit): boolean {
  return defaultKnown(split).every((k, i) => k === split.known_inputs[i]);
}

/** `25,001`: a count as the page writes it. */
const n = (x: number): string => x.toLocaleString('en-US');

export interface ResidualLink {
  /** the residual's name in the known jaxpr's printout (one of its last outvars) */
  knownVar: string;
  /** its name in the unknown jaxpr's printout (one of its first invars) */
  unknownVar: string;
  /** known-jaxpr eqns that produce it (empty for an argument forwarded as is) */
  producers: number[];
  /** unknown-jaxpr eqns that read it */
  consumers: number[];
}

function eqnsWriting(jaxpr: JaxprView, name: string): number[] {
  return jaxpr.eqns.filter((e) => e.outvars.some((v) => !v.literal && v.name === name)).map((e) => e.index);
}

function eqnsReading(jaxpr: JaxprView, name: string): number[] {
  return jaxpr.eqns.filter((e) => e.invars.some((v) => !v.literal && v.name === name)).map((e) => e.index);
}

/**
 * Where each residual lives: residual `i` is outvar `nKnownOut + i` of the known jaxpr and invar
 * `i` of the unknown one (`partial_eval_jaxpr_nounits`' convention).
 */
export function residualLinks(split: JaxprSplit): ResidualLink[] {
  // Whole lengths: with lists still partial, the loaded lengths would pair wrong variables.
  const nRes = listLength(split, 'residuals');
  const nKnownOut = listLength(split.known, 'outvars') - nRes;
  return split.residuals.map((_, i) => {
    const knownVar = split.known.outvars[nKnownOut + i]?.name ?? '';
    const unknownVar = split.unknown.invars[i]?.name ?? '';
    return {
      knownVar,
      unknownVar,
      producers: eqnsWriting(split.known, knownVar),
      consumers: eqnsReading(split.unknown, unknownVar),
    };
  });
}

/** Sum of the residuals' bytes; null while some residuals are still to come (list ranges). */
export function residualBytes(split: JaxprSplit): number | null {
  if (split.residuals.length < listLength(split, 'residuals')) return null;
  return split.residuals.reduce((s, r) => s + r.bytes, 0);
}

/** The residual count (the whole list's) and how many of them the page has. */
export function residualCount(split: JaxprSplit): { loaded: number; total: number } {
  return { loaded: split.residuals.length, total: listLength(split, 'residuals') };
}

/**
 * What the residual table says instead of its rows while the split or its known / unknown
 * jaxpr still have list ranges to come (`loading residuals 1,200 of 20,001…`); null once
 * every list is whole, and the links are right.
 */
export function residualsLoading(split: JaxprSplit): string | null {
  if (!listsPending(split) && !listsPending(split.known) && !listsPending(split.unknown)) return null;
  const { loaded, total } = residualCount(split);
  return loaded < total
    ? `loading residuals ${n(loaded)} of ${n(total)}…`
    : `loading the variables of the known and unknown jaxprs (${n(total)} residuals)…`;
}

/** Eqns of `jaxpr` on one of `lines` (the editor's selection mapped to a jaxpr). */
export function eqnsOnLines(jaxpr: JaxprView, lines: readonly number[]): Set<number> {
  const set = new Set(lines);
  return new Set(jaxpr.eqns.filter((e) => e.source != null && set.has(e.source.line)).map((e) => e.index));
}

/** `jit log_softmax`, `scan`: a JVP eqn's primitive and its `name` param (if any). */
export function callName(split: JaxprSplit, index: number): string {
  const eqn = split.jvp.eqns[index];
  if (eqn === undefined) return '?';
  const name = eqn.params['name'];
  return name ? `${eqn.primitive} ${name}` : eqn.primitive;
}


function plural(n: number, one: string, many: string): string {
  return `${n} ${n === 1 ? one : many}`;
}

/**
 * Why the known and unknown eqn counts need not add up to the JVP's: call-like eqns (`jit` of a
 * jnp helper, `scan`, ...) split by their own partial-eval rule have a part on each side, and
 * unknown eqns whose results reach no output are dropped. Null when the counts add up plainly.
 */
export function splitAccounting(split: JaxprSplit): string | null {
  const calls = split.split_calls ?? [];
  const dropped = split.dropped ?? 0;
  const parts: string[] = [];
  if (calls.length > 0) {
    // A view sent in eqn ranges (design 0045) may not have these eqns yet: then no names.
    const loaded = calls.every((i) => split.jvp.eqns[i] !== undefined);
    const prims = [...new Set(calls.map((i) => split.jvp.eqns[i]?.primitive ?? '?'))];
    const uniform = loaded && prims.length === 1;
    const names = calls.map((i) => (uniform ? (split.jvp.eqns[i]?.params['name'] ?? null) : callName(split, i)));
    const kind = uniform ? `${prims[0]} ` : 'call ';
    const named = loaded && names.every((x) => x !== null) ? ` (${names.join(', ')})` : '';
    parts.push(
      `${plural(calls.length, `${kind}eqn`, `${kind}eqns`)}${named} ${calls.length === 1 ? 'is' : 'are'} split by ` +
        `JAX's partial evaluator: part of ${calls.length === 1 ? 'it' : 'each'} runs on each side`,
    );
  }
  if (dropped > 0)
    parts.push(
      `${plural(dropped, 'unknown eqn is', 'unknown eqns are')} dropped: no output needs ` +
        `${dropped === 1 ? 'its result' : 'their results'}`,
    );
  if (dropped < 0) parts.push(`JAX's partial-eval rules add ${plural(-dropped, 'eqn', 'eqns')} (a call inlined or split)`);
  if (parts.length === 0) return null;
  const [known, unknown] = [eqnCount(split.known), eqnCount(split.unknown)];
  return `${n(known)} + ${n(unknown)} = ${n(known + unknown)}, not ${n(eqnCount(split.jvp))}: ${parts.join('; ')}.`;
}

/** One sentence summing up the split (and a second one when the eqn counts need explaining). */
export function splitSentence(split: JaxprSplit): string {
  const nUnknown = split.known_inputs.filter((k) => !k).length;
  const outs = split.out_unknowns.length;
  const outsUnknown = split.out_unknowns.filter(Boolean).length;
  const res = listLength(split, 'residuals');
  const accounting = splitAccounting(split);
  return (
    `${split.known_inputs.length - nUnknown} of ${split.known_inputs.length} inputs known: ` +
    `${n(eqnCount(split.known))} of the JVP's ${n(eqnCount(split.jvp))} eqns run in the known jaxpr, ` +
    `${n(eqnCount(split.unknown))} in the unknown one; ${outsUnknown} of ${outs} outputs unknown; ` +
    `${n(res)} residual${res === 1 ? '' : 's'} cross${res === 1 ? 'es' : ''} between them.` +
    (accounting ? ` ${accounting}` : '')
  );
}

/**
 * A remat row's saved residuals by where they come from, read from JAX's own descriptions
 * (`print_saved_residuals`): `inputs` the primal inputs themselves (`from the argument ...`),
 * which the backward pass keeps to recompute from (more of them the less a policy saves: plain
 * `sum(sin(x))` keeps `cos(x)`, under `nothing_saveable` it keeps `x`);
 * `constants` closed-over constants and literals (`from a constant`, `from a literal`);
 * `computed` values the forward pass computed and the policy saved (`output of ...`,
 * `named '...' from ...`). Under `nothing_saveable` `computed` is 0: the table says "0 + 6
 * inputs", not "saved 6" (design 0084).
 */
export interface SavedParts {
  computed: number;
  inputs: number;
  constants: number;
}

export function savedParts(row: Pick<RematPolicyMeasured, 'saved'>): SavedParts {
  const parts: SavedParts = { computed: 0, inputs: 0, constants: 0 };
  for (const s of row.saved) {
    if (s.description.startsWith('from the argument')) parts.inputs += 1;
    else if (s.description === 'from a constant' || s.description === 'from a literal') parts.constants += 1;
    else parts.computed += 1;
  }
  return parts;
}

/** What the saved cell adds after the computed count: `+ 6 inputs`, `+ 1 input, 2 constants`, or ''. */
export function savedExtra(parts: SavedParts): string {
  const words: string[] = [];
  if (parts.inputs > 0) words.push(`${parts.inputs} input${parts.inputs === 1 ? '' : 's'}`);
  if (parts.constants > 0) words.push(`${parts.constants} constant${parts.constants === 1 ? '' : 's'}`);
  return words.length === 0 ? '' : `+ ${words.join(', ')}`;
}

export type SortKey = 'index' | 'policy' | 'saved' | 'residual_bytes' | 'temp_bytes' | 'step_ms';

export interface SortState {
  key: SortKey;
  ascending: boolean;
}

function sortValue(row: RematPolicyMeasured, key: SortKey): number | string {
  switch (key) {
    case 'index':
      return row.index;
    case 'policy':
      return row.policy;
    case 'saved':
      // the computed residuals (the cell's number); the inputs (which the policy decides too) break ties
      return savedParts(row).computed * 1e9 + row.saved.length;
    case 'residual_bytes':
      return row.residual_bytes;
    case 'temp_bytes':
      // "not reported" sorts last either way round
      return row.temp_bytes ?? Number.NaN;
    case 'step_ms':
      // "not measured" (a row not compiled) sorts last either way round
      return row.step_ms ?? Number.NaN;
  }
}

/** The rows sorted by `sort` (stable: ties keep the measurement order; missing values last). */
export function sortRows(rows: readonly RematPolicyMeasured[], sort: SortState): RematPolicyMeasured[] {
  const sign = sort.ascending ? 1 : -1;
  return rows
    .map((row, i) => ({ row, i }))
    .sort((a, b) => {
      const va = sortValue(a.row, sort.key);
      const vb = sortValue(b.row, sort.key);
      const na = typeof va === 'number' && Number.isNaN(va);
      const nb = typeof vb === 'number' && Number.isNaN(vb);
      if (na || nb) return na === nb ? a.i - b.i : na ? 1 : -1;
      const c = typeof va === 'string' || typeof vb === 'string' ? String(va).localeCompare(String(vb)) : va - vb;
      return c !== 0 ? sign * c : a.i - b.i;
    })
    .map((x) => x.row);
}

/** Clicking a header: the same key flips the direction; a new key starts ascending. */
export function nextSort(sort: SortState, key: SortKey): SortState {
  return sort.key === key ? { key, ascending: !sort.ascending } : { key, ascending: true };
}

/**
 * Each row's residual bytes and step time relative to "no checkpoint" (the first row); `time` is
 * null when either step time was not measured.
 */
export function relativeTo(rows: readonly RematPolicyMeasured[]): Map<number, { bytes: number; time: number | null }> {
  const base = rows.find((r) => r.policy === 'no checkpoint');
  const out = new Map<number, { bytes: number; time: number | null }>();
  if (base === undefined) return out;
  for (const r of rows) {
    out.set(r.index, {
      bytes: base.residual_bytes > 0 ? r.residual_bytes / base.residual_bytes : 1,
      time: base.step_ms == null || r.step_ms == null ? null : base.step_ms > 0 ? r.step_ms / base.step_ms : 1,
    });
  }
  return out;
}

/**
 * Why the compiled columns (temp bytes, step time, grad check) are empty: the first row's
 * `not_measured` (a program too large to compile once per row: residuals only), else null.
 */
export function notMeasured(rows: readonly RematPolicyMeasured[]): string | null {
  return rows.find((r) => r.not_measured != null)?.not_measured ?? null;
}

export interface PartialEvalModel {
  split: JaxprSplit | undefined;
  remat: RematPolicyMeasured[];
  /** JAX refused jax.grad, so the remat table could not be measured (the split stays) */
  rematUnavailable: RematUnavailable | undefined;
  failure: RunFailed | undefined;
}

/** Derive everything the view shows from the events up to the cursor. */
export function partialEvalModel(events: readonly Event[]): PartialEvalModel {
  return {
    split: lastOf(events, 'jaxpr_split'),
    remat: eventsOf(events, 'remat_policy_measured').sort((a, b) => a.index - b.index),
    rematUnavailable: lastOf(events, 'remat_unavailable'),
    failure: lastOf(events, 'run_failed'),
  };
}

/** A remat row's grad check cell: not measured, or its largest |difference| to plain f's gradient. */
export interface GradCheck {
  tone: 'muted' | 'ok' | 'bad';
  text: string;
}

/** Agreement within 1e-5 is a check mark; NaN/Inf that differ (null) or more is a cross. */
export function gradCheck(row: RematPolicyMeasured): GradCheck {
  if (row.not_measured != null) return { tone: 'muted', text: 'not measured' };
  const d = row.grad_max_abs_diff;
  if (d === null) return { tone: 'bad', text: '✗ NaN/Inf differ' };
  return d <= 1e-5 ? { tone: 'ok', text: `✓ ${d.toExponential(1)}` } : { tone: 'bad', text: `✗ ${d.toExponential(1)}` };
}

/**
 * What the remat section says while it has no row: rows measured after the stepper's cursor, the
 * policies being measured, or the run that failed after the split; '' before any split.
 */
export function rematEmptyMessage(
  hasSplit: boolean,
  rowsAhead: number,
  running: boolean,
  failure: RunFailed | undefined,
): string {
  if (!hasSplit) return '';
  if (rowsAhead > 0) return `Step forward: ${rowsAhead} measured row${rowsAhead === 1 ? '' : 's'} ahead.`;
  if (running) return 'Measuring the policies…';
  if (failure) return `No remat rows: the run failed after the split (${failure.error_class ?? failure.kind}; see the error).`;
  return '';
}

/**
 * The note under the remat table: what the bytes (and, when rows were compiled, the times) are,
 * and which gradient was taken (`backticks`: code, for RichText).
 */
export function rematNote(rows: readonly RematPolicyMeasured[], residualsOnly: boolean): string {
  const first = rows[0];
  if (first === undefined) return '';
  const of = first.grad_of === 'f' ? 'f' : "the sum of f's outputs (f does not return a scalar)";
  if (residualsOnly)
    return (
      `Residual bytes are exact: they are what \`jax.checkpoint\` saves for the gradient of ${of} with respect ` +
      'to its floating-point arguments; integer and static arguments stay fixed.'
    );
  const where = first.device.startsWith('cpu') ? 'CPU' : 'device';
  return (
    `Times are measured on the worker's ${where} (${first.device}), the median of ${first.repeats} calls after a ` +
    'warm-up: at this size they are dominated by dispatch, and vary from run to run. Bytes are exact. The ' +
    `gradient is that of ${of} with respect to its floating-point arguments; integer and static arguments stay fixed.`
  );
}
