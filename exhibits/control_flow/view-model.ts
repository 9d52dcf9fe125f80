/**
 * The control_flow exhibit's view model: pure functions from the run's events to what the view
 * shows.
 *
 * The probe emits, in the trace stage, one `carry_checked` per type check JAX ran on a loop carry
 * or on cond/switch branch outputs (the user's prints of that trace as `stdout_printed`), then
 * `jaxpr_staged` (f's jaxpr, absent when JAX rejected a carry), then one `control_flow_shown` per
 * semantics fact. The stepper walks the checks one event per step; the current check is the last
 * one up to the cursor (or the one the user picked).
 */
import type { AvalView, Event, EventOf, JaxprStaged, RunFailed } from '../../frontend/src/protocol';
import { eventsOf, lastOf } from '../../frontend/src/widgets/events';

export type CarryChecked = EventOf<'carry_checked'>;
export type ControlFlowShown = EventOf<'control_flow_shown'>;
export type CarryLeaf = CarryChecked['leaves'][number];

export interface ControlFlowModel {
  /** the checks up to the cursor */
  checks: CarryChecked[];
  /** every check of the run (for the count) */
  allChecks: CarryChecked[];
  /** the check shown in the card */
  current: CarryChecked | undefined;
  /** f's jaxpr (from all events: it follows the checks) */
  staged: JaxprStaged | undefined;
  /** the semantics facts up to the cursor */
  shown: ControlFlowShown[];
  /** what the user's code printed while JAX traced it, and while the compiled f ran */
  tracePrints: string;
  runPrints: string;
  failure: RunFailed | undefined;
}

export function controlFlowModel(
  events: readonly Event[],
  allEvents: readonly Event[],
  picked?: number | null,
): ControlFlowModel {
  const checks = eventsOf(events, 'carry_checked');
  const prints = eventsOf(allEvents, 'stdout_printed');
  return {
    checks,
    allChecks: eventsOf(allEvents, 'carry_checked'),
    current: (picked == null ? undefined : checks.find((c) => c.index === picked)) ?? checks.at(-1),
    staged: lastOf(allEvents, 'jaxpr_staged'),
    shown: eventsOf(events, 'control_flow_shown'),
    tracePrints: prints
      .filter((p) => p.stage === 'trace')
      .map((p) => p.text)
      .join(''),
    runPrints: prints
      .filter((p) => p.stage === 'run')
      .map((p) => p.text)
      .join(''),
    failure: lastOf(allEvents, 'run_failed'),
  };
}

/** The user-facing function JAX ran the check for (`lax.fori_loop → scan`, `lax.cond`...). */
export function apiLabel(c: CarryChecked): string {
  if (c.fori) return c.primitive === 'scan' ? 'lax.fori_loop → scan' : 'lax.fori_loop → while_loop';
  if (c.api === 'scan body') return 'lax.scan';
  if (c.api === 'while_loop body') return 'lax.while_loop';
  return `lax.${c.api}`;
}

/** What the columns compare, in a sentence. */
export function comparedSentence(c: CarryChecked): string {
  if (c.primitive === 'cond') {
    return c.api === 'switch'
      ? 'JAX traced every branch on the same operands and compared their output types with branch 0.'
      : 'JAX traced both branches on the same operands and compared their output types.';
  }
  const fori = c.fori
    ? ` fori_loop's carry is (i, ${c.primitive === 'while' ? 'upper, ' : ''}your carry): leaf [0] is the loop index.`
    : '';
  return (
    "JAX traced the body once on the carry's entry types and compared the carry it returned, " +
    `leaf by leaf.${fori}`
  );
}

/** A key path as shown: `(the whole carry)` for the root (`keystr` of `()` is empty). */
export function pathText(path: string): string {
  return path === '' ? '(root)' : path;
}

/** `f32[3]`, `~i32[]` for a weak type (as `str(aval)` writes it), `—` for no leaf. */
export function typeText(aval: AvalView | null | undefined): string {
  if (aval == null) return '—';
  return `${aval.weak_type ? '~' : ''}${aval.short}`;
}

