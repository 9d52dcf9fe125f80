import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { Event } from '../../frontend/src/protocol';
import { argViews, hloView, meshView, outputViews, programViews, runCounts, shardsByMesh } from './view-model';

const golden = (name: string): Event[] =>
  readFileSync(new URL(`./golden/${name}.events.jsonl`, import.meta.url), 'utf8')
    .split('\n')
    .filter((line) => line.trim())
    .map((line) => JSON.parse(line) as Event);

describe('torch_spmd view model on the matmul_2x4 golden run', () => {
  const events = golden('matmul_2x4');
  it('the mesh: 8 devices as 2 rows of 4, the call that builds it', () => {
    const mesh = meshView(events);
    expect(mesh?.grid.cells).toEqual([
      [0, 1, 2, 3],
      [4, 5, 6, 7],
    ]);
    expect(mesh?.grid.rows).toBe('data (2)');
    expect(mesh?.grid.columns).toBe('model (4)');
    expect(mesh?.call).toBe("xs.Mesh(range(8), (2, 4), ('data', 'model'))");
    expect(mesh?.xlaDevices).toEqual(['SPMD:0']);
  });
  it("x ('data', 'model'): the mesh as it is; each 2x2 block of arange(32) on the device the mesh puts there", () => {
    const [x] = argViews(events);
    expect(x?.tiles.cells).toEqual(meshView(events)?.grid.cells);
    expect(x?.permutationNote).toBe('the mesh as it is');
    expect(x?.cells?.length).toBe(4);
    for (let r = 0; r < 4; r++) {
      for (let c = 0; c < 8; c++) {
        const cell = x?.cells?.[r]?.[c];
        expect(cell?.text).toBe(`${r * 8 + c}.0`);
        expect(cell?.devices).toEqual([Math.floor(r / 2) * 4 + Math.floor(c / 2)]);
      }
    }
    expect(x?.devices.find((d) => d.id === 5)?.slice).toBe('[2:4, 2:4]');
    expect(x?.devices.find((d) => d.id === 5)?.rows).toEqual([
      ['18.0', '19.0'],
      ['26.0', '27.0'],
    ]);
  });
  it("w ('model', None): the mesh transposed, each row block on the two devices of a mesh column", () => {
    const w = argViews(events)[1];
    expect(w?.tiles.cells).toEqual([
      [0, 4],
      [1, 5],
      [2, 6],
      [3, 7],
    ]);
    expect(w?.permutationNote).toBe('the logical mesh transposed to (model, data)');
    expect(w?.shardingType).toBe('PARTIAL');
    expect(w?.tiles.columns).toBe('tile dim 1 (replicas)');
    expect(argViews(events)[0]?.tiles.columns).toBe('tile dim 1');
    expect(w?.cells?.[2]?.[0]?.devices.sort()).toEqual([1, 5]);
    const laidOut = shardsByMesh(meshView(events), w?.devices ?? []);
    expect(laidOut.map((row) => row.map((s) => s?.id))).toEqual([
      [0, 1, 2, 3],
      [4, 5, 6, 7],
    ]);
  });
  it('the pending HLO marks both parameters; the sync program all-reduces over each mesh row', () => {
    const hlo = hloView(events);
    expect(hlo?.annotations.map((a) => a.opcode)).toEqual(['parameter', 'parameter']);
    for (const line of hlo?.lines ?? []) expect(hlo?.text.split('\n')[line - 1]).toContain('sharding={');
    const [sync, gather] = programViews(events);
    expect(sync?.partitions).toBe(8);
    expect(sync?.collectives.map((c) => [c.opcode, c.groups])).toEqual([['all-reduce', '{{0,1,2,3},{4,5,6,7}}']]);
    for (const line of sync?.lines ?? []) expect(sync?.hlo.split('\n')[line - 1]).toContain('all-reduce(');
    expect(gather?.collectives.map((c) => c.opcode)).toEqual(['all-gather']);
  });
  it('the output equals CPU torch; its blocks are the rows of x @ w', () => {
    const [out] = outputViews(events);
    expect(out?.matches).toBe(true);
    const x = Array.from({ length: 4 }, (_, r) => Array.from({ length: 8 }, (_, c) => r * 8 + c));
    const w = Array.from({ length: 8 }, (_, r) => Array.from({ length: 4 }, (_, c) => ((r * 4 + c) % 5) - 2));
    const want = x.map((row) => [0, 1, 2, 3].map((j) => row.reduce((s, v, k) => s + v * (w[k]?.[j] ?? 0), 0)));
    expect(out?.cells?.map((row) => row.map((c) => Number(c.text)))).toEqual(want);
    expect(runCounts(events)).toEqual({ executions: 1, compiles: 1, gathers: 1 });
  });
});

describe('torch_spmd view model on the other goldens', () => {
  it('transposed_2x2: the chosen device order, transposed by the spec', () => {
    const events = golden('transposed_2x2');
    expect(meshView(events)?.grid.cells).toEqual([
      [3, 1],
      [0, 2],
    ]);
    expect(meshView(events)?.call).toBe("xs.Mesh([3, 1, 0, 2], (2, 2), ('data', 'model'))");
    expect(argViews(events)[0]?.tiles.cells).toEqual([
      [3, 0],
      [1, 2],
    ]);
  });
  it('rows_over_all: both axes merged on one dimension, no collective in the sync program', () => {
    const events = golden('rows_over_all');
    const [x] = argViews(events);
    expect(x?.tileShape).toBe('[8]');
    expect(x?.permutationNote).toContain('axes grouped in one entry merged');
    expect(x?.devices.map((d) => d.slice)).toEqual([0, 1, 2, 3, 4, 5, 6, 7].map((i) => `[${i}:${i + 1}, 0:3]`));
    expect(programViews(events)[0]?.collectives).toEqual([]);
    expect(outputViews(events)[0]?.matches).toBe(true);
  });
});
