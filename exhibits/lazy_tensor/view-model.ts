/**
 * The lazy_tensor exhibit's view model: the line steps (the pending IR after each line of `f`,
 * and the cuts), the graph before the sync and the hash experiments, as pure functions of the
 * events (tested on the golden stream in `view-model.test.ts`).
 */
import type { Event, EventOf } from "../../frontend/src/protocol";
import { eventsOf } from "../../frontend/src/widgets/events";

export type LineStep = EventOf<"lazy_line_stepped">;

/** One row of the steps table. */
export interface StepRow {
  index: number;
  line: number;
  source: string;
  pending: number;
  added: number;
  /** the programs torch_xla ran during the line: > 0 means the line cut the graph */
  cut: number;
  compiles: number;
}

export function stepRows(events: readonly Event[]): StepRow[] {
  return eventsOf(events, "lazy_line_stepped").map((e, index) => ({
    index,
    line: e.line,
    source: e.source,
    pending: e.pending.length,
    added: e.new_nodes,
    cut: e.executions,
    compiles: e.compiles,
  }));
}

/** The IR lines of step `index`, each marked when it was made by that step's line. */
export function stepNodes(
  events: readonly Event[],
  index: number,
): { text: string; fresh: boolean; line: number | null }[] {
  const step = eventsOf(events, "lazy_line_stepped")[index];
  if (!step) return [];
  return step.pending.map((n) => ({
    text: n.text,
    fresh: n.line === step.line,
    line: n.line ?? null,
  }));
}

export function built(
  events: readonly Event[],
): EventOf<"lazy_graph_built"> | undefined {
  return eventsOf(events, "lazy_graph_built").at(-1);
}

export function synced(
  events: readonly Event[],
): EventOf<"lazy_graph_synced"> | undefined {
  return eventsOf(events, "lazy_graph_synced").at(-1);
}

export function hashes(
  events: readonly Event[],
): EventOf<"graph_hash_compared"> | undefined {
  return eventsOf(events, "graph_hash_compared").at(-1);
}
