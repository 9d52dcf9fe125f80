/**
 * The torch_spmd exhibit's view model: the mesh as a grid of device ids, each sharded argument
 * (spec, permutation, tile assignment, the runtime's sharding text, the tensor with the cells a
 * device holds, each device's shard), the pending HLO's annotations, the partitioned programs'
 * collectives, and the outputs against eager CPU torch, as pure functions of the events (tested
 * on the golden streams in `view-model.test.ts`).
 */
import type { Event, EventOf } from '../../frontend/src/protocol';
import { eventsOf, lastOf } from '../../frontend/src/widgets/events';
import { formatScalar } from '../../frontend/src/widgets/format';

type ShardEvent = EventOf<'spmd_arg_sharded'>['shards'][number];

/** A grid of device ids with labels: the mesh or a tile assignment laid out as rows. */
export interface IdGrid {
  /** what the columns run along (`model (4)`), and the rows (`data (2)`) */
  columns: string;
  rows: string;
  cells: number[][];
}

/** Lay `flat` (row-major, shape `shape`) out as rows: the last axis across, the others down. */
export function asRows(flat: readonly number[], shape: readonly number[]): number[][] {
  const width = shape.length === 0 ? 1 : (shape[shape.length - 1] ?? 1);
  const rows: number[][] = [];
  for (let i = 0; i < flat.length; i += Math.max(width, 1)) rows.push(flat.slice(i, i + width));
  return rows;
}

function axisLabel(names: readonly string[], shape: readonly number[], axes: readonly number[]): string {
  return axes.map((a) => `${names[a] ?? a} (${shape[a] ?? '?'})`).join(' × ');
}

export interface MeshView {
  deviceCount: number;
  runtimeDevices: string[];
  xlaDevices: string[];
  shape: number[];
  axisNames: string[];
  /** `xs.Mesh(device_ids, (2, 4), ('data', 'model'))` */
  call: string;
  grid: IdGrid;
}

const pyTuple = (items: readonly string[]): string => `(${items.join(', ')}${items.length === 1 ? ',' : ''})`;

export function meshView(events: readonly Event[]): MeshView | null {
  const e = lastOf(events, 'spmd_mesh_built');
  if (!e) return null;
  const rank = e.mesh_shape.length;
  const identity = e.device_ids.every((d, i) => d === i);
  const ids = identity ? `range(${e.device_count})` : `[${e.device_ids.join(', ')}]`;
  const names = pyTuple(e.axis_names.map((n) => `'${n}'`));
  return {
    deviceCount: e.device_count,
    runtimeDevices: e.runtime_devices,
    xlaDevices: e.xla_devices,
    shape: e.mesh_shape,
    axisNames: e.axis_names,
    call: `xs.Mesh(${ids}, ${pyTuple(e.mesh_shape.map(String))}, ${names})`,
    grid: {
      columns: axisLabel(e.axis_names, e.mesh_shape, [rank - 1]),
      rows: rank > 1 ? axisLabel(e.axis_names, e.mesh_shape, [...Array(rank - 1).keys()]) : '',
      cells: asRows(e.logical_mesh, e.mesh_shape),
    },
  };
}

/** One cell of a tensor's picture: its value and the devices that hold it. */
export interface TensorCell {
  text: string;
  devices: number[];
}

/** One device's shard: where it sits in the tensor and its values as rows. */
export interface DeviceShard {
  device: string;
  id: number;
  replica: number;
  /** numpy's slice of the global tensor: `[0:2, 2:4]`, `[...]` for the whole */
  slice: string;
  shape: string;
  rows: string[][];
}

export const deviceId = (device: string): number => Number(device.split(':').pop());

const dtypeName = (dtype: string): string => dtype.replace(/^torch\./, '');

