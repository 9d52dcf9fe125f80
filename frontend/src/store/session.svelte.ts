/**
 * The reactive store of the shell (Svelte 5 runes): the current run (via the pure reducer), the
 * stepper's cursor over its events, the play timer and the shared selection.
 *
 * `ws.ts` feeds events in through `receive`; they are held and applied in one batch per animation
 * frame (`flush`), so a run that streams thousands of events a second costs the page one state
 * change and one render per frame, not one per event. Components read `run`, `stepper`, `visible`
 * and call the stepper methods. Once a run has ended, the store asks for the whole events behind
 * the summaries near the cursor (details on demand: `wantDetails`, `DETAIL_WINDOW`). All state transitions are the pure functions of `reducer.ts` and
 * `stepper.ts`; this class only holds their results in `$state` and owns the play timer.
 */
import type { Selection } from '../exhibit-api';
import { EMPTY_SELECTION } from '../exhibit-api';
import type { Event, ResumeRequest, RunOptions } from '../protocol';
import type { RunState } from './reducer';
import { IDLE_STATE, applyEvents, failLocally, mayAsk, resumeRequest, startRun, wantedDetails } from './reducer';
import { nextRanges } from './eqn-ranges';
import { nextListRanges } from './list-ranges';
import type { StepperState } from './stepper';
import * as stepper from './stepper';

/** Milliseconds between two events while playing. */
export const PLAY_INTERVAL_MS = 400;

/**
 * The latest a held batch waits when no animation frame comes (a background tab gets none): the
 * run still advances, and its terminal event still ends it.
 */
export const FLUSH_FALLBACK_MS = 100;

/**
 * Details on demand: once a run has ended, the store asks for the whole events of the summaries
 * within this many events of the cursor (the step on screen and its neighbours, so that stepping
 * finds them already there).
 */
export const DETAIL_WINDOW = 8;

/**
 * `resolveDetails` keeps at most this many detail requests in flight (the server answers at most
 * 64 waiting requests of a session and refuses the rest).
 */
export const DETAIL_BATCH = 32;

/**
 * The detail ids of the summaries in `state` whose whole event has not arrived nor failed, and
 * the next eqn range and list range (design 0045) of every view and list still partial.
 */
export function unresolvedDetails(state: RunState): string[] {
  const ranges = [...nextRanges(state.events), ...nextListRanges(state.events, 'all')].filter(
    (id) => !state.detailsFailed.has(id),
  );
  return [...wantedDetails(state, 0, state.events.length - 1, new Set()), ...ranges];
}

/** How the store asks the server for a detail (the shell passes the websocket's send). */
export type DetailSender = (runId: string, detailId: string) => void;

/** How the store asks to be called back before the next paint (a test passes its own). */
export interface FrameScheduler {
  request(callback: () => void): void;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

const browserFrames: FrameScheduler = {
  request(callback) {
    let done = false;
    const once = (): void => {
      if (done) return;
      done = true;
      callback();
    };
    if (typeof requestAnimationFrame === 'function') requestAnimationFrame(once);
    setTimeout(once, FLUSH_FALLBACK_MS);
  },
};

export class RunSession {
  // Raw, not deeply reactive: the reducer replaces the state (and the events array) on every
  // batch and never mutates it, so a deep proxy over tens of thousands of events (each with
  // its avals and params) would only cost time on every read.
  run: RunState = $state.raw(IDLE_STATE);
  stepper: StepperState = $state(stepper.INITIAL_STEPPER);
  selection: Selection = $state(EMPTY_SELECTION);

  /** events up to and including the cursor (what the views render) */
  visible: readonly Event[] = $derived(stepper.visibleEvents(this.run.events, this.stepper.cursor));

  #timer: ReturnType<typeof setInterval> | null = null;
  readonly #now: () => number;
  readonly #frames: FrameScheduler;
  /** events received since the last flush, in arrival order */
  #pending: Event[] = [];
  #scheduled = false;
  /** detail ids of the current run already asked for */
  #asked = new Set<string>();
  /** eqn ranges a widget asked for while the run streamed: asked for when it ends */
  #early = new Set<string>();
  /** the events whose jaxpr views' list ranges were last asked for (`#prefetch`) */
  #listsAskedFor: readonly Event[] | null = null;
  #sendDetail: DetailSender | null;

  constructor(
    now: () => number = () => Date.now(),
    frames: FrameScheduler = browserFrames,
    sendDetail: DetailSender | null = null,
  ) {
    this.#now = now;
    this.#frames = frames;
    this.#sendDetail = sendDetail;
  }

  /** Set how details are asked for (the shell, once its websocket exists). */
  setDetailSender(sendDetail: DetailSender): void {
    this.#sendDetail = sendDetail;
  }

