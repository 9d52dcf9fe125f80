/**
 * The stations exhibit's view model: pure functions from the run's events to the four stations of
 * a jitted call (Traced, Lowered, Compiled, Run), their progress, the `jax.monitoring` stage
 * timeline, the rows of the cost and memory tables, where the optimized HLO opens, and what is
 * still loading of a program too large for one event (design 0045, "The stations' texts").
 */
import type {
  Event,
  ExecutableCompiled,
  HloLink,
  JaxprStaged,
  ModuleLowered,
  OpLink,
  ProgramExecuted,
  RunFailed,
  Stage,
  StageTimed,
} from '../../frontend/src/protocol';
import type { MemoryPeak, ProgramProfiled } from '../../frontend/src/gen/protocol';
import { listLength, nextListRangeIds } from '../../frontend/src/store/list-ranges';
import { formatCount, humanBytes } from '../../frontend/src/widgets/format';
import { eventsOf, lastOf } from '../../frontend/src/widgets/events';

export type StationId = 'trace' | 'lower' | 'compile' | 'run';

export type StationStatus = 'pending' | 'running' | 'done' | 'failed' | 'not_run';

export interface Station {
  id: StationId;
  /** the station's title: Traced, Lowered, Compiled, Run */
  title: string;
  /** the JAX object the station holds */
  holds: string;
  status: StationStatus;
  /** why a `not_run` station was not run (`compile only for TPU v5e`), else null */
  note: string | null;
}

export const STATIONS: readonly { id: StationId; title: string; holds: string; artefact: Event['type'] }[] = [
  { id: 'trace', title: 'Traced', holds: 'jaxpr (jax.stages.Traced)', artefact: 'jaxpr_staged' },
  { id: 'lower', title: 'Lowered', holds: 'StableHLO (jax.stages.Lowered)', artefact: 'module_lowered' },
  { id: 'compile', title: 'Compiled', holds: 'executable (jax.stages.Compiled)', artefact: 'executable_compiled' },
  { id: 'run', title: 'Run', holds: 'output arrays on a device', artefact: 'program_executed' },
];

/**
 * Each station's status: `done` once its artefact arrived; `running` after its `stage_started`
 * while the run has not ended; `failed` when the run failed in it (`run_failed.stage`, or the
 * running station when the failure names none); `not_run` for the Run station of a program
 * compiled for a machine that is not here (`executable_compiled.compiled_for`, stations' TPU v5e
 * target: compile only, design 0067); else `pending`.
 */
export function stationStatuses(events: readonly Event[]): Station[] {
  const started = new Set<Stage>(eventsOf(events, 'stage_started').map((e) => e.stage));
  const arrived = new Set<string>(events.map((e) => e.type));
  const failure = lastOf(events, 'run_failed');
  const finished = failure !== undefined || arrived.has('run_finished');
  const compiledFor = lastOf(events, 'executable_compiled')?.compiled_for ?? null;
  return STATIONS.map(({ id, title, holds, artefact }) => {
    let status: StationStatus = 'pending';
    let note: string | null = null;
    if (arrived.has(artefact)) status = 'done';
    else if (started.has(id)) {
      if (failure !== undefined && (failure.stage === id || failure.stage === null)) status = 'failed';
      else if (!finished) status = 'running';
    } else if (failure !== undefined && failure.stage === id) status = 'failed';
    else if (id === 'run' && compiledFor !== null) {
      status = 'not_run';
      note = `compile only for ${compiledFor}`;
    }
    return { id, title, holds, status, note };
  });
}

export interface TimelineBar {
  /** JAX's event name, e.g. `/jax/core/compile/backend_compile_duration` */
  event: string;
  stage: Stage;
  fun_name: string | null;
  duration_ms: number;
  /** share of the longest bar, 0..1 */
  fraction: number;
}

/** The `stage_timed` durations as bars scaled to the longest one. */
export function timeline(events: readonly Event[]): TimelineBar[] {
  const timed: StageTimed[] = eventsOf(events, 'stage_timed');
  const longest = Math.max(0, ...timed.map((t) => t.duration_ms));
  return timed.map((t) => ({
    event: t.event,
    stage: t.stage,
    fun_name: t.fun_name,
    duration_ms: t.duration_ms,
    fraction: longest > 0 ? t.duration_ms / longest : 0,
  }));
}

