import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { Event } from '../../frontend/src/protocol';
import { stepRows, summary } from './view-model';

const golden: Event[] = readFileSync(new URL('./golden/mlp_sgd.events.jsonl', import.meta.url), 'utf8')
  .split('\n')
  .filter((line) => line.trim())
  .map((line) => JSON.parse(line) as Event);

describe('xla_cache view model on the golden run', () => {
  it('a finding inside a step keeps its class and what was counted', () => {
    const end = golden.find((e) => e.type === 'xla_loop_finished');
    if (end?.type !== 'xla_loop_finished') throw new Error('no xla_loop_finished');
    const seeded: Event[] = [
      ...golden.filter((e) => e.type !== 'xla_loop_finished'),
      { ...end, cause: 'seed', detail: 'step 0 compiled 5 graphs', fix: 'sync', line: 17 },
    ];
    expect(summary(seeded)?.finding).toEqual({
      kind: 'CompilesInsideStep',
      what: 'step 0 compiled 5 graphs',
      fix: 'sync',
      line: 17,
    });
  });
  it('one row per step: the first compiles, the others hit the cache', () => {
    const rows = stepRows(golden);
    expect(rows.map((r) => r.step)).toEqual([0, 1, 2, 3]);
    expect(rows.map((r) => r.compile)).toEqual(['compiled', 'cache hit', 'cache hit', 'cache hit']);
    expect(rows.map((r) => r.newHash)).toEqual([true, false, false, false]);
    expect(new Set(rows.map((r) => r.hash)).size).toBe(1);
    expect(rows[0]?.inputs).toBe('float32[8,4], float32[8,1]');
    expect(rows[0]?.compileTime).not.toBe('');
    expect(rows[1]?.compileTime).toBe('');
    // One cut per step, the step's end: compiled on the first, cached after.
    expect(rows.map((r) => r.cuts.map((c) => [c.line, c.call, c.compile, c.executions]))).toEqual([
      [[null, 'step end', 'compiled', 1]],
      [[null, 'step end', 'cached', 1]],
      [[null, 'step end', 'cached', 1]],
      [[null, 'step end', 'cached', 1]],
    ]);
  });
  it('the summary: one graph, one compile, no finding', () => {
    const s = summary(golden);
    expect(s?.steps).toBe(4);
    expect(s?.graphs).toBe(1);
    expect([s?.compiles, s?.cacheHits]).toEqual([1, 3]);
    expect(s?.finding).toBeNull();
    expect(s?.losses.length).toBe(4);
  });
});
