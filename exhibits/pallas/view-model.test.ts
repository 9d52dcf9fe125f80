import { describe, expect, it } from 'vitest';
import { goldenLoader } from '../../frontend/src/test/fixtures';
import {
  accesses,
  blockShapeText,
  calls,
  cellLabel,
  compared,
  gridTable,
  nextInCell,
  picture,
  pidText,
  sliceText,
  verdict,
} from './view-model';

const golden = goldenLoader(import.meta.url);

describe('pallas view model', () => {
  it('lays out the matmul grid and each operand as blocks', () => {
    const [call] = calls(golden('matmul'));
    expect(call?.grid).toEqual([2, 3]);
    const table = gridTable(call!);
    expect(table.cells).toEqual([
      [0, 1, 2],
      [3, 4, 5],
    ]);
    expect(table.rowLabels).toEqual(['axis 0 = 0', 'axis 0 = 1']);
    expect(call!.operands.map(blockShapeText)).toEqual(['(4, 8)', '(8, 4)', '(4, 4)']);
    // x: two row blocks, each read by the three programs of its row
    const x = picture(call!, 0);
    expect([x.rows, x.cols]).toEqual([8, 8]);
    expect(x.cells.map((c) => [c.y, c.h, c.programs])).toEqual([
      [0, 4, [0, 1, 2]],
      [4, 4, [3, 4, 5]],
    ]);
    expect(cellLabel(call!, x.cells[0]!)).toBe('(0, 0) +2');
    // the output: six blocks, one writer each, none revisited, none unwritten
    const o = picture(call!, 2);
    expect(o.cells.map((c) => [c.y, c.x, c.programs.length])).toEqual([
      [0, 0, 1],
      [0, 4, 1],
      [0, 8, 1],
      [4, 0, 1],
      [4, 4, 1],
      [4, 8, 1],
    ]);
    expect(o.revisited.size).toBe(0);
    expect(o.untouched).toEqual([]);
    expect(o.colLines).toEqual([4, 8]);
  });

  it("words the picked program's reads and writes as slices", () => {
    const [call] = calls(golden('matmul'));
    expect(accesses(call!, 4).map((a) => `${a.verb} ${a.slice}`)).toEqual([
      'reads x[4:8, 0:8]',
      'reads y[0:8, 4:8]',
      'writes o[4:8, 4:8]',
    ]);
    expect(pidText(call!.programs[4]!.program_id)).toBe('(1, 1)');
    expect(pidText([2])).toBe('(2,)');
    expect(sliceText('a', [[3, 4]])).toBe('a[3]');
  });

  it('marks the overwritten and the unwritten output blocks', () => {
    const [call] = calls(golden('overwrite'));
    const o = picture(call!, 1);
    expect(o.cells).toHaveLength(1);
    expect(o.cells[0]!.programs).toEqual([0, 1]);
    expect(o.revisited.has(0)).toBe(true);
    expect(o.untouched.map((c) => [c.x, c.w])).toEqual([[4, 4]]);
    expect(call!.findings.map((f) => f.kind)).toEqual(['race', 'unwritten']);
    expect(nextInCell(o.cells[0]!, 0)).toBe(1);
    expect(nextInCell(o.cells[0]!, 1)).toBe(0);
    const [out] = compared(golden('overwrite'))!.outputs;
    expect(verdict(out!)).toBe('not allclose: NaN/Inf on one side; first at [0]: 8 vs 0');
  });

  it('draws the partial last block of the add example clipped to the array', () => {
    const [call] = calls(golden('add'));
    const x = picture(call!, 0);
    expect([x.rows, x.cols]).toEqual([1, 10]);
    expect(x.cells.map((c) => [c.x, c.w])).toEqual([
      [0, 4],
      [4, 4],
      [8, 2],
    ]);
    expect(gridTable(call!).cells).toEqual([[0, 1, 2]]);
    const [out] = compared(golden('add'))!.outputs;
    expect(verdict(out!)).toBe('allclose: max |f − reference| = 0');
  });

  it('shows only what the stepper reached', () => {
    const events = golden('matmul');
    const at = events.findIndex((e) => e.type === 'pallas_call_found');
    expect(calls(events.slice(0, at))).toEqual([]);
    expect(calls(events.slice(0, at + 1))).toHaveLength(1);
    expect(compared(events.slice(0, at + 1))).toBeNull();
  });
});
