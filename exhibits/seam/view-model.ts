/**
 * The seam exhibit's view model: one training step's crossings of torch_xla's ComputationClient
 * boundary (method, direction, where in the loop, metric sample, bytes, trace span, the PJRT
 * spans inside it, the C++ method and PJRT call cited), one row per step, and the two-lane
 * picture's layout, as pure functions of the events (tested on the golden stream in
 * `view-model.test.ts`).
 */
import type { Event, EventOf } from '../../frontend/src/protocol';
import { eventsOf, lastOf } from '../../frontend/src/widgets/events';
import { formatMs, humanBytes } from '../../frontend/src/widgets/format';

export type StepCrossed = EventOf<'seam_step_crossed'>;
type Crossing = StepCrossed['crossings'][number];
type Cited = EventOf<'seam_loop_finished'>['methods'][number];

/** down: host to device (data or program); up: device to host; run: on the device */
export type Direction = 'down' | 'up' | 'run';

const DIRECTION: Record<Crossing['method'], Direction> = {
  TransferToDevice: 'down',
  TransferShardsToDevice: 'down',
  Compile: 'down',
  ExecuteComputation: 'run',
  ExecuteReplicated: 'run',
  TransferFromDevice: 'up',
  ReplicateShardedData: 'run',
};

/** What crosses, in the explainer's words. */
const WHAT: Record<Crossing['method'], string> = {
  TransferToDevice: 'data down',
  TransferShardsToDevice: 'shards down (its TransferToDevice inside)',
  Compile: 'program down',
  ExecuteComputation: 'run',
  ExecuteReplicated: 'run on every device',
  TransferFromDevice: 'value up',
  ReplicateShardedData: 'shards gathered into one value',
};

const ms = (ns: number): string => formatMs(ns / 1e6);

/** One crossing as the view shows it. */
export interface CrossingView {
  index: number;
  method: Crossing['method'];
  direction: Direction;
  what: string;
  /** `upload`, `f line 17`, `sync`, `read line 18` */
  where: string;
  line: number | null;
  source: string;
  /** the method's metric sample ('' when the metrics did not give one) */
  metric: string;
  /** bytes moved ('' for non-transfers) */
  bytes: string;
  /** the trace span's start from the step's trace start, and its length */
  at: string;
  span: string;
  thread: string;
  /** the PJRT spans inside the crossing's span, each once, in order */
  pjrt: string[];
  cited: Cited | null;
}

function where(c: Crossing): string {
  return c.line !== null && c.line !== undefined ? `${c.phase} line ${c.line}` : c.phase;
}

export function crossings(events: readonly Event[], step: number): CrossingView[] {
  const e = eventsOf(events, 'seam_step_crossed').find((s) => s.step === step);
  if (e === undefined) return [];
  const cited = lastOf(events, 'seam_loop_finished')?.methods ?? [];
  return e.crossings.map((c, index) => ({
    index,
    method: c.method,
    direction: DIRECTION[c.method],
    what: WHAT[c.method],
    where: where(c),
    line: c.line ?? null,
    source: c.source,
    metric: c.metric_ns !== null && c.metric_ns !== undefined ? ms(c.metric_ns) : '',
    bytes: c.bytes !== null && c.bytes !== undefined ? humanBytes(c.bytes) : '',
    at: c.start_us !== null && c.start_us !== undefined ? formatMs(c.start_us / 1e3) : '',
    span: c.dur_us !== null && c.dur_us !== undefined ? formatMs(c.dur_us / 1e3) : '',
    thread: c.thread,
    pjrt: [...new Set(c.pjrt.map((s) => s.name))],
    cited: cited.find((m) => m.method === c.method) ?? null,
  }));
}

/** One row of the steps table. */
export interface StepRow {
  step: number;
  crossings: number;
  /** `2 (160 B)`: calls, then their bytes */
  down: string;
  compile: string;
  run: string;
  up: string;
  loss: string;
  traced: boolean;
}

export function stepRows(events: readonly Event[]): StepRow[] {
  return eventsOf(events, 'seam_step_crossed').map((e) => {
    const m = e.metrics;
    const runs = m.executions + m.replicated;
    return {
      step: e.step,
      crossings: e.crossings.length,
      down: m.to_device > 0 ? `${m.to_device} (${humanBytes(m.outbound_bytes)})` : '0',
      compile: m.compiles > 0 ? `${m.compiles} (${ms(m.compile_ns)})` : '0',
      run: runs > 0 ? `${runs} (${ms(m.execute_ns + m.replicated_ns)})` : '0',
      up:
        (m.from_device > 0 ? `${m.from_device} (${humanBytes(m.inbound_bytes)})` : '0') +
        // SPMD: the ReplicateShardedData counter (no span); absent from older streams
        ((m.replicate_sharded ?? 0) > 0 ? ` via ReplicateShardedData x${m.replicate_sharded}` : ''),
      loss: e.loss.toPrecision(6),
      traced: e.trace_ok,
    };
  });
}

/** The picture: two lanes, one column per crossing, in the trace's order. */
export interface LaneArrow {
  index: number;
  x: number;
  direction: Direction;
  method: string;
  /** short label under the arrow: the metric sample or the span */
  label: string;
  /** the bytes a transfer moved ('' for the others) */
  bytes: string;
}

export const LANE = { left: 104, gap: 92, host: 34, device: 126, height: 176 } as const;

export function laneArrows(views: readonly CrossingView[]): { arrows: LaneArrow[]; width: number } {
  const arrows = views.map((v) => ({
    index: v.index,
    x: LANE.left + v.index * LANE.gap,
    direction: v.direction,
    method: v.method,
    label: v.metric || v.span,
    bytes: v.bytes,
  }));
  return { arrows, width: LANE.left + Math.max(1, views.length) * LANE.gap };
}

/** The run's summary: the losses, the device, SPMD, the steps that compiled. */
export interface SeamSummary {
  losses: number[];
  device: string;
  spmd: boolean;
  compiledSteps: number[];
  allTraced: boolean;
}

export function summary(events: readonly Event[]): SeamSummary | null {
  const end = lastOf(events, 'seam_loop_finished');
  if (end === undefined) return null;
  const steps = eventsOf(events, 'seam_step_crossed');
  return {
    losses: end.losses,
    device: end.device,
    spmd: end.spmd,
    compiledSteps: steps.filter((s) => s.metrics.compiles > 0).map((s) => s.step),
    allTraced: steps.every((s) => s.trace_ok),
  };
}
