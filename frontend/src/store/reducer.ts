/**
 * The run reducer: the state of the current run, rebuilt from the event stream by the pure
 * function `applyEvent(state, event, now)`.
 *
 * Rules (the protocol's, enforced here so that a view never sees a malformed stream):
 * events of another `run_id` are ignored; an event whose `seq` is already held is a duplicate and
 * ignored; `events` stay sorted by `seq`; the first terminal event (`run_finished`/`run_failed`)
 * ends the run, and anything after it is ignored, so a run has exactly one terminal event.
 * Times (`startedAt`, `stageStartedAt`) are client clock readings in milliseconds, passed in as
 * `now` so that the reducer stays pure; they drive the "which stage, for how long" display.
 *
 * Details on demand (design 0023): a summary event carries `detail_id`; the whole event, sent
 * in answer to the page's detail request (after the terminal event), carries `detail_of` and the
 * summary's `seq`, and replaces the summary in `events` (views then show its values). A
 * `detail_failed` never enters `events`: it sets `detailNote` (the details are gone) and marks
 * the id as failed in `detailsFailed`, so that it is not asked for again; one that is
 * `transient` (a refusal that may pass: too many requests waiting, the run still running) only
 * records when, in `detailsRefused`, and the id may be asked for again by a later ask at least
 * `DETAIL_RETRY_MS` after it (`mayAsk`: never at once, so never in a loop). A `jaxpr_eqns_sent`
 * (design 0045) extends the jaxpr view of the event with its `seq` by the next eqn range
 * (`eqn-ranges.ts`); one that is not that view's next range is ignored. An `items_sent` (design
 * 0045, list ranges) extends the list at its `path` in the event with its `seq` by that list's
 * next range (`list-ranges.ts`); it never enters `events` either, and one that is not the next
 * range is ignored.
 *
 * `run_queued` is not a step of the run (its `seq` is always 0, the seq of the worker's own
 * `run_started`): it only sets `queue`, the run's place in the server's wait for a sandbox
 * worker, and never enters `events`. Any other event of the run clears `queue`, and a
 * `run_queued` after the run's first event is ignored.
 *
 * `run_accepted` (a server with a run queue took the run, design 0065) is not a step either: it
 * sets `resumeToken`, with which the page resumes the run after its socket was lost.
 */
import type { Event, EventOf, ResumeRequest, RunFailed, RunOptions, Stage, TerminalEvent } from '../protocol';
import { defaultRunOptions, isTerminal } from '../protocol';
import { applyEqnsSent } from './eqn-ranges';
import { applyItemsSent } from './list-ranges';

/** The kind of sandbox worker a run waits for (`run_queued.worker_kind`). */
export type WorkerKind = NonNullable<EventOf<'run_queued'>['worker_kind']>;

export type RunStatus = 'idle' | 'running' | 'finished' | 'failed';

/** Where a run waits for a sandbox worker, from the latest `run_queued` (see the protocol's RunQueued). */
export type QueueState = Pick<EventOf<'run_queued'>, 'position' | 'waiting' | 'estimate_s' | 'reason'> &
  Partial<Pick<EventOf<'run_queued'>, 'worker_kind'>>;

export interface RunState {
  /** the `run_id` the client chose for the current run; null before the first run */
  runId: string | null;
  /** the exhibit id of the current run */
  exhibit: string | null;
  /** the options the current run was started with */
  options: RunOptions;
  status: RunStatus;
  /** the events of the current run, sorted by `seq`, without duplicates, ending at the terminal one */
  events: readonly Event[];
  /** the stage of the latest `stage_started` event, null before the first or after the terminal event */
  stage: Stage | null;
  /** client time (ms) when that `stage_started` event arrived */
  stageStartedAt: number | null;
  /** client time (ms) when the run was requested */
  startedAt: number | null;
  /** client time (ms) when the terminal event arrived (or the client gave up on the run) */
  endedAt: number | null;
  /** the run's one terminal event, once it arrived */
  terminal: TerminalEvent | null;
  /** the `run_failed` event, when the run failed */
  error: RunFailed | null;
  /** a failure seen only by the client (the websocket closed mid-run); null otherwise */
  clientError: string | null;
  /** the run waits for a sandbox worker (the latest `run_queued`); null once any other event of it arrived */
  queue: QueueState | null;
  /** the run waited while a sandbox worker was started for it (a `run_queued` `worker_starting`
   * came): its kind and the client time (ms) from the request to the worker's first event; null
   * for a run that found a worker ready */
  workerStart: { kind: WorkerKind; ms: number } | null;
  /** why a detail could not be had (the latest `detail_failed`'s message); null otherwise */
  detailNote: string | null;
  /** the detail ids a lasting `detail_failed` answered (never asked for again) */
  detailsFailed: ReadonlySet<string>;
  /** the detail ids a `transient` `detail_failed` answered, with the client time (ms) of the
   * latest: asked for again only by an ask `DETAIL_RETRY_MS` later (`mayAsk`) */
  detailsRefused: ReadonlyMap<string, number>;
  /** the token of the run's `run_accepted` (a server with a run queue): the page resumes the run
   * with it after a reconnect (`resumeRequest`); null when the server keeps no run streams */
  resumeToken: string | null;
}

