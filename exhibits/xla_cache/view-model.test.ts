import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { Event } from '../../frontend/src/protocol';
import { stepRows, summary } from './view-model';

const golden: Event[] = readFileSync(new URL('./golden/mlp_sgd.events.jsonl', import.meta.url), 'utf8')
  .split('\n')
  .filter((line) => line.trim())
  .map((line) => JSON.parse(line) as Event);

describe('xla_cache view model on the golden run', () => {
  it('one row per step: the first compiles, the others hit the cache', () => {
    const rows = stepRows(golden);
    expect(rows.map((r) => r.step)).toEqual([0, 1, 2, 3]);
    expect(rows.map((r) => r.compile)).toEqual(['compiled', 'cache hit', 'cache hit', 'cache hit']);
    expect(rows.map((r) => r.newHash)).toEqual([true, false, false, false]);
    expect(new Set(rows.map((r) => r.hash)).size).toBe(1);
    expect(rows[0]?.inputs).toBe('float32[8,4], float32[8,1]');
    expect(rows[0]?.compileTime).not.toBe('');
    expect(rows[1]?.compileTime).toBe('');
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