function shardRows(shard: ShardEvent, dtype: string): string[][] {
  if (shard.values.length === 0) return [];
  const texts = shard.values.map((v) => formatScalar(v, dtype));
  const width = shard.shape.length === 0 ? 1 : (shard.shape[shard.shape.length - 1] ?? 1);
  if (shard.shape.length > 2) return [];
  const rows: string[][] = [];
  for (let i = 0; i < texts.length; i += Math.max(width, 1)) rows.push(texts.slice(i, i + width));
  return rows;
}

export function deviceShards(shards: readonly ShardEvent[], dtype: string): DeviceShard[] {
  const name = dtypeName(dtype);
  return shards.map((s) => ({
    device: s.device,
    id: deviceId(s.device),
    replica: s.replica_id,
    slice: s.index.length === 0 ? '[...]' : `[${s.index.map(([a, b]) => `${a}:${b}`).join(', ')}]`,
    shape: `[${s.shape.join(', ')}]`,
    rows: shardRows(s, name),
  }));
}

/**
 * The whole tensor (rank 0 to 2) as rows of cells, put together from the shards (each shard's
 * values at its index), each cell with the devices holding it; null for a higher rank or a
 * tensor whose shards were sent without values.
 */
export function tensorCells(shape: readonly number[], shards: readonly ShardEvent[], dtype: string): TensorCell[][] | null {
  if (shape.length > 2 || shards.length === 0 || shards.some((s) => s.values.length === 0)) return null;
  const [h, w] = shape.length === 2 ? [shape[0] ?? 0, shape[1] ?? 0] : [1, shape[0] ?? 1];
  const name = dtypeName(dtype);
  const cells: TensorCell[][] = Array.from({ length: h }, () => Array.from({ length: w }, () => ({ text: '', devices: [] as number[] })));
  for (const s of shards) {
    const index = s.index.length === 0 ? shape.map((n) => [0, n]) : s.index;
    const range = (i: number, n: number): [number, number] => [index[i]?.[0] ?? 0, index[i]?.[1] ?? n];
    const [r0, r1] = shape.length === 2 ? range(0, h) : [0, 1];
    const [c0, c1] = shape.length === 2 ? range(1, w) : shape.length === 1 ? range(0, w) : [0, 1];
    let k = 0;
    for (let r = r0; r < r1; r++) {
      for (let c = c0; c < c1; c++) {
        const cell = cells[r]?.[c];
        const v = s.values[k++];
        if (!cell || v === undefined) continue;
        cell.text = formatScalar(v, name);
        cell.devices.push(deviceId(s.device));
      }
    }
  }
  return cells;
}

export interface ArgView {
  index: number;
  title: string;
  spec: string;
  /** `(0, 1)`: the mesh axes in the order the tile assignment takes them */
  permutation: string;
  permutationNote: string;
  tiles: IdGrid;
  tileShape: string;
  shardingType: string;
  sharding: string;
  groups: string;
  cells: TensorCell[][] | null;
  devices: DeviceShard[];
}

export function argViews(events: readonly Event[]): ArgView[] {
  const mesh = lastOf(events, 'spmd_mesh_built');
  const names = mesh?.axis_names ?? [];
  return eventsOf(events, 'spmd_arg_sharded').map((e) => {
    const permuted = e.permutation.map((a) => names[a] ?? String(a));
    const identity = e.permutation.every((a, i) => a === i);
    const rank = e.tile_shape.length;
    const replicated = e.replication_groups.some((g) => g.length > 1);
    return {
      index: e.index,
      title: `args[${e.index}] ${dtypeName(e.dtype)}[${e.shape.join(',')}]`,
      spec: e.spec,
      permutation: pyTuple(e.permutation.map(String)),
      permutationNote:
        (identity ? 'the mesh as it is' : `the logical mesh transposed to (${permuted.join(', ')})`) +
        (rank < e.permutation.length ? ', the axes grouped in one entry merged' : ''),
      tiles: {
        // A trailing tile dimension over the mesh axes the spec leaves out holds copies of one
        // tile (its replication groups have more than one device).
        columns: rank > 0 ? `tile dim ${rank - 1}${replicated ? ' (replicas)' : ''}` : '',
        rows: rank > 1 ? `tile dim${rank > 2 ? 's' : ''} ${[...Array(rank - 1).keys()].join(', ')}` : '',
        cells: asRows(e.tile_assignment, e.tile_shape),
      },
      tileShape: `[${e.tile_shape.join(', ')}]`,
      shardingType: e.sharding_type,
      sharding: e.sharding,
      groups: e.replication_groups.length ? e.replication_groups.map((g) => `{${g.join(',')}}`).join(' ') : '',
      cells: tensorCells(e.shape, e.shards, e.dtype),
      devices: deviceShards(e.shards, e.dtype),
    };
  });
}

