import { describe, expect, it } from 'vitest';
import { goldenLoader } from '../../frontend/src/test/fixtures';
import {
  axisSentence,
  deviceRows,
  layers,
  markedLines,
  moveRows,
  moveSentence,
  pmapModel,
  sameOnEveryDevice,
  valueText,
  verdict,
} from './view-model';

// Recorded through the sandbox (`jaxscope run pmap examples/NAME.py --json`), never by hand.
const golden = goldenLoader(import.meta.url);

describe('collectives (the default example)', () => {
  const model = pmapModel(golden('collectives'));

  it('reads the jit, the shard_map and the body from the jaxpr', () => {
    const t = model.traced!;
    expect(layers(t).map((l) => l.name)).toEqual(['jit', 'shard_map', 'body (one device)']);
    expect(layers(t)[1]?.detail).toContain("in_specs=(P('i',))");
    expect(layers(t)[1]?.detail).toContain('check_vma=False');
    expect(axisSentence(t)).toBe("pmap built a one-axis mesh over all 8 devices, one row each; its axis is 'i', the axis_name you gave.");
  });

  it('gives each device its row and its outputs', () => {
    const rows = deviceRows(model.devices!);
    expect(rows.map((r) => r.deviceId)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(rows[2]?.inputs).toBe('args[0]: float32[3] (row 2)');
    // x = arange(24).reshape(8, 3): the column sums, on every device
    expect(rows[2]?.outputs[0]).toBe('[84, 92, 100]');
    expect(sameOnEveryDevice(model.devices!, 0)).toBe(true);
    // x[i] - mean: differs per device
    expect(sameOnEveryDevice(model.devices!, 3)).toBe(false);
    expect(rows[0]?.outputs[3]).toBe('[-10.5, -10.5, -10.5]');
  });

  it('shows each collective as sends and receives per device', () => {
    const moved = model.moved!;
    expect(moved.moved.map((m) => m.eqn.primitive)).toEqual(['psum', 'psum', 'all_gather']);
    const psum = moveRows(moved.moved[0]!, moved.device_ids);
    expect(psum[1]).toEqual({ deviceId: 1, before: '[3, 4, 5]', after: '[84, 92, 100]' });
    const gather = moveRows(moved.moved[2]!, moved.device_ids);
    expect(gather[0]?.before).toBe('3');
    expect(gather[0]?.after).toBe('[3, 12, 21, 30, 39, 48, 57, 66]');
    expect(moveSentence(moved.moved[2]!, 8)).toContain('all_gather');
  });

  it('marks the jit, the shard_map and the collectives in the jaxpr', () => {
    const text = model.jaxpr!.jaxpr.text;
    const lines = text.split('\n');
    const marked = [...markedLines(text)].map((i) => lines[i]!.trim().split('=')[1]?.trim().split('[')[0]);
    // JAX prints the body first, as a named jaxpr, then the jit and the shard_map that call it
    expect(marked.sort()).toEqual(['all_gather', 'jit', 'psum', 'psum', 'shard_map']);
  });

  it('shows only what the stepper reached', () => {
    const events = golden('collectives');
    const first = events.findIndex((e) => e.type === 'pmap_devices_run');
    const before = pmapModel(events.slice(0, first));
    expect(before.devices).toBeNull();
    expect(before.traced).not.toBeNull();
  });
});

describe('dp_step', () => {
  const model = pmapModel(golden('dp_step'));

  it('compares the three versions', () => {
    const versions = model.equivalents!.versions;
    expect(versions.map((v) => v.name)).toEqual(['pmap(f)', 'jit_version', 'shard_map_version']);
    expect(verdict(versions[0]!)).toBe('the reference');
    expect(verdict(versions[1]!)).toMatch(/^equal to every device's row of pmap's output/);
    expect(versions[2]!.jaxpr.text).toContain('shard_map[');
  });
});

describe('valueText', () => {
  it('writes nested numbers compactly', () => {
    expect(valueText([[1, 2.5], [0.333333, null]])).toBe('[[1, 2.5], [0.3333, …]]');
  });
});
