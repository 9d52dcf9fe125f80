/**
 * The run bar's words for a torch worker's run (design 0025): torch_xla's version and the
 * `PJRT_DEVICE` the run's client is created with. A torch worker starts with `PJRT_DEVICE=CPU`
 * (`run_started.backend`), but the pjrt_registry exhibit creates its client with the string it
 * tries (design 0038): its header names that string, from the try's own event, and says so while
 * the try has not reported yet.
 */
import type { Event, RunStarted } from './protocol';
import { lastOf } from './widgets/events';

/** The exhibit whose run creates its PJRT client with a string of its own. */
export const OWN_CLIENT_EXHIBIT = 'pjrt_registry';

function shown(value: string | null | undefined): string {
  if (value === null || value === undefined) return 'PJRT_DEVICE unset';
  return value === '' ? 'PJRT_DEVICE=""' : `PJRT_DEVICE=${value}`;
}

export function torchRunInfo(runStarted: RunStarted, events: readonly Event[]): string {
  const head = `torch_xla ${runStarted.torch_xla_version ?? '?'}`;
  if (runStarted.exhibit !== OWN_CLIENT_EXHIBIT) return `${head} · PJRT_DEVICE=${runStarted.backend}`;
  const tried = events.find((e) => e.type === 'pjrt_client_tried');
  if (tried === undefined) return `${head} · the try creates its own client`;
  return `${head} · tried ${shown(tried.env['PJRT_DEVICE'])}`;
}

/** The machine a compile-only run compiled its program for, in words (`TPU v5e (v5e:2x2
 * topology, offline)`: stations' `target`, design 0067; the worker's backend is another), or
 * null for a run compiled for the worker's own backend. */
export function compiledForInfo(events: readonly Event[]): string | null {
  const compiled = lastOf(events, 'executable_compiled');
  if (compiled?.compiled_for == null) return null;
  const topology = compiled.topology == null ? 'offline' : `${compiled.topology} topology, offline`;
  return `compiled for ${compiled.compiled_for} (${topology})`;
}