export interface HloView {
  text: string;
  /** 1-based lines with a `sharding=` attribute */
  lines: Set<number>;
  annotations: { instruction: string; opcode: string; sharding: string; line: number }[];
}

export function hloView(events: readonly Event[]): HloView | null {
  const e = lastOf(events, 'spmd_hlo_annotated');
  if (!e) return null;
  return { text: e.hlo, lines: new Set(e.annotations.map((a) => a.line)), annotations: e.annotations };
}

export interface CollectiveRow {
  opcode: string;
  instruction: string;
  result: string;
  groups: string;
  line: number;
}

export interface ProgramView {
  module: string;
  cause: string;
  partitions: number;
  hlo: string;
  collectives: CollectiveRow[];
  lines: Set<number>;
}

export function programViews(events: readonly Event[]): ProgramView[] {
  return eventsOf(events, 'spmd_program_partitioned').map((e) => ({
    module: e.module,
    cause: e.cause,
    partitions: e.num_partitions,
    hlo: e.hlo,
    collectives: e.collectives.map((c) => ({
      opcode: c.opcode,
      instruction: c.instruction,
      result: c.result,
      groups: c.groups_text,
      line: c.line,
    })),
    lines: new Set(e.collectives.map((c) => c.line)),
  }));
}

export interface OutputView {
  title: string;
  sharding: string;
  cells: TensorCell[][] | null;
  devices: DeviceShard[];
  /** `equal to CPU torch (max |diff| 0.0)`, or why not */
  comparison: string;
  matches: boolean;
}

export function outputViews(events: readonly Event[]): OutputView[] {
  const e = lastOf(events, 'spmd_result_compared');
  if (!e) return [];
  return e.outputs.map((o, i) => {
    const whole: ShardEvent[] = [{ device: 'host:0', replica_id: 0, index: [], shape: o.shape, values: o.values }];
    const diff = o.max_abs_diff;
    const matches = o.allclose;
    return {
      title: `output ${i} ${dtypeName(o.dtype)}[${o.shape.join(',')}]`,
      sharding: o.sharding,
      cells: o.shards.length ? tensorCells(o.shape, o.shards, o.dtype) : tensorCells(o.shape, whole, o.dtype),
      devices: deviceShards(o.shards, o.dtype),
      comparison:
        diff === null
          ? 'CPU torch gave another shape'
          : `${matches ? 'allclose to' : 'differs from'} eager CPU torch (max |diff| ${diff.toExponential(1)})`,
      matches,
    };
  });
}

export interface RunCounts {
  executions: number;
  compiles: number;
  gathers: number;
}

export function runCounts(events: readonly Event[]): RunCounts | null {
  const e = lastOf(events, 'spmd_result_compared');
  return e ? { executions: e.executions, compiles: e.compiles, gathers: e.gathers } : null;
}

/** The devices laid out as the mesh: each grid cell the shard of the device the mesh puts there. */
export function shardsByMesh(mesh: MeshView | null, shards: readonly DeviceShard[]): (DeviceShard | null)[][] {
  const byId = new Map(shards.map((s) => [s.id, s]));
  if (!mesh) return [shards.slice()];
  return mesh.grid.cells.map((row) => row.map((id) => byId.get(id) ?? null));
}
