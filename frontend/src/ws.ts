/**
 * The only code that opens a WebSocket: one connection to `/api/ws` that sends `RunRequest`/
 * `CancelRequest` and hands every event it receives to `onEvent` (the store), in order (a frame
 * holds one event or an array of them).
 *
 * Requests sent while the socket is connecting are queued and flushed on open; a close drops
 * them. A closed socket is reopened after a back-off (0.5 s doubling to 5 s); `onClose` tells
 * the store, which fails a run in flight, since the server ends a session's runs with its socket.
 */
import type { Event, WireRequest } from './protocol';

export interface WireHandlers {
  /** one server event, parsed from a text frame */
  onEvent: (event: Event) => void;
  /** the socket is open (again) */
  onOpen?: () => void;
  /** the socket closed; `reason` is for display */
  onClose?: (reason: string) => void;
}

/** The subset of the DOM WebSocket this client uses (a test passes a fake). */
export interface SocketLike {
  readyState: number;
  onopen: ((ev: unknown) => void) | null;
  onclose: ((ev: { code: number; reason: string }) => void) | null;
  onmessage: ((ev: { data: unknown }) => void) | null;
  onerror: ((ev: unknown) => void) | null;
  send(data: string): void;
  close(): void;
}

export type SocketFactory = (url: string) => SocketLike;

const OPEN = 1;
const MIN_BACKOFF_MS = 500;
const MAX_BACKOFF_MS = 5000;

/** One event from a parsed value; null for anything that is not an object with `type` and `seq`. */
function asEvent(value: unknown): Event | null {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return null;
  const record = value as Record<string, unknown>;
  if (typeof record['type'] !== 'string' || typeof record['seq'] !== 'number') return null;
  return value as Event;
}

/**
 * Parse one text frame into its events, in order: a frame holds one event's object, or an array
 * of events the server coalesced (`backend/jaxscope/server/frames.py`). Anything in it that is not
 * an object with `type` and `seq` is dropped; a frame that is not JSON gives none.
 */
export function parseEvents(data: unknown): Event[] {
  if (typeof data !== 'string') return [];
  let value: unknown;
  try {
    value = JSON.parse(data);
  } catch {
    return [];
  }
  const values: unknown[] = Array.isArray(value) ? value : [value];
  const events: Event[] = [];
  for (const item of values) {
    const event = asEvent(item);
    if (event !== null) events.push(event);
  }
  return events;
}

export class WireClient {
  readonly #url: string;
  readonly #handlers: WireHandlers;
  readonly #factory: SocketFactory;
  #socket: SocketLike | null = null;
  #queue: string[] = [];
  #backoff = MIN_BACKOFF_MS;
  #retry: ReturnType<typeof setTimeout> | null = null;
  #closed = false;

  constructor(
    url: string,
    handlers: WireHandlers,
    factory: SocketFactory = (u) => new WebSocket(u) as unknown as SocketLike,
  ) {
    this.#url = url;
    this.#handlers = handlers;
    this.#factory = factory;
  }

  get connected(): boolean {
    return this.#socket !== null && this.#socket.readyState === OPEN;
  }

  connect(): void {
    this.#closed = false;
    if (this.#socket !== null) return;
    const socket = this.#factory(this.#url);
    this.#socket = socket;
    socket.onopen = () => {
      this.#backoff = MIN_BACKOFF_MS;
      const queued = this.#queue;
      this.#queue = [];
      for (const frame of queued) socket.send(frame);
      this.#handlers.onOpen?.();
    };
    socket.onmessage = (ev) => {
      for (const event of parseEvents(ev.data)) this.#handlers.onEvent(event);
    };
    socket.onerror = () => {
      // An error is always followed by close; reconnecting happens there.
    };
    socket.onclose = (ev) => {
      this.#socket = null;
      // The store fails the run in flight on close, so requests not yet sent are dropped with it.
      this.#queue = [];
      this.#handlers.onClose?.(ev.reason || `connection closed (code ${ev.code})`);
      if (!this.#closed) this.#scheduleReconnect();
    };
  }

  /** Send a request now, or once the socket is open. */
  send(request: WireRequest): void {
    const frame = JSON.stringify(request);
    if (this.#socket !== null && this.#socket.readyState === OPEN) {
      this.#socket.send(frame);
      return;
    }
    this.#queue.push(frame);
    this.connect();
  }

  /** Close for good (no reconnect). */
  close(): void {
    this.#closed = true;
    if (this.#retry !== null) clearTimeout(this.#retry);
    this.#retry = null;
    this.#socket?.close();
    this.#socket = null;
  }

  #scheduleReconnect(): void {
    if (this.#retry !== null) return;
    const delay = this.#backoff;
    this.#backoff = Math.min(this.#backoff * 2, MAX_BACKOFF_MS);
    this.#retry = setTimeout(() => {
      this.#retry = null;
      if (!this.#closed) this.connect();
    }, delay);
  }
}
