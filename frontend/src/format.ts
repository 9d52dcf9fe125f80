/** Small display formatters of the shell. */
import type { QueueState } from './store/reducer';

/** Milliseconds as seconds with one decimal (`1.2 s`); negative or NaN input shows `0.0 s`. */
export function formatSeconds(ms: number): string {
  const s = Number.isFinite(ms) && ms > 0 ? ms / 1000 : 0;
  return `${s.toFixed(1)} s`;
}

/** What the run bar says while a run waits for a sandbox worker (`RunState.queue`). */
export function formatQueue(queue: QueueState): string {
  const place = `position ${queue.position} of ${Math.max(queue.waiting, queue.position)}`;
  const s = queue.estimate_s;
  const about = s !== null && Number.isFinite(s) && s >= 0 ? `, about ${Math.max(1, Math.round(s))} s` : '';
  if (queue.reason === 'worker_starting') {
    // No warm worker was ready: say which kind is starting and about how long it takes.
    const kind = queue.worker_kind === 'torch' ? 'a PyTorch/XLA' : 'a JAX';
    const soon = s !== null && Number.isFinite(s) && s >= 0 ? `, ~${s < 1 ? s.toFixed(1) : Math.round(s)} s` : '';
    return `Starting ${kind} sandbox worker for this run${soon}`;
  }
  if (queue.reason === 'client_share') {
    return `Waiting for a sandbox worker: your other tabs hold this client's share of workers (${place}${about})`;
  }
  return `Waiting for a sandbox worker: ${place}${about}`;
}

/** `n` with its noun, plural unless `n` is 1, the count grouped as in English (`1 eqn`, `2,447 eqns`). */
export function countOf(n: number, noun: string): string {
  return `${n.toLocaleString('en-US')} ${noun}${n === 1 ? '' : 's'}`;
}
