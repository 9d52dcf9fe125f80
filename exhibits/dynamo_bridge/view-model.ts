/**
 * The dynamo_bridge exhibit's view model: the regions of f in source order (XLA programs and
 * the host code between them), the FX graphs dynamo handed over, and one row per call of the
 * compiled function (compiled or replayed by hash), as pure functions of the events (tested on
 * the golden stream in `view-model.test.ts`).
 */
import type { Event, EventOf } from '../../frontend/src/protocol';
import { eventsOf, lastOf } from '../../frontend/src/widgets/events';
import { formatMs } from '../../frontend/src/widgets/format';

export type GraphCaptured = EventOf<'dynamo_graph_captured'>;

const ms = (ns: number): string => formatMs(ns / 1e6);
/** A graph hash's first 8 hex digits. */
export const short = (hash: string): string => hash.slice(0, 8);

/** One region of f, in source order. */
export interface RegionRow {
  index: number;
  kind: 'xla' | 'host';
  /** `XLA program 0` or `host` */
  label: string;
  graph: number;
  lines: number[];
  /** `lines 9-10`, `line 10`, or '' */
  linesText: string;
  what: string;
  hash: string;
  /** the program's aten FX code, or the host line's source */
  code: string;
}

function linesText(lines: readonly number[]): string {
  if (lines.length === 0) return '';
  const lo = Math.min(...lines);
  const hi = Math.max(...lines);
  return lo === hi ? `line ${lo}` : `lines ${lo}-${hi}`;
}

export function regionRows(events: readonly Event[]): RegionRow[] {
  const found = lastOf(events, 'dynamo_regions_found');
  if (found === undefined) return [];
  return found.regions.map((r, index) => ({
    index,
    kind: r.kind,
    label: r.kind === 'xla' ? `XLA program ${r.program ?? '?'}` : 'host',
    graph: r.graph,
    lines: r.lines,
    linesText: linesText(r.lines),
    what: r.what,
    hash: r.graph_hash,
    code: r.code,
  }));
}

/** One FX graph as dynamo handed it over. */
export interface GraphCard {
  index: number;
  frame: string;
  code: string;
  /** the first line of dynamo's reason for ending the graph */
  reason: string;
  graphBreak: boolean;
  breakLine: number | null;
  /** its op nodes (call_function/call_method/call_module) */
  callCount: number;
  /** the snippet lines its nodes' stack traces name */
  lines: number[];
}

export function graphCards(events: readonly Event[]): GraphCard[] {
  return eventsOf(events, 'dynamo_graph_captured').map((g) => ({
    index: g.index,
    frame: g.frame,
    code: g.code,
    reason: g.reason.trim().split('\n')[0] ?? '',
    graphBreak: g.graph_break,
    breakLine: g.break_line ?? null,
    callCount: g.nodes.filter((n) => n.op.startsWith('call_')).length,
    lines: [...new Set(g.nodes.map((n) => n.line).filter((l): l is number => l !== null && l !== undefined))].sort(
      (a, b) => a - b,
    ),
  }));
}

/** One call of the compiled function. */
export interface CallRow {
  call: number;
  /** `compiled` when the bridge compiled a program during the call, else `replayed` */
  kind: 'compiled' | 'replayed';
  graphs: number;
  compiled: string[];
  launched: string[];
  extracts: number;
  compiles: number;
  compileTime: string;
  executions: number;
  wall: string;
}

export function callRows(events: readonly Event[]): CallRow[] {
  return eventsOf(events, 'dynamo_call_counted').map((e) => ({
    call: e.call,
    kind: e.compiled.length > 0 || e.counters.uncached > 0 ? 'compiled' : 'replayed',
    graphs: e.graphs.length,
    compiled: e.compiled.map(short),
    launched: e.launched.map(short),
    extracts: e.counters.extracts,
    compiles: e.counters.compiles,
    compileTime: e.counters.compiles > 0 ? ms(e.counters.compile_ns) : '',
    executions: e.counters.executions,
    wall: ms(e.wall_ns),
  }));
}

/** The run in one line: graphs, breaks, programs, and whether later calls only replayed. */
export interface RunSummary {
  graphs: number;
  breaks: number;
  programs: number;
  hostRegions: number;
  replayedOnly: boolean;
}

export function runSummary(events: readonly Event[]): RunSummary | null {
  const regions = regionRows(events);
  if (regions.length === 0) return null;
  const graphs = eventsOf(events, 'dynamo_graph_captured');
  const calls = callRows(events);
  return {
    graphs: graphs.length,
    breaks: graphs.filter((g) => g.graph_break).length,
    programs: regions.filter((r) => r.kind === 'xla').length,
    hostRegions: regions.filter((r) => r.kind === 'host').length,
    replayedOnly: calls.slice(1).every((c) => c.kind === 'replayed'),
  };
}

export type OutputsCompared = EventOf<'dynamo_outputs_compared'>;

export function outputs(events: readonly Event[]): OutputsCompared | undefined {
  return lastOf(events, 'dynamo_outputs_compared');
}