export interface FigureRow {
  /** the key as JAX reports it (`bytes accessed0{}`), kept beside the label and in its title */
  key: string;
  /** what it means, in words (`bytes accessed, operand 0`) */
  label: string;
  /** the value for people with its unit (`640 B`, `1,087 FLOPs`), or `not reported` */
  value: string;
  reported: boolean;
}

/** Names XLA's cost analysis uses, in the order the table lists them. */
const COST_ORDER = ['flops', 'transcendentals', 'bytes accessed', 'optimal_seconds', 'utilization'];

/**
 * XLA's per-operand keys (`HloCostAnalysis::GetOperandBytesAccessedKey` and friends): the base
 * name, the operand number or `out`, then the shape index inside a tuple operand (`{}` for the
 * whole operand). jaxlib 0.10 writes them run together (`bytes accessed0{}`,
 * `bytes accessedout{}`, `utilization1{}`); spaced and spelled-out forms (`bytes accessed operand
 * 0 {}`, `bytes accessed output {}`) are read the same way.
 */
const PER_OPERAND = /^(bytes accessed|utilization)\s*(?:operand\s*)?(out(?:put)?|\d+)\s*\{([^}]*)\}$/;

/** What one `cost_analysis()` key means (`bytes accessed1{}` is operand 1's bytes, `out` the output's). */
export function costLabel(key: string): string {
  const m = PER_OPERAND.exec(key);
  if (m) {
    const [, base, which = '', index = ''] = m;
    const operand = which.startsWith('out') ? 'output' : `operand ${which}`;
    return `${base}, ${operand}${index.trim() ? `, tuple element {${index}}` : ''}`;
  }
  if (key === 'flops') return 'floating-point operations';
  if (key === 'transcendentals') return 'transcendental operations (exp, log, tanh, …)';
  if (key === 'bytes accessed') return 'bytes accessed, in all';
  if (key === 'optimal_seconds') return "optimal seconds (XLA's estimate)";
  return key;
}

/** The unit of a cost key's value, where XLA's cost model gives one (`''`: a plain count or ratio). */
export function costUnit(key: string): string {
  if (key.startsWith('bytes accessed')) return 'B';
  if (key === 'flops') return 'FLOPs';
  if (key === 'optimal_seconds') return 's';
  return '';
}

/**
 * A figure exactly as XLA reported it: a whole number with its digits grouped (`8,000,000,000`),
 * any other number in JavaScript's shortest round-trip form (`1.5e-7`, `0.3333333333333333`).
 * Both write the shortest digits that read back as the same double, as Python's `repr` does.
 * Never rounded: `formatCount` keeps 3 decimals, which would show an `optimal_seconds` of 1.5e-7
 * as `0`.
 */
export function exactFigure(v: number): string {
  return Number.isInteger(v) ? v.toLocaleString('en-US') : String(v);
}

const costRank = (key: string): number => {
  const i = COST_ORDER.findIndex((k) => key === k || key.startsWith(k));
  return i < 0 ? COST_ORDER.length : i;
};

/**
 * The rows of `Compiled.cost_analysis()`, ordered flops, transcendentals, bytes, utilization,
 * each value exactly XLA's with its unit (bytes also in binary units when over 1 KiB).
 * A negative value (XLA's `-1`) or a missing one means the backend did not report it.
 */
export function costRows(cost: Readonly<Record<string, number | undefined>> | null): FigureRow[] {
  if (cost === null) return [];
  return Object.entries(cost)
    .sort(([a], [b]) => costRank(a) - costRank(b) || a.localeCompare(b, 'en', { numeric: true }))
    .map(([key, v]) => {
      const reported = v !== undefined && Number.isFinite(v) && v >= 0;
      if (!reported) return { key, label: costLabel(key), value: 'not reported', reported };
      const unit = costUnit(key);
      const human = unit === 'B' && v >= 1024 ? ` (${humanBytes(v)})` : '';
      return { key, label: costLabel(key), value: `${exactFigure(v)}${unit ? ` ${unit}` : ''}${human}`, reported };
    });
}

/** The rows of `Compiled.memory_analysis()` (bytes), in human units. */
export function memoryRows(memory: Readonly<Record<string, number | undefined>> | null): FigureRow[] {
  if (memory === null) return [];
  return Object.entries(memory).map(([key, v]) => {
    const reported = v !== undefined && Number.isFinite(v) && v >= 0;
    const label = key.replace(/_in_bytes$/, '').replace(/_/g, ' ');
    return { key, label, value: reported ? humanBytes(v) : 'not reported', reported };
  });
}

