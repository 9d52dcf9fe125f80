/**
 * The xla_cache exhibit's view model: one row per training step (torch_xla's metric counters
 * after the step's sync), the steps that compiled, and the loop's finding, as pure functions of
 * the events (tested on the golden stream in `view-model.test.ts`).
 */
import type { Event, EventOf } from '../../frontend/src/protocol';
import { eventsOf, lastOf } from '../../frontend/src/widgets/events';
import { formatMs } from '../../frontend/src/widgets/format';

export type StepCounted = EventOf<'xla_step_counted'>;

/** One graph cut inside a step that ran a program (issue 33). */
export interface CutRow {
  /** the snippet line, null for the step's end */
  line: number | null;
  /** `.item()`, `float()`, `torch_xla.sync`, `step end`, ... */
  call: string;
  /** `compiled` (UncachedCompile grew), else `cached` */
  compile: string;
  executions: number;
  /** the RNG seed updates the read's graph carries ('' when none) */
  seeds: string;
}

/** One row of the steps table. */
export interface StepRow {
  step: number;
  inputs: string;
  /** the graph hash's first 8 hex digits */
  hash: string;
  newHash: boolean;
  /** `compiled` (UncachedCompile), `cache hit` (CachedCompile), or '' */
  compile: string;
  compileTime: string;
  executions: number;
  executeTime: string;
  toDevice: number;
  fromDevice: number;
  wall: string;
  changed: string[];
  cuts: CutRow[];
}

const ms = (ns: number): string => formatMs(ns / 1e6);

export function stepRows(events: readonly Event[]): StepRow[] {
  return eventsOf(events, 'xla_step_counted').map((e) => ({
    step: e.step,
    inputs: e.inputs.join(', '),
    hash: e.graph_hash.slice(0, 8),
    newHash: e.new_hash,
    compile: e.counters.uncached > 0 ? 'compiled' : e.counters.cached > 0 ? 'cache hit' : '',
    compileTime: e.counters.compiles > 0 ? ms(e.counters.compile_ns) : '',
    executions: e.counters.executions,
    executeTime: ms(e.counters.execute_ns),
    toDevice: e.counters.to_device,
    fromDevice: e.counters.from_device,
    wall: ms(e.wall_ns),
    changed: e.changed,
    cuts: e.cuts.map((c) => ({
      line: c.line,
      call: c.call,
      compile: c.uncached > 0 ? 'compiled' : 'cached',
      executions: c.executions,
      seeds: c.seeds > 0 ? String(c.seeds) : '',
    })),
  }));
}

/** The loop's summary: compiles and cache hits in all, and the finding (null when none). */
export interface LoopSummary {
  steps: number;
  compiles: number;
  cacheHits: number;
  graphs: number;
  finding: {
    /** the finding's class: RecompileEveryStep, CompilesInsideStep or HostReadSplitsStep */
    kind: string;
    /** what was counted, in words */
    what: string;
    fix: string;
    line: number | null;
  } | null;
  losses: number[];
}

export function summary(events: readonly Event[]): LoopSummary | null {
  const end = lastOf(events, 'xla_loop_finished');
  if (end === undefined) return null;
  const steps = eventsOf(events, 'xla_step_counted');
  return {
    steps: steps.length,
    compiles: steps.reduce((n, e) => n + e.counters.uncached, 0),
    cacheHits: steps.reduce((n, e) => n + e.counters.cached, 0),
    graphs: end.graph_hashes.length,
    finding: end.cause === '' ? null : { ...finding(end), fix: end.fix, line: end.line ?? null },
    losses: end.losses,
  };
}

const CAUSES: Record<string, string> = {
  shape: 'a new input shape',
  device_pad: 'a new input shape, padded on the device',
  constant: 'a changing constant in the graph',
};

/** The finding's class and what was counted, as the CLI says them (artefacts.py). */
function finding(end: EventOf<'xla_loop_finished'>): { kind: string; what: string } {
  if (end.cause === 'seed' || end.cause === 'repeat') return { kind: 'CompilesInsideStep', what: end.detail };
  if (end.cause === 'host_read') return { kind: 'HostReadSplitsStep', what: end.detail };
  const steps = end.recompiling_steps.join(', ');
  return { kind: 'RecompileEveryStep', what: `compiled again on steps ${steps}: ${CAUSES[end.cause] ?? end.cause}` };
}
