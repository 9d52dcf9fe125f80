import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { Event } from '../../frontend/src/protocol';
import { crossings, laneArrows, LANE, stepRows, summary } from './view-model';

function golden(name: string): Event[] {
  return readFileSync(new URL(`./golden/${name}.events.jsonl`, import.meta.url), 'utf8')
    .split('\n')
    .filter((line) => line.trim())
    .map((line) => JSON.parse(line) as Event);
}

const mlp = golden('mlp_sgd');
const item = golden('item_in_step');
const spmd = golden('spmd_batch');

describe('seam view model on the golden runs', () => {
  it('step 0 crosses down, compiles, runs and reads; later steps do not compile', () => {
    const first = crossings(mlp, 0);
    expect(first.map((c) => c.method)).toEqual([
      'TransferToDevice',
      'TransferToDevice',
      'TransferToDevice',
      'Compile',
      'ExecuteComputation',
      'TransferFromDevice',
    ]);
    expect(first.map((c) => c.direction)).toEqual(['down', 'down', 'down', 'down', 'run', 'up']);
    expect(first.map((c) => c.where)).toEqual(['upload line 22', 'upload line 22', 'f line 17', 'sync', 'sync', 'read line 18']);
    expect(first.map((c) => c.bytes)).toEqual(['128 B', '32 B', '4 B', '', '', '4 B']);
    expect(first[3]?.cited?.call).toBe('PjRtClient::CompileAndLoad');
    expect(first[4]?.pjrt).toContain('PjRtCpuExecutable::ExecuteSharded');
    expect(first[5]?.pjrt).toEqual(['CommonPjRtBuffer::ToLiteral']);
    expect(first[2]?.source).toBe('opt.step()');
    expect(crossings(mlp, 1).map((c) => c.method)).toEqual([
      'TransferToDevice',
      'TransferToDevice',
      'ExecuteComputation',
      'TransferFromDevice',
    ]);
    expect(crossings(mlp, 9)).toEqual([]);
  });
  it('one row per step, the summary', () => {
    const rows = stepRows(mlp);
    expect(rows.map((r) => r.step)).toEqual([0, 1, 2]);
    expect(rows.map((r) => r.crossings)).toEqual([6, 4, 4]);
    expect(rows[0]?.down).toBe('3 (164 B)');
    expect(rows[1]?.compile).toBe('0');
    expect(rows.every((r) => r.traced)).toBe(true);
    const s = summary(mlp);
    expect(s?.compiledSteps).toEqual([0]);
    expect(s?.losses.length).toBe(3);
    expect(s?.spmd).toBe(false);
  });
  it('.item() inside f: compile, run and read at that line, a second graph at the sync', () => {
    const first = crossings(item, 0);
    const atItem = first.filter((c) => c.source === 'logged.append(loss.item())').map((c) => c.method);
    expect(atItem).toEqual(['Compile', 'ExecuteComputation', 'TransferFromDevice']);
    expect(first.filter((c) => c.where === 'sync').map((c) => c.method)).toEqual(['Compile', 'ExecuteComputation']);
    expect(summary(item)?.compiledSteps).toEqual([0]);
  });
  it('the lanes: one column per crossing', () => {
    const { arrows, width } = laneArrows(crossings(mlp, 0));
    expect(arrows.map((a) => a.x)).toEqual([0, 1, 2, 3, 4, 5].map((i) => LANE.left + i * LANE.gap));
    expect(width).toBe(LANE.left + 6 * LANE.gap);
    expect(arrows[3]?.label).not.toBe('');
    expect(arrows.map((a) => a.bytes)).toEqual(['128 B', '32 B', '4 B', '', '', '4 B']);
  });
  it('SPMD: shards down around each TransferToDevice, the step runs replicated', () => {
    const later = crossings(spmd, 2);
    expect(later.map((c) => c.method)).toEqual([
      'TransferShardsToDevice',
      'TransferToDevice',
      'TransferShardsToDevice',
      'TransferToDevice',
      'ExecuteReplicated',
      'TransferFromDevice',
    ]);
    expect(later.map((c) => c.direction)).toEqual(['down', 'down', 'down', 'down', 'run', 'up']);
    expect(later.map((c) => c.bytes)).toEqual(['', '128 B', '', '32 B', '', '4 B']);
    expect(later[0]?.metric).toBe('');
    expect(later[0]?.cited?.defined).toBe('pjrt_computation_client.cpp:298');
    expect(later[4]?.cited?.call).toBe('PjRtLoadedExecutable::Execute');
    expect(later[4]?.pjrt).toContain('PjRtCpuExecutable::Execute');
    expect(stepRows(spmd)[2]?.run).toMatch(/^1 \(/);
    expect(stepRows(spmd)[2]?.up).toBe('1 (4 B) via ReplicateShardedData x1');
    expect(stepRows(mlp)[2]?.up).toBe('1 (4 B)');
    expect(summary(spmd)?.spmd).toBe(true);
  });
});
