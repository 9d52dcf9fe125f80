import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { apiPath, pageToken, wsUrl } from './api';
import type { Event } from './protocol';
import { runStarted } from './test/events';
import { WireClient, parseEvents } from './ws';
import type { SocketLike } from './ws';

class FakeSocket implements SocketLike {
  readyState = 0;
  onopen: ((ev: unknown) => void) | null = null;
  onclose: ((ev: { code: number; reason: string }) => void) | null = null;
  onmessage: ((ev: { data: unknown }) => void) | null = null;
  onerror: ((ev: unknown) => void) | null = null;
  sent: string[] = [];
  constructor(readonly url: string) {}
  send(data: string): void {
    this.sent.push(data);
  }
  close(): void {
    this.readyState = 3;
  }
  open(): void {
    this.readyState = 1;
    this.onopen?.({});
  }
  drop(code = 1006): void {
    this.readyState = 3;
    this.onclose?.({ code, reason: '' });
  }
}

describe('URLs', () => {
  it('use the page origin and pass the token through', () => {
    const page = { protocol: 'http:', host: '127.0.0.1:8201', search: '' };
    expect(wsUrl(page)).toBe('ws://127.0.0.1:8201/api/ws');
    const tokened = { protocol: 'https:', host: 'x.org', search: '?token=a b&z=1' };
    expect(pageToken(tokened)).toBe('a b');
    expect(wsUrl(tokened)).toBe('wss://x.org/api/ws?token=a%20b');
    expect(apiPath('/api/exhibits', tokened)).toBe('/api/exhibits?token=a%20b');
  });
});

describe('parseEvents', () => {
  it('reads a frame of one event or an array of events, in order, and drops anything else', () => {
    const a = runStarted('r', 0);
    const b = runStarted('r', 1);
    expect(parseEvents(JSON.stringify(a))).toEqual([a]);
    expect(parseEvents(JSON.stringify([a, b]))).toEqual([a, b]);
    expect(parseEvents(JSON.stringify([b, 1, { type: 'x' }, [a], a]))).toEqual([b, a]);
    expect(parseEvents('not json')).toEqual([]);
    expect(parseEvents('[1]')).toEqual([]);
    expect(parseEvents('{"type":"x"}')).toEqual([]);
    expect(parseEvents('null')).toEqual([]);
    expect(parseEvents(new ArrayBuffer(2))).toEqual([]);
  });
});

describe('WireClient', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('queues requests until open, delivers events, reconnects with back-off', () => {
    const sockets: FakeSocket[] = [];
    const received: Event[] = [];
    const closes: string[] = [];
    const client = new WireClient(
      'ws://h/api/ws',
      { onEvent: (e) => received.push(e), onClose: (r) => closes.push(r) },
      (url) => {
        const s = new FakeSocket(url);
        sockets.push(s);
        return s;
      },
    );
    client.send({ type: 'cancel', run_id: 'r0' });
    expect(sockets).toHaveLength(1);
    expect(sockets[0]?.sent).toEqual([]);
    sockets[0]?.open();
    expect(sockets[0]?.sent).toEqual(['{"type":"cancel","run_id":"r0"}']);
    expect(client.connected).toBe(true);

    sockets[0]?.onmessage?.({ data: JSON.stringify(runStarted('r0', 0)) });
    sockets[0]?.onmessage?.({ data: 'garbage' });
    expect(received.map((e) => e.type)).toEqual(['run_started']);
    // a coalesced frame: every event of it, in its order
    sockets[0]?.onmessage?.({ data: JSON.stringify([runStarted('r1', 0), runStarted('r2', 0)]) });
    expect(received.map((e) => e.run_id)).toEqual(['r0', 'r1', 'r2']);

    sockets[0]?.drop();
    expect(closes).toEqual(['connection closed (code 1006)']);
    vi.advanceTimersByTime(499);
    expect(sockets).toHaveLength(1);
    vi.advanceTimersByTime(1);
    expect(sockets).toHaveLength(2);
    sockets[1]?.drop();
    vi.advanceTimersByTime(999);
    expect(sockets).toHaveLength(2);
    vi.advanceTimersByTime(1);
    expect(sockets).toHaveLength(3);

    // A request queued on a connection that then fails is dropped, not sent on the next one.
    client.send({ type: 'cancel', run_id: 'lost' });
    sockets[2]?.drop();
    vi.advanceTimersByTime(5000);
    sockets[3]?.open();
    expect(sockets[3]?.sent).toEqual([]);

    client.close();
    sockets[3]?.drop();
    vi.advanceTimersByTime(10_000);
    expect(sockets).toHaveLength(4);
  });
});