/** Which part of the type differs between two avals: `dtype`, `shape`, `weak type`, or none. */
export function typeDifference(
  a: AvalView | null | undefined,
  b: AvalView | null | undefined,
): string | null {
  if (a == null || b == null) return a == b ? null : 'missing';
  const parts: string[] = [];
  if (a.dtype !== b.dtype) parts.push('dtype');
  if (a.shape.length !== b.shape.length || a.shape.some((d, i) => d !== b.shape[i])) parts.push('shape');
  if (parts.length === 0 && a.weak_type !== b.weak_type) parts.push('weak type');
  return parts.length ? parts.join(' and ') : null;
}

export interface LeafRow {
  path: string;
  leaf: CarryLeaf;
  /** the leaf JAX's error names */
  differs: boolean;
  /** per compared column (after `init`): what differs from the first compared column */
  differences: (string | null)[];
}

/** One row per leaf; `differences[k]` compares column k with the first compared column. */
export function leafRows(c: CarryChecked): LeafRow[] {
  const first = c.columns[0] === 'init' ? 1 : 0;
  return c.leaves.map((leaf) => ({
    path: pathText(leaf.path),
    leaf,
    differs: c.leaf_path != null && leaf.path === c.leaf_path,
    differences: leaf.types.map((t, k) => (k <= first ? null : typeDifference(leaf.types[first], t))),
  }));
}

/** The verdict line: JAX's own outcome. */
export function verdictText(c: CarryChecked): string {
  if (c.ok) {
    const promoted = c.leaves.filter((l) => l.promoted).map((l) => pathText(l.path));
    return promoted.length
      ? `JAX accepted it, after promoting the weak-typed init ${promoted.join(', ')} to the body's output type`
      : 'JAX accepted it: every leaf has the same type on both sides';
  }
  return `JAX raised ${c.error_class ?? 'an error'}` + (c.leaf_path != null ? ` at ${pathText(c.leaf_path)}` : '');
}

/** The number of lines printed (a trailing newline does not start a line). */
export function printCount(text: string): number {
  if (text === '') return 0;
  return text.replace(/\n$/, '').split('\n').length;
}

export interface UnrollRow {
  unroll: number;
  ops: number;
  sine: number;
  /** sine instructions in the one computation that holds the most: the body's copies */
  sineFused: number;
  lines: number;
}

/** The unroll comparison's figures as table rows (unroll ascending). */
export function unrollRows(figures: Readonly<Record<string, number | undefined>>): UnrollRow[] {
  const rows: UnrollRow[] = [];
  for (const key of Object.keys(figures)) {
    const m = /^unroll_(\d+)_ops$/.exec(key);
    if (!m || m[1] === undefined) continue;
    const u = Number(m[1]);
    rows.push({
      unroll: u,
      ops: figures[key] ?? 0,
      sine: figures[`unroll_${u}_sine`] ?? 0,
      sineFused: figures[`unroll_${u}_sine_fused`] ?? 0,
      lines: figures[`unroll_${u}_lines`] ?? 0,
    });
  }
  return rows.sort((a, b) => a.unroll - b.unroll);
}

/** Headline of a semantics card. */
export const TOPIC_TITLE: Readonly<Record<string, string>> = {
  cond_traces_both: 'cond traces both branches',
  cond_vmap_select: 'cond under vmap becomes select_n',
  fori_static_scan: 'fori_loop, static bounds → scan',
  fori_traced_while: 'fori_loop, traced bound → while',
  unroll_hlo: 'unroll changes the compiled HLO',
};

export function topicTitle(s: ControlFlowShown): string {
  return (TOPIC_TITLE[s.topic] ?? s.topic) + (s.on_user_code ? ' (your f)' : '');
}

/** Figures worth a line of their own (the unroll ones go in a table). */
export function plainFigures(s: ControlFlowShown): [string, number][] {
  const out: [string, number][] = [];
  for (const [k, v] of Object.entries(s.figures)) {
    if (v !== undefined && !k.startsWith('unroll_') && k !== 'length') out.push([k, v]);
  }
  return out;
}