/** How long after a transient refusal (`detail_failed` `transient`) its detail may be asked for
 * again: a view that asks on every change then asks at most once per this many ms. */
export const DETAIL_RETRY_MS = 2000;

export const IDLE_STATE: RunState = {
  runId: null,
  exhibit: null,
  options: defaultRunOptions(),
  status: 'idle',
  events: [],
  stage: null,
  stageStartedAt: null,
  startedAt: null,
  endedAt: null,
  terminal: null,
  error: null,
  clientError: null,
  queue: null,
  workerStart: null,
  detailNote: null,
  detailsFailed: new Set(),
  detailsRefused: new Map(),
  resumeToken: null,
};

/** The state right after the client sent `RunRequest{run_id, exhibit, options}`. */
export function startRun(
  runId: string,
  exhibit: string,
  options: RunOptions,
  now: number,
): RunState {
  return { ...IDLE_STATE, runId, exhibit, options, status: 'running', startedAt: now };
}

/** Index at which an event with `seq` belongs in `events` (sorted by seq), or -1 if held already. */
function insertionIndex(events: readonly Event[], seq: number): number {
  let lo = 0;
  let hi = events.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    const at = (events[mid] as Event).seq;
    if (at === seq) return -1;
    if (at < seq) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Index of the event with `seq` in `events` (sorted by seq), or -1. */
function indexOfSeq(events: readonly Event[], seq: number): number {
  // Seqs are nearly always 0..n-1: try the index first.
  if (events[seq]?.seq === seq) return seq;
  let lo = 0;
  let hi = events.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const at = (events[mid] as Event).seq;
    if (at === seq) return mid;
    if (at < seq) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}

/**
 * Whether detail `id` may be asked for at client time `now` (ms): not after a lasting
 * `detail_failed`; after a transient one, once `DETAIL_RETRY_MS` have passed since it.
 */
export function mayAsk(state: RunState, id: string, now: number): boolean {
  if (state.detailsFailed.has(id)) return false;
  const refused = state.detailsRefused.get(id);
  return refused === undefined || now - refused >= DETAIL_RETRY_MS;
}

/**
 * The summaries among `events[from..to]` whose whole event has not been asked for yet (`asked`)
 * nor failed; with `now`, also none refused (transiently) less than `DETAIL_RETRY_MS` before it.
 */
export function wantedDetails(
  state: RunState,
  from: number,
  to: number,
  asked: ReadonlySet<string>,
  now = Number.POSITIVE_INFINITY,
): string[] {
  const wanted: string[] = [];
  const events = state.events;
  for (let i = Math.max(0, from); i <= Math.min(events.length - 1, to); i++) {
    const id = (events[i] as Event).detail_id;
    if (id !== null && id !== undefined && !asked.has(id) && mayAsk(state, id, now)) wanted.push(id);
  }
  return wanted;
}

/** The state after `event` arrived at client time `now` (ms). Returns `state` itself when the event is ignored. */
export function applyEvent(state: RunState, event: Event, now: number): RunState {
  return applyEvents(state, [event], now);
}

/**
 * The state after a batch of events arrived at client time `now` (ms): the same as applying them
 * one by one with `applyEvent`, but the event list is copied once per batch, not once per event,
 * so that taking in n events costs O(n) instead of O(n²) (the page applies one batch per animation
 * frame). Returns `state` itself when every event of the batch is ignored.
 */
export function applyEvents(state: RunState, batch: readonly Event[], now: number): RunState {
  if (state.runId === null || batch.length === 0) return state;
  if (state.clientError !== null) return state;
  let events: Event[] | null = null;
  let next: RunState = state;
  for (const event of batch) {
    if (event.run_id !== state.runId) continue;
    if (event.type === 'detail_failed') {
      if (event.transient === true) {
        // A refusal that may pass: remembered with its time, not as failed (see `mayAsk`).
        if (event.detail_id === null || event.detail_id === undefined) continue;
        const refused = new Map(next.detailsRefused);
        refused.set(event.detail_id, now);
        next = { ...next, detailsRefused: refused };
        continue;
      }
      const failed = new Set(next.detailsFailed);
      if (event.detail_id !== null && event.detail_id !== undefined) failed.add(event.detail_id);
      next = { ...next, detailNote: event.message, detailsFailed: failed };
      continue;
    }
    if (event.type === 'jaxpr_eqns_sent' || event.type === 'items_sent') {
      // The next eqn range of a jaxpr view, or the next range of a list, of the event `seq`
      // (design 0045): merged into it.
      const held = events ?? next.events;
      const at = indexOfSeq(held, event.seq);
      const merged =
        at < 0
          ? null
          : event.type === 'jaxpr_eqns_sent'
            ? applyEqnsSent(held[at] as Event, event)
            : applyItemsSent(held[at] as Event, event);
      if (merged === null) continue;
      if (events === null) events = [...next.events];
      events[at] = merged;
      continue;
    }
    if (event.detail_of !== null && event.detail_of !== undefined) {
      const held = events ?? next.events;
      const at = indexOfSeq(held, event.seq);
      if (at < 0 || held[at]?.detail_id !== event.detail_of || held[at]?.type !== event.type) continue;
      if (events === null) events = [...next.events];
      events[at] = event;
      continue;
    }
    if (next.terminal !== null) continue;
    if (event.type === 'run_accepted') {
      next = { ...next, resumeToken: event.token };
      continue;
    }
    if (event.type === 'run_queued') {
      // Only while the run waits: once it has events, it holds a worker and a stale place is moot.
      if ((events ?? next.events).length > 0) continue;
      const { position, waiting, estimate_s, reason, worker_kind } = event;
      const queue: QueueState = { position, waiting, estimate_s, reason };
      if (worker_kind !== undefined && worker_kind !== null) queue.worker_kind = worker_kind;
      next = { ...next, queue };
      continue;
    }
    if (next.queue?.reason === 'worker_starting' && next.startedAt !== null) {
      // The worker started for this run answered: how long the run waited for it.
      next = { ...next, workerStart: { kind: next.queue.worker_kind ?? 'jax', ms: Math.max(0, now - next.startedAt) } };
    }
    const held = events ?? next.events;
    const last = held[held.length - 1];
    // Events nearly always arrive in seq order: append without a search.
    const at = last === undefined || last.seq < event.seq ? held.length : insertionIndex(held, event.seq);
    if (at < 0) continue;
    if (events === null) events = [...next.events];
    events.splice(at, 0, event);
    if (isTerminal(event)) {
      // Not a return: answers to details asked for during the run (whole events, ranges,
      // refusals) may follow the terminal event in the same batch (one animation frame).
      const failed = event.type === 'run_failed';
      next = {
        ...next,
        queue: null,
        status: failed ? 'failed' : 'finished',
        stage: null,
        stageStartedAt: null,
        endedAt: now,
        terminal: event,
        error: failed ? event : null,
      };
      continue;
    }
    next = { ...next, queue: null };
    if (event.type === 'stage_started' && at === events.length - 1) {
      next = { ...next, stage: event.stage, stageStartedAt: now };
    }
  }
  return events === null ? next : { ...next, events };
}

/**
 * The request that resumes `state`'s run on a new socket (design 0065): its events after the last
 * one held; null when the run is not running or its server keeps no run streams.
 */
export function resumeRequest(state: RunState): ResumeRequest | null {
  if (state.status !== 'running' || state.resumeToken === null || state.runId === null) return null;
  const last = state.events[state.events.length - 1];
  return { type: 'resume', run_id: state.runId, token: state.resumeToken, after_seq: last === undefined ? -1 : last.seq };
}

/** The state after the client lost the run (e.g. the websocket closed before a terminal event). */
export function failLocally(state: RunState, message: string, now: number): RunState {
  if (state.status !== 'running') return state;
  return {
    ...state,
    status: 'failed',
    stage: null,
    stageStartedAt: null,
    endedAt: now,
    clientError: message,
    queue: null,
  };
}