/** Everything the stations view shows. */
export interface StationsModel {
  stations: Station[];
  traced: JaxprStaged | undefined;
  lowered: ModuleLowered | undefined;
  compiled: ExecutableCompiled | undefined;
  executed: ProgramExecuted | undefined;
  /** the accelerator's per-instruction profile (design 0073), absent on the CPU */
  profiled: ProgramProfiled | undefined;
  bars: TimelineBar[];
  failure: RunFailed | undefined;
}

export function stationsModel(events: readonly Event[]): StationsModel {
  return {
    stations: stationStatuses(events),
    traced: lastOf(events, 'jaxpr_staged'),
    lowered: lastOf(events, 'module_lowered'),
    compiled: lastOf(events, 'executable_compiled'),
    executed: lastOf(events, 'program_executed'),
    profiled: lastOf(events, 'program_profiled'),
    bars: timeline(events),
    failure: lastOf(events, 'run_failed'),
  };
}

/** The sentence comparing the time of an async dispatch with the time until the result is ready. */
export function dispatchSentence(run: ProgramExecuted): string {
  const ratio = run.dispatch_ms > 0 ? run.blocked_ms / run.dispatch_ms : Number.POSITIVE_INFINITY;
  const ready = run.ready_after_dispatch
    ? 'The result was already ready when the call returned (the work was tiny or ran synchronously).'
    : 'The result was not ready yet when the call returned: the device was still computing.';
  const times = Number.isFinite(ratio) ? ` (${ratio.toFixed(1)}× the dispatch time)` : '';
  return (
    'A jitted call returns as soon as the work is enqueued on the device (async dispatch); ' +
    `block_until_ready() waits for the result${times}. Time with it when you benchmark. ${ready}`
  );
}

/**
 * The line the optimized HLO opens on: its first instruction from the user's code (one whose
 * metadata names a snippet line), not the module header and the stack frame tables above it
 * (which list the harness's files too). Undefined when no instruction came from the snippet.
 */
export function firstUserInstruction(compiled: ExecutableCompiled | undefined): number | undefined {
  let first: number | undefined;
  for (const link of compiled?.hlo_links ?? []) {
    if (link.source && (first === undefined || link.line < first)) first = link.line;
  }
  return first;
}

/** The tooltip of an optimized HLO instruction: opcode, name stack, user line, eqns. */
export function hloTitle(link: HloLink): string {
  const where = link.source ? ` · line ${link.source.line}` : '';
  const eqns = link.eqn_indices.length ? ` · eqn ${link.eqn_indices.join(', ')}` : '';
  return `${link.opcode}${link.op_name ? ` · ${link.op_name}` : ''}${where}${eqns}`;
}

/** The tooltip of a StableHLO op: op, name stack, user line, eqns. */
export function opTitle(link: OpLink): string {
  const where = link.source ? ` · line ${link.source.line}` : '';
  const eqns = link.eqn_indices.length ? ` · eqn ${link.eqn_indices.join(', ')}` : '';
  return `${link.op}${link.name_stack ? ` · ${link.name_stack}` : ''}${where}${eqns}`;
}

/** The texts of the Lowered and Compiled stations that may come in ranges, and their names for people. */
export type StationText = 'stablehlo' | 'hlo' | 'compiled_text';

const TEXT_NAMES: Record<StationText, string> = {
  stablehlo: 'StableHLO',
  hlo: 'HLO',
  compiled_text: 'optimized HLO',
};

/**
 * The note over a station's text while the rest of it is still coming in list ranges (an
 * `on_demand` run of a program of thousands of eqns: `module_lowered.stablehlo`, `hlo`,
 * `executable_compiled.compiled_text` past their first lines): "loading the rest of the
 * StableHLO: N of M characters", N what the page has, M the whole text (`listLength`, code
 * points as the backend counts). Null when the text is whole (never cut, or every range merged).
 */
export function textLoadingNote(
  event: ModuleLowered | ExecutableCompiled | undefined,
  field: StationText,
): string | null {
  if (event === undefined || !(field in event)) return null;
  const text = (event as unknown as Record<string, unknown>)[field];
  if (typeof text !== 'string') return null;
  const total = listLength(event, field);
  const loaded = [...text].length;
  if (loaded >= total) return null;
  return `loading the rest of the ${TEXT_NAMES[field]}: ${formatCount(loaded)} of ${formatCount(total)} characters`;
}

