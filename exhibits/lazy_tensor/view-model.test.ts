import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { Event } from '../../frontend/src/protocol';
import { built, hashes, stepNodes, stepRows, synced } from './view-model';

const golden: Event[] = readFileSync(new URL('./golden/mlp_item.events.jsonl', import.meta.url), 'utf8')
  .split('\n')
  .filter((line) => line.trim())
  .map((line) => JSON.parse(line) as Event);

describe('lazy_tensor view model on the golden run', () => {
  it('one row per line of f, the .item() line the only cut', () => {
    const rows = stepRows(golden);
    expect(rows.map((r) => r.line)).toEqual([8, 9, 10, 11, 12]);
    expect(rows.filter((r) => r.cut > 0).map((r) => r.source)).toEqual(['peak = y.abs().max().item()']);
    expect(rows.filter((r) => r.line !== 10).every((r) => r.added > 0)).toBe(true);
  });
  it("a step's nodes made by its own line are marked", () => {
    const nodes = stepNodes(golden, 0);
    expect(nodes.filter((n) => n.fresh).length).toBe(stepRows(golden)[0]?.added);
    expect(nodes.every((n) => !n.fresh || n.line === 8)).toBe(true);
  });
  it('the graph, the values and the hash experiments', () => {
    expect(built(golden)?.ir.startsWith('IR {')).toBe(true);
    expect(synced(golden)?.executions).toBe(1);
    expect(hashes(golden)?.trials.map((t) => t.same)).toEqual([true, false]);
  });
});
