/**
 * Every exhibit's golden event streams (`exhibits/<id>/golden/<example>.events.jsonl`, recorded
 * through the real sandbox with `jaxscope run ID EXAMPLE --json`; pytest checks them in
 * `exhibits/test_goldens.py`) go through the page's store as the websocket delivers them (in
 * order: one socket), in batches of a frame, and once more as duplicates (a reconnect). The run
 * ends `finished` with every event once, in seq order.
 */
import { describe, expect, it } from 'vitest';
import type { Event } from './protocol';
import { defaultRunOptions } from './protocol';
import { applyEvents, startRun } from './store/reducer';

const GOLDENS = import.meta.glob('../../exhibits/*/golden/*.events.jsonl', {
  query: '?raw',
  import: 'default',
  eager: true,
}) as Record<string, string>;

function parse(text: string): Event[] {
  return text
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as Event);
}

describe('golden event streams', () => {
  const entries = Object.entries(GOLDENS);

  it('are found for the exhibits', () => {
    expect(entries.length).toBeGreaterThanOrEqual(20);
  });

  for (const [path, text] of entries) {
    const exhibit = path.split('/').at(-3) ?? '';
    it(`${exhibit}: ${path.split('/').at(-1)} replays to a finished run`, () => {
      const events = parse(text);
      const first = events[0];
      expect(first?.type).toBe('run_started');
      const runId = first?.run_id ?? '';
      let state = startRun(runId, exhibit, defaultRunOptions(), 0);
      // batches of three, then every event again
      for (let i = 0; i < events.length; i += 3) {
        state = applyEvents(state, events.slice(i, i + 3), i);
      }
      state = applyEvents(state, events, events.length);
      expect(state.status).toBe('finished');
      expect(state.events.map((e) => e.seq)).toEqual(events.map((_, i) => i));
      expect(state.events.map((e) => e.type)).toEqual(events.map((e) => e.type));
    });
  }
});
