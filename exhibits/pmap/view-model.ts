/**
 * The pmap exhibit's view model: the run's events (pmap_traced, the sharding exhibit's
 * sharding_placed, pmap_devices_run, pmap_collectives_moved, pmap_equivalents_compared) as the
 * sentences, rows and cells the view lays out. Pure functions of the events, tested on the golden
 * streams (`view-model.test.ts`).
 */
import type { Event, EventOf, RunFailed } from '../../frontend/src/protocol';

export type PmapTraced = EventOf<'pmap_traced'>;
export type DevicesRun = EventOf<'pmap_devices_run'>;
export type CollectivesMoved = EventOf<'pmap_collectives_moved'>;
export type Moved = CollectivesMoved['moved'][number];
export type EquivalentsCompared = EventOf<'pmap_equivalents_compared'>;
export type Equivalent = EquivalentsCompared['versions'][number];
export type ShardingPlaced = EventOf<'sharding_placed'>;

export interface PmapModel {
  jaxpr: EventOf<'jaxpr_staged'> | null;
  traced: PmapTraced | null;
  placed: ShardingPlaced[];
  devices: DevicesRun | null;
  moved: CollectivesMoved | null;
  equivalents: EquivalentsCompared | null;
  failure: RunFailed | null;
}

/** The events up to the stepper's cursor, by kind (the last of each). */
export function pmapModel(events: readonly Event[]): PmapModel {
  const model: PmapModel = {
    jaxpr: null,
    traced: null,
    placed: [],
    devices: null,
    moved: null,
    equivalents: null,
    failure: null,
  };
  for (const e of events) {
    if (e.type === 'jaxpr_staged') model.jaxpr = e;
    else if (e.type === 'pmap_traced') model.traced = e;
    else if (e.type === 'sharding_placed') model.placed.push(e);
    else if (e.type === 'pmap_devices_run') model.devices = e;
    else if (e.type === 'pmap_collectives_moved') model.moved = e;
    else if (e.type === 'pmap_equivalents_compared') model.equivalents = e;
    else if (e.type === 'run_failed') model.failure = e;
  }
  return model;
}

/** A number as the tables show it: an integer whole, else 4 significant digits. */
export function numberText(x: number): string {
  if (Number.isInteger(x)) return String(x);
  return Number(x.toPrecision(4)).toString();
}

/** Nested lists of numbers (a device's block) as text: `[84, 92, 100]`; `…` past the limit. */
export function valueText(value: unknown): string {
  if (value === null || value === undefined) return '…';
  if (typeof value === 'number') return numberText(value);
  if (typeof value === 'boolean') return String(value);
  if (Array.isArray(value)) return `[${value.map(valueText).join(', ')}]`;
  return String(value);
}

/** The three layers `jax.make_jaxpr(jax.pmap(f))` holds, outermost first, in words. */
export function layers(t: PmapTraced): { name: string; detail: string }[] {
  const axis = `'${t.axis_name}'`;
  return [
    { name: 'jit', detail: `name=${t.jit_name}: compiled once, run on all ${t.mesh_size} devices as one program` },
    {
      name: 'shard_map',
      detail:
        `mesh=Mesh(${axis}: ${t.mesh_size}) over devices ${t.device_ids.join(', ')}; ` +
        `in_specs=(${t.in_specs.join(', ')}) out_specs=(${t.out_specs.join(', ')}) check_vma=${t.check_vma ? 'True' : 'False'}`,
    },
    {
      name: 'body (one device)',
      detail:
        `squeeze the mapped axis off ${t.squeezes} input${t.squeezes === 1 ? '' : 's'}, run f, ` +
        `put it back on ${t.expands} output${t.expands === 1 ? '' : 's'} (broadcast_in_dim)`,
    },
  ];
}

/** The sentence above the layers: the axis, who named it, how many devices of how many. */
export function axisSentence(t: PmapTraced): string {
  const named = t.axis_name_given
    ? `'${t.axis_name}', the axis_name you gave`
    : `'${t.axis_name}' (you gave no axis_name, so JAX named it)`;
  const used =
    t.mesh_size < t.device_count
      ? `the first ${t.mesh_size} of the ${t.device_count} devices, one per row`
      : `all ${t.device_count} devices, one row each`;
  return `pmap built a one-axis mesh over ${used}; its axis is ${named}.`;
}

/** One row per device: id, the row it got, its input shapes, its outputs' values. */
export interface DeviceRow {
  deviceId: number;
  device: string;
  index: number;
  inputs: string;
  outputs: string[];
}

export function deviceRows(run: DevicesRun): DeviceRow[] {
  return run.devices.map((d) => ({
    deviceId: d.device_id,
    device: d.device,
    index: d.index,
    inputs: d.inputs
      .map((l) => `${l.path}: ${l.dtype}[${l.shape.join(',')}]${l.mapped ? ` (row ${d.index})` : ' (whole)'}`)
      .join('; '),
    outputs: d.values.map((v, i) => (v === null ? (d.previews[i] ?? '…') : valueText(v))),
  }));
}

/** Whether every device returned the same values for output `i` (a collective's result). */
export function sameOnEveryDevice(run: DevicesRun, i: number): boolean {
  const texts = run.devices.map((d) => valueText(d.values[i]));
  return texts.every((t) => t === texts[0]);
}

/** One collective's data movement: per device, the operand before and the result after. */
export interface MoveRow {
  deviceId: number;
  before: string;
  after: string;
}

export function moveRows(moved: Moved, deviceIds: readonly number[]): MoveRow[] {
  return deviceIds.map((id, i) => ({
    deviceId: id,
    before: valueText(moved.before[i]),
    after: valueText(moved.after[i]),
  }));
}

/** What a collective did, in words, from its primitive and shapes. */
export function moveSentence(moved: Moved, size: number): string {
  const axes = moved.eqn.axes.map((a) => `'${a}'`).join(', ');
  switch (moved.eqn.primitive) {
    case 'psum':
      return `psum over ${axes}: every device sends its value and receives the sum of all ${size} (an all-reduce).`;
    case 'all_gather':
      return `all_gather over ${axes}: every device receives every device's value, stacked on a new axis of ${size}.`;
    case 'ppermute':
      return `ppermute over ${axes}: each device sends its value to one other device.`;
    default:
      return `${moved.eqn.primitive} over ${axes}.`;
  }
}

/** A version's verdict against pmap's outputs. */
export function verdict(v: Equivalent): string {
  if (v.compared === 'self') return 'the reference';
  if (!v.equal) return v.note ? `differs: ${v.note}` : `differs (max |Δ| ${numberText(v.max_abs_diff ?? NaN)})`;
  const diff = v.max_abs_diff === null || v.max_abs_diff === undefined ? '' : `, max |Δ| ${numberText(v.max_abs_diff)}`;
  return v.compared === 'per_device' ? `equal to every device's row of pmap's output${diff}` : `equal to pmap's output${diff}`;
}

// The words of a jaxpr's text that mark pmap's layers and its collectives.
const MARKS = /\b(jit\[|shard_map\[|psum\[|psum_invariant\[|all_gather\[|ppermute\[|all_to_all\[|reduce_scatter\[|pmax\[|pmin\[)/;

/** The 0-based lines of a jaxpr's text that open a jit or a shard_map or hold a collective. */
export function markedLines(text: string): Set<number> {
  const out = new Set<number>();
  text.split('\n').forEach((line, i) => {
    if (MARKS.test(line)) out.add(i);
  });
  return out;
}