/**
 * The detail ids the stations view asks for while shown: the next range of each text and link
 * list of the Lowered and Compiled stations still to come (one at a time per field: the next is
 * asked for once the last was merged), none once they are whole.
 */
export function pendingRangeIds(model: StationsModel): string[] {
  return [model.lowered, model.compiled].flatMap((event) => (event === undefined ? [] : nextListRangeIds(event)));
}

/** Whether some links of `field` (`op_links`, `hlo_links`) of `event` are still to come. */
export function linksLoading(
  event: ModuleLowered | ExecutableCompiled | undefined,
  field: 'op_links' | 'hlo_links',
): boolean {
  return (event?.list_ranges ?? []).some((r) => r.field === field);
}

/** One row of the accelerator's profile table (design 0073): an HLO instruction's measured time
 * per call beside XLA's estimate and the roofline, in display units. */
export interface ProfileRow {
  instruction: string;
  /** 0-based line of the instruction in the optimized HLO, null without a link */
  line: number | null;
  opName: string;
  sourceLine: number | null;
  measuredUs: string;
  perCall: string;
  flops: string;
  hbmBytes: string;
  rooflineUs: string;
  /** the roofline's time over the measured time, as a percentage, or '–' without an estimate */
  ofRoofline: string;
  boundBy: string;
}

const us = (ns: number | null | undefined): string => (ns === null || ns === undefined ? '–' : (ns / 1e3).toFixed(2));

/** The `limit` slowest instructions of a profile (the event lists them slowest first). */
export function profileRows(p: ProgramProfiled, limit = 25): ProfileRow[] {
  return p.instructions.slice(0, limit).map((r) => ({
    instruction: r.instruction,
    line: r.line ?? null,
    opName: r.op_name ?? '',
    sourceLine: r.source?.line ?? null,
    measuredUs: us(r.measured_ns),
    perCall: String(r.per_call),
    flops: r.flops === null || r.flops === undefined ? '–' : formatCount(r.flops),
    hbmBytes: r.hbm_bytes === null || r.hbm_bytes === undefined ? '–' : humanBytes(r.hbm_bytes),
    rooflineUs: us(r.bound_ns),
    ofRoofline: r.fraction === null || r.fraction === undefined ? '–' : `${(r.fraction * 100).toFixed(1)}%`,
    boundBy: r.bound_by ?? '–',
  }));
}

/** The profile's one-line summary: the step on the device, the instructions' sum, the peaks. */
export function profileSummary(p: ProgramProfiled): string {
  const step = p.step_ns ?? null;
  const share = step ? ` (${((p.ops_ns / step) * 100).toFixed(1)}% of the step)` : '';
  const peaks =
    p.peak_flops && p.peak_bytes
      ? ` Roofline against ${p.peak_flops / 1e12} TFLOP/s and ${p.peak_bytes / 1e9} GB/s (${p.peaks_source ?? ''}).`
      : '';
  return (
    `${p.device_kind}: the step took ${us(step)} µs on the device (median of ${p.calls} runs in a jax.profiler trace); ` +
    `its ${p.instructions.length} instructions add up to ${us(p.ops_ns)} µs${share}.${peaks}`
  );
}

/** One buffer live at a TPU compile's memory peak, in display units. */
export interface PeakRow {
  key: string;
  bytes: string;
  space: string;
  shape: string;
  instruction: string;
  line: number | null;
  opName: string;
  sourceLine: number | null;
}

/** The `limit` largest buffers live at the memory peak (the event lists them largest first). */
export function peakRows(peak: MemoryPeak, limit = 20): PeakRow[] {
  return peak.buffers.slice(0, limit).map((b, i) => ({
    key: `${i}:${b.instruction}{${b.index}}`,
    bytes: humanBytes(b.bytes),
    space: b.space === 'default' ? 'HBM' : b.space,
    shape: b.shape,
    instruction: b.index ? `${b.instruction}{${b.index}}` : b.instruction,
    line: b.line ?? null,
    opName: b.op_name ?? '',
    sourceLine: b.source?.line ?? null,
  }));
}

/** The bytes live at the peak per memory space ("HBM 1.0 KiB, vmem 220 B"). */
export function peakSummary(peak: MemoryPeak): string {
  return Object.entries(peak.peak_by_space)
    .map(([space, bytes]) => `${space === 'default' ? 'HBM' : space} ${humanBytes(bytes ?? 0)}`)
    .join(', ');
}
