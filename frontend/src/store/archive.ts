/**
 * The previous run of each exhibit, kept for "Compare with the previous run" (design 0043). Pure:
 * the shell calls `observeRun` whenever the store's run changes (new events, details arriving)
 * with the code that run was started with. While a run is the store's, the archive follows its
 * latest state (so the details fetched after it ended are in); when the store begins another
 * run, a run that finished becomes its exhibit's `previous` (a failed or cancelled run is not
 * kept: it has no artefacts to compare, and the previous finished one stays).
 */
import type { Event, RunOptions } from '../protocol';
import type { RunState } from './reducer';

/** A run as the compare view needs it. */
export interface ArchivedRun {
  runId: string;
  exhibit: string;
  code: string;
  options: RunOptions;
  status: RunState['status'];
  events: readonly Event[];
  /** client time (ms) when it ended */
  endedAt: number | null;
}

export interface ArchiveState {
  /** the store's run, as last observed */
  latest: ArchivedRun | null;
  /** the last finished run of each exhibit before the store's run */
  previous: Readonly<Record<string, ArchivedRun>>;
}

export const EMPTY_ARCHIVE: ArchiveState = { latest: null, previous: {} };

/** The archive after the store's run was seen as `run`, started with `code`. */
export function observeRun(state: ArchiveState, run: RunState, code: string): ArchiveState {
  if (run.runId === null || run.exhibit === null) return state;
  let previous = state.previous;
  const latest = state.latest;
  if (latest !== null && latest.runId !== run.runId && latest.status === 'finished') {
    previous = { ...previous, [latest.exhibit]: latest };
  }
  const now: ArchivedRun = {
    runId: run.runId,
    exhibit: run.exhibit,
    code: latest !== null && latest.runId === run.runId ? latest.code : code,
    options: run.options,
    status: run.status,
    events: run.events,
    endedAt: run.endedAt,
  };
  return { latest: now, previous };
}

/** The run to compare the store's finished run of `exhibit` with, or null (none, or the store's run is not finished). */
export function previousRun(state: ArchiveState, exhibit: string): ArchivedRun | null {
  const latest = state.latest;
  if (latest === null || latest.exhibit !== exhibit || latest.status !== 'finished') return null;
  // An own property only: an exhibit id is data (`constructor` must find no run).
  const previous = Object.hasOwn(state.previous, exhibit) ? state.previous[exhibit] : undefined;
  return previous !== undefined && previous.runId !== latest.runId ? previous : null;
}
