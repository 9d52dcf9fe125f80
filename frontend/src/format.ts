/** Small display formatters of the shell. */
import type { QueueState, WorkerKind } from './store/reducer';

/** Milliseconds as seconds with one decimal (`1.2 s`); negative or NaN input shows `0.0 s`. */
export function formatSeconds(ms: number): string {
  const s = Number.isFinite(ms) && ms > 0 ? ms / 1000 : 0;
  return `${s.toFixed(1)} s`;
}

/** What a torch worker's start spends its seconds on (design 0055: the import took 4.5 s, the
 * PJRT client 3 ms and the first compile 38 ms in a torch-venv process on a 2-core machine). */
const TORCH_IMPORT = 'torch and torch_xla';

/**
 * The run bar's note on a finished run that waited while a worker was started for it
 * (`RunState.workerStart`), or null when that took under a second: how much of the run it was
 * and why. A torch worker serves one run and then retires; the pool keeps a started one for the
 * next run, so the first torch run of a server is the slow one.
 */
export function formatWorkerStart(start: { kind: WorkerKind; ms: number } | null): string | null {
  if (start === null || !(start.ms >= 1000)) return null;
  const took = formatSeconds(start.ms);
  if (start.kind === 'accelerator') {
    return `${took} of it went to opening the accelerator in a fresh worker (one run holds the chip at a time; design 0069)`;
  }
  if (start.kind === 'torch') {
    return (
      `${took} of it went to starting a PyTorch/XLA worker (a new process importing ${TORCH_IMPORT}); ` +
      "torch_xla's PJRT client and its first compile inside the run take milliseconds, " +
      'and the next run finds a worker started'
    );
  }
  if (start.kind === 'tf') {
    return `${took} of it went to starting a TensorFlow worker (a new process importing TensorFlow and JAX)`;
  }
  if (start.kind === 'tpu_compile') {
    return `${took} of it went to starting a TPU compile worker (a new process loading JAX and libtpu)`;
  }
  return `${took} of it went to starting a JAX sandbox worker`;
}

/** `, N s so far` for a wait of `waitedMs` (a second or more), else ''. */
function soFar(waitedMs: number | null): string {
  return waitedMs !== null && Number.isFinite(waitedMs) && waitedMs >= 1000 ? `, ${Math.floor(waitedMs / 1000)} s so far` : '';
}

/**
 * What the run bar says while a run waits for a sandbox worker (`RunState.queue`). `waitedMs`:
 * how long the run has waited so far (the run bar's ticking clock); a worker start then reads
 * `~N s, M s so far`: the estimate is the server's own recent starts of that kind (or a typical
 * first start before any: backend/jaxscope/sandbox/pool.py), and may be off on a loaded machine.
 */
export function formatQueue(queue: QueueState, waitedMs: number | null = null): string {
  const place = `position ${queue.position} of ${Math.max(queue.waiting, queue.position)}`;
  const s = queue.estimate_s;
  const about = s !== null && Number.isFinite(s) && s >= 0 ? `, about ${Math.max(1, Math.round(s))} s` : '';
  if (queue.worker_kind === 'accelerator') {
    // One process at a time holds the chip, and each run gets a fresh one that opens it
    // (design 0069: ~13 s on the TPU v5e).
    if (queue.reason === 'worker_starting') {
      const soon = s !== null && Number.isFinite(s) && s >= 0 ? `, ~${Math.max(1, Math.round(s))} s` : '';
      return `Opening the accelerator for this run: a fresh worker opens the chip${soon}${soFar(waitedMs)}`;
    }
    const ahead = queue.position - 1;
    const runs = ahead === 0 ? 'this run is next' : `${countOf(ahead, 'run')} ahead`;
    return `Waiting for the accelerator: one run holds the chip at a time; ${runs}${about}`;
  }
  if (queue.reason === 'worker_starting') {
    // No warm worker was ready: say which kind is starting and about how long it takes.
    const kinds = {
      torch: 'a PyTorch/XLA',
      tf: 'a TensorFlow',
      jax: 'a JAX',
      tpu_compile: 'a TPU compile (libtpu)',
      accelerator: 'an accelerator',
    } as const;
    const kind = kinds[queue.worker_kind ?? 'jax'];
    const soon = s !== null && Number.isFinite(s) && s >= 0 ? `, ~${s < 1 ? s.toFixed(1) : Math.round(s)} s` : '';
    // Why a torch worker's start is slow (issue 31, item 5): design 0055 measured it.
    const why = queue.worker_kind === 'torch' ? ` (a new process importing ${TORCH_IMPORT})` : '';
    return `Starting ${kind} sandbox worker for this run${why}${soon}${soFar(waitedMs)}`;
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
