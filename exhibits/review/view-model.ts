/**
 * The review exhibit's view model: the steps (`review_step_ran`), the static/dynamic table
 * (`review_args_read`) and the findings (`review_findings_found`) as the rows the view shows.
 * Pure functions of the events, tested on the golden streams (`view-model.test.ts`); the view
 * only lays them out.
 */
import type { Event, EventOf } from '../../frontend/src/protocol';
import { eventsOf, lastOf } from '../../frontend/src/widgets/events';

export type StepRan = EventOf<'review_step_ran'>;
export type FindingsFound = EventOf<'review_findings_found'>;
export type Finding = FindingsFound['findings'][number];
export type JitArgs = EventOf<'review_args_read'>['functions'][number];

/** What each finding kind answers, in the reviewer's words. */
export const QUESTIONS: Readonly<Record<Finding['kind'], string>> = {
  BakedConstant: 'a constant baked into the program',
  ImplicitRandomness: 'randomness that is not explicit',
  TracerBoolConversion: 'a Python decision on a traced value',
  ConcretizationTypeError: 'a concrete value needed while tracing',
  TracerIntegerConversion: 'a traced value used as a Python int',
  TracerArrayConversion: 'a traced value handed to numpy',
  NonConcreteBooleanIndex: 'a boolean mask with a traced size',
  UnexpectedTracer: 'a tracer escaped its trace',
  HostToDevice: 'host → device in the hot path',
  DeviceToHost: 'device → host in the hot path',
  JitInLoop: 'a jit made inside the loop',
  StaticChanged: 'a static part rebuilt each step',
};

/** One step's row: what ran and what JAX did. */
export interface StepRow {
  index: number;
  executables: number;
  /** `jit(loss_fn) ×2, jit(add)` or `none` */
  compiled: string;
  traced: number;
  hostReads: number;
  ms: string;
}

function counted(items: readonly { name: string; count: number }[]): string {
  if (items.length === 0) return 'none';
  return items.map((c) => (c.count > 1 ? `${c.name} ×${c.count}` : c.name)).join(', ');
}

/** The steps run so far. */
export function stepRows(events: readonly Event[]): StepRow[] {
  return eventsOf(events, 'review_step_ran').map((s) => ({
    index: s.index,
    executables: s.executables,
    compiled: counted(s.compiles),
    traced: s.traces.reduce((n, c) => n + c.count, 0),
    hostReads: s.host_reads,
    ms: s.wall_ms.toFixed(0),
  }));
}

/** The executables of the steps after the first (the loop's steady state), or null before. */
export function steadyExecutables(events: readonly Event[]): number | null {
  const steps = eventsOf(events, 'review_step_ran');
  const last = steps.at(-1);
  return steps.length > 1 && last !== undefined ? last.executables : null;
}

/** The jitted functions' static/dynamic tables (empty until read). */
export function argTables(events: readonly Event[]): JitArgs[] {
  return lastOf(events, 'review_args_read')?.functions ?? [];
}

/** The findings, or null before the review finished. */
export function findings(events: readonly Event[]): Finding[] | null {
  return lastOf(events, 'review_findings_found')?.findings ?? null;
}

/**
 * Why there are no findings to show yet: `running` (the step still runs), `failed` (the run ended
 * with `run_failed` before the review: the step raised), or `earlier` (the stepper is on an
 * event before the findings); null when the findings are there.
 */
export function findingsPending(events: readonly Event[], running: boolean): 'running' | 'failed' | 'earlier' | null {
  if (findings(events) !== null) return null;
  if (events.at(-1)?.type === 'run_failed') return 'failed';
  return running ? 'running' : 'earlier';
}

/** The lines of the findings, for the editor's highlight. */
export function findingLines(found: readonly Finding[]): number[] {
  return [...new Set(found.flatMap((f) => (f.line === null ? [] : [f.line])))];
}
