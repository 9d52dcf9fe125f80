/**
 * The pallas view model's Mosaic rows (option `target` "tpu-v5e") on streams recorded with
 * `jaxscope run pallas FILE --target tpu-v5e --json` (libtpu offline, `make tpu`):
 * `golden_tpu/matmul_tiled.events.jsonl` (recordings/tpu-v5e/pallas_chip/matmul_tiled.py, a
 * kernel the TPU tiles) and `golden_tpu/matmul.events.jsonl` (the default example, whose (4, 8)
 * block it does not). The truths: the kernel jaxpr printed in the same stream and the Mosaic
 * module's text.
 */
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Event } from '../../frontend/src/protocol';
import { calls, mosaicByCall, mosaicSummary, opRows, opsOf, windowRows } from './view-model';

function recorded(name: string): Event[] {
  const path = fileURLToPath(new URL(`./golden_tpu/${name}.events.jsonl`, import.meta.url));
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as Event);
}

describe('pallas view model: the Mosaic lowering', () => {
  it("names the kernel's operands, their blocks and memory spaces", () => {
    const events = recorded('matmul_tiled');
    const [call] = calls(events);
    const low = mosaicByCall(events).get(0)!;
    expect(mosaicSummary(low)).toBe('matmul_kernel: grid (2, 3), arbitrary, arbitrary');
    expect(windowRows(call, low).map((w) => `${w.role} ${w.name} ${w.block} ${w.memorySpace}`)).toEqual([
      'input x (128, 512) vmem',
      'input y (512, 128) vmem',
      'output o (128, 128) vmem',
    ]);
    // the same blocks as the BlockSpecs the exhibit read from the jaxpr
    expect(low.windows.map((w) => w.block)).toEqual(call!.operands.map((op) => op.block.map((d) => d.size)));
    // without the call, the windows are numbered
    expect(windowRows(undefined, low)[2]!.name).toBe('arg 2');
  });

  it('links each op to its kernel eqns, the user line and its line of the module text', () => {
    const events = recorded('matmul_tiled');
    const [call] = calls(events);
    const low = mosaicByCall(events).get(0)!;
    const rows = opRows(call, low);
    const text = low.mosaic.split('\n');
    expect(rows).toHaveLength(low.ops.length);
    // every op found in the kernel's body, in order, on a line that holds its name
    const found = rows.map((r) => r.textLine);
    expect(found.every((l) => l > 0)).toBe(true);
    expect([...found].sort((a, b) => a - b)).toEqual(found);
    rows.forEach((r) => expect(text[r.textLine]).toContain(r.name === 'func.return' ? 'return' : r.name));
    // the matmul: from dot_general, eqn 2 of the kernel jaxpr, line 16
    const matmul = rows.find((r) => r.name === 'tpu.matmul')!;
    expect(call!.kernel_jaxpr.eqns[2]!.primitive).toBe('dot_general');
    expect([matmul.primitive, matmul.eqns, matmul.line]).toEqual(['dot_general', [2], 16]);
    expect(text[matmul.textLine]).toContain('%2 = tpu.matmul %0, %1');
    // both gets on line 16 stand for each load: the location names no more
    const load = rows.find((r) => r.name === 'vector.load')!;
    expect(load.eqns).toEqual([0, 1]);
    const store = rows.find((r) => r.name === 'tpu.vector_store')!;
    expect(store.eqns).toEqual([3]);
    expect(call!.kernel_jaxpr.eqns[3]!.primitive).toBe('swap');
    // what the op added itself links nowhere
    const ret = rows[rows.length - 1]!;
    expect([ret.name, ret.eqns, ret.line]).toEqual(['func.return', [], null]);
    // a click on eqn 2 marks the ops lowered from it
    expect([...opsOf(rows, { eqn: 2 })].map((i) => rows[i]!.name)).toEqual(['arith.constant', 'tpu.matmul']);
    expect(opsOf(rows, { line: 16 }).size).toBe(rows.length - 1);
  });

  it("shows JAX's words where the TPU cannot tile the block", () => {
    const events = recorded('matmul');
    const low = mosaicByCall(events).get(0)!;
    expect(mosaicSummary(low)).toBe('failed to lower');
    expect(low.error).toContain('divisible by 8 and 128');
    expect(low.error_line).toBe(23);
    expect(opRows(calls(events)[0], low)).toEqual([]);
    expect(windowRows(calls(events)[0], low)).toEqual([]);
  });
});