  /**
   * Ask for the whole events of the summaries among `events[from..to]` (a view showing those
   * rows calls it); nothing while the run streams (its worker serves details once it ended).
   */
  wantDetails(from: number, to: number): void {
    const run = this.run;
    if (run.terminal === null || run.runId === null || this.#sendDetail === null) return;
    for (const id of wantedDetails(run, from, to, this.#asked, this.#now())) {
      this.#asked.add(id);
      this.#sendDetail(run.runId, id);
    }
  }

  /**
   * Ask for the eqn range or list range `detailId` of the ended run (design 0045: a widget
   * showing the view's ranges line asks for its next range; a residual table for its list's), once.
   */
  wantRange(detailId: string): void {
    const run = this.run;
    if (run.terminal === null && run.runId !== null) this.#early.add(detailId); // asked once it ends
    if (run.terminal === null || run.runId === null || this.#sendDetail === null) return;
    if (this.#asked.has(detailId) || !mayAsk(run, detailId, this.#now())) return;
    this.#asked.add(detailId);
    this.#sendDetail(run.runId, detailId);
  }

  /**
   * Ask for every summary's whole event of the ended run, `DETAIL_BATCH` at a time, until all
   * arrived or failed or `timeoutMs` passed (the page's Download: a standalone file has no worker
   * to ask later, design 0034). Resolves to the number still missing (0: the run is whole).
   */
  async resolveDetails(timeoutMs: number, pause: (ms: number) => Promise<void> = sleep): Promise<number> {
    const deadline = this.#now() + timeoutMs;
    for (;;) {
      this.flush();
      const missing = unresolvedDetails(this.run);
      if (missing.length === 0 || this.#now() >= deadline || this.run.terminal === null) return missing.length;
      const inFlight = missing.filter((id) => this.#asked.has(id)).length;
      const now = this.#now();
      const ask = missing
        .filter((id) => !this.#asked.has(id) && mayAsk(this.run, id, now))
        .slice(0, Math.max(0, DETAIL_BATCH - inFlight));
      const runId = this.run.runId;
      if (runId !== null && this.#sendDetail !== null) {
        for (const id of ask) {
          this.#asked.add(id);
          this.#sendDetail(runId, id);
        }
      }
      await pause(50);
    }
  }

  #prefetch(): void {
    const cursor = this.stepper.cursor;
    this.wantDetails(cursor - DETAIL_WINDOW, cursor + DETAIL_WINDOW);
    if (this.run.terminal !== null && this.#early.size > 0) {
      const early = [...this.#early];
      this.#early.clear();
      for (const id of early) this.wantRange(id);
    }
    // List ranges of jaxpr views (design 0045): the graph, the structure and every exhibit read
    // a view's constvars / invars / outvars (pairing them by index, drawing every variable), and
    // the backend bounds those lists' ranges by event size, not by what is on screen: so each
    // one is completed as soon as the run ended, a range at a time (the next one is asked once
    // the answer to the last is merged, by this call after `flush`). The events' own lists
    // (residual tables) are asked for by the views that show them.
    const events = this.run.events;
    if (this.run.terminal !== null && events !== this.#listsAskedFor) {
      this.#listsAskedFor = events;
      for (const id of nextListRanges(events, 'views')) this.wantRange(id);
    }
  }

  /** Begin a new run (after its `RunRequest` was sent): clears events, cursor and selection. */
  begin(runId: string, exhibit: string, options: RunOptions): void {
    this.#stopTimer();
    this.#pending = [];
    this.#asked = new Set();
    this.#early = new Set();
    this.#listsAskedFor = null;
    this.run = startRun(runId, exhibit, options, this.#now());
    this.stepper = stepper.resetStepper();
    this.selection = EMPTY_SELECTION;
  }

  /** An event arrived from the server: held until the next frame's `flush`. */
  receive(event: Event): void {
    this.#pending.push(event);
    if (this.#scheduled) return;
    this.#scheduled = true;
    this.#frames.request(() => this.flush());
  }

  /** Apply every held event now, as one batch (one state change, one render). */
  flush(): void {
    this.#scheduled = false;
    const batch = this.#pending;
    if (batch.length === 0) return;
    this.#pending = [];
    const next = applyEvents(this.run, batch, this.#now());
    if (next === this.run) return;
    // A transient refusal (too many requests waiting): the id is no longer in flight, and a later
    // ask (a view scrolled to it again, the cursor moved) asks again once `mayAsk` allows.
    for (const id of next.detailsRefused.keys()) {
      if (next.detailsRefused.get(id) !== this.run.detailsRefused.get(id)) this.#asked.delete(id);
    }
    this.run = next;
    this.stepper = stepper.eventsChanged(this.stepper, next.events.length);
    this.#prefetch();
  }

  /** The client lost the run (socket closed before its terminal event). A run that a server with
   * a run queue accepted goes on: the page resumes it on the next socket (`resumeRequest`). */
  lose(message: string): void {
    // Events that arrived before the close are part of the run: the terminal one may be among them.
    this.flush();
    if (resumeRequest(this.run) !== null) return;
    this.run = failLocally(this.run, message, this.#now());
  }

  /** What the page sends on a new socket to get the rest of a run it lost with the old one. */
  resumeRequest(): ResumeRequest | null {
    this.flush();
    return resumeRequest(this.run);
  }

  first(): void {
    this.#move(stepper.first);
  }
  prev(): void {
    this.#move(stepper.prev);
  }
  next(): void {
    this.#move(stepper.next);
  }
  last(): void {
    this.#move(stepper.last);
  }
  goTo(cursor: number): void {
    this.#stopTimer();
    this.stepper = stepper.goTo(this.stepper, cursor, this.run.events.length);
    this.#prefetch();
  }

  /** Toggle play: advance one event every `PLAY_INTERVAL_MS` until the last event. */
  togglePlay(): void {
    if (this.stepper.playing) {
      this.#stopTimer();
      this.stepper = stepper.pause(this.stepper);
      return;
    }
    this.stepper = stepper.play(this.stepper, this.run.events.length);
    if (!this.stepper.playing) return;
    this.#timer = setInterval(() => {
      this.stepper = stepper.tick(this.stepper, this.run.events.length);
      this.#prefetch();
      if (!this.stepper.playing) this.#stopTimer();
    }, PLAY_INTERVAL_MS);
  }

  select(selection: Selection): void {
    this.selection = selection;
  }

  dispose(): void {
    this.#stopTimer();
  }

  #move(step: (s: StepperState, n: number) => StepperState): void {
    this.#stopTimer();
    this.stepper = step(this.stepper, this.run.events.length);
    this.#prefetch();
  }

  #stopTimer(): void {
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
  }
}
