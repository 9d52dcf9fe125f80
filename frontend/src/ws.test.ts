import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { apiPath, pageToken, wsUrl } from './api';
import type { Event } from './protocol';
import { runStarted } from './test/events';
import { WireClient, parseEvent } from './ws';
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

describe('parseEvent', () => {
  it('accepts event objects and rejects anything else', () => {
    const e = runStarted('r', 0);
    expect(parseEvent(JSON.stringify(e))).toEqual(e);
    expect(parseEvent('not json')).toBeNull();
    expect(parseEvent('[1]')).toBeNull();
    expect(parseEvent('{"type":"x"}')).toBeNull();
    expect(parseEvent(new ArrayBuffer(2))).toBeNull();
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
