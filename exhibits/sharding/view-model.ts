/**
 * The sharding exhibit's view model (pure): which block of the array each device holds, laid
 * out on the mesh; the collectives the partitioner inserted; the options a rerun sends.
 */
import type {
  Event,
  EventOf,
  JaxprStaged,
  RunFailed,
  RunOptions,
} from "../../frontend/src/protocol";

export type ShardingPlaced = EventOf<"sharding_placed">;
export type CollectivesFound = EventOf<"collectives_found">;
export type ShardingErrorExplained = EventOf<"sharding_error_explained">;
export type ShardView = ShardingPlaced["shards"][number];
export type AnnotationsChecked = EventOf<"sharding_annotations_checked">;
export type AnnotationCheck = AnnotationsChecked["annotations"][number];

export interface ShardingModel {
  /** every placed array so far: `args[0]`, then `output…`, then `jax.jit(f) output…` */
  placed: ShardingPlaced[];
  jaxpr: JaxprStaged | null;
  collectives: CollectivesFound | null;
  error: ShardingErrorExplained | null;
  failure: RunFailed | null;
  /** the with_sharding_constraint/device_put annotations inside f, checked */
  annotations: AnnotationsChecked | null;
}

export function shardingModel(events: readonly Event[]): ShardingModel {
  const model: ShardingModel = {
    placed: [],
    jaxpr: null,
    collectives: null,
    error: null,
    failure: null,
    annotations: null,
  };
  for (const e of events) {
    if (e.type === "sharding_placed") model.placed.push(e);
    else if (e.type === "jaxpr_staged") model.jaxpr = e;
    else if (e.type === "collectives_found") model.collectives = e;
    else if (e.type === "sharding_error_explained") model.error = e;
    else if (e.type === "run_failed") model.failure = e;
    else if (e.type === "sharding_annotations_checked") model.annotations = e;
  }
  return model;
}

/** `[0:4, 0:16]` — NumPy slice notation of a block's index ranges. */
export function rangeText(index: readonly (readonly number[])[]): string {
  return `[${index.map(([a, b]) => `${a}:${b}`).join(", ")}]`;
}

export interface Block {
  /** 0-based, in order of first appearance by device id */
  id: number;
  index: number[][];
  shape: number[];
  devices: string[];
}

/** The distinct blocks of an array (devices holding the same index ranges share one). */
export function blocksOf(placed: ShardingPlaced): Block[] {
  const byKey = new Map<string, Block>();
  for (const s of placed.shards) {
    const key = rangeText(s.index);
    let block = byKey.get(key);
    if (block === undefined) {
      block = { id: byKey.size, index: s.index, shape: s.shape, devices: [] };
      byKey.set(key, block);
    }
    block.devices.push(s.device);
  }
  return [...byKey.values()];
}

export interface GridCell {
  deviceId: number;
  /** the device's position on each mesh axis */
  coord: number[];
  shard: ShardView | null;
  block: number;
  /** a copy of a block another device also holds (`replica_id > 0`) */
  replica: boolean;
}

export interface MeshGrid {
  /** mesh axis drawn down the rows (the first), and those across the columns (the rest) */
  rowAxis: string | null;
  colAxes: string[];
  rows: number;
  cols: number;
  cells: GridCell[][];
}

/**
 * The mesh as a 2-D grid, whatever its rank: the first mesh axis down the rows, the other axes
 * flattened (row-major) across the columns; each cell is one device with the block it holds.
 */
export function meshGrid(placed: ShardingPlaced): MeshGrid {
  const shape =
    placed.mesh_shape.length > 0
      ? placed.mesh_shape
      : [placed.mesh_device_ids.length];
  const rows = shape[0] ?? 1;
  const cols = shape.slice(1).reduce((a, b) => a * b, 1);
  const blocks = blocksOf(placed);
  const blockOf = new Map<string, number>();
  for (const b of blocks) for (const d of b.devices) blockOf.set(d, b.id);
  const byId = new Map(placed.shards.map((s) => [s.device_id, s]));
  const cells: GridCell[][] = [];
  for (let r = 0; r < rows; r++) {
    const row: GridCell[] = [];
    for (let c = 0; c < cols; c++) {
      const flat = r * cols + c;
      const deviceId = placed.mesh_device_ids[flat] ?? flat;
      const shard = byId.get(deviceId) ?? null;
      row.push({
        deviceId,
        coord: unravel(flat, shape),
        shard,
        block: shard ? (blockOf.get(shard.device) ?? 0) : -1,
        replica: shard !== null && shard.replica_id > 0,
      });
    }
    cells.push(row);
  }
  return {
    rowAxis: placed.mesh_axes[0] ?? null,
    colAxes: placed.mesh_axes.slice(1),
    rows,
    cols,
    cells,
  };
}

export function unravel(flat: number, shape: readonly number[]): number[] {
  const out = new Array<number>(shape.length).fill(0);
  let rest = flat;
  for (let i = shape.length - 1; i >= 0; i--) {
    const n = shape[i] ?? 1;
    out[i] = rest % n;
    rest = Math.floor(rest / n);
  }
  return out;
}

/** `x=0, y=3` for a device's mesh coordinates. */
export function coordText(
  axes: readonly string[],
  coord: readonly number[],
): string {
  return axes.map((a, i) => `${a}=${coord[i] ?? 0}`).join(", ");
}

/** A hue per block, spread around the wheel (the fill is translucent: both themes). */
export function blockHue(block: number, count: number): number {
  return Math.round((block * 360) / Math.max(count, 1) + 210) % 360;
}

/** What a spec does to each array dimension: `axis 0 / 2 ('x')`, `axis 1 whole`. */
export function dimSplits(placed: ShardingPlaced): string[] {
  return placed.shape.map((size, i) => {
    const per = placed.shard_shape[i] ?? size;
    const parts = per > 0 ? size / per : 1;
    return parts > 1
      ? `axis ${i}: ${size} → ${parts} × ${per}`
      : `axis ${i}: ${size} (whole)`;
  });
}

/** The 0-based HLO lines of the collectives (to highlight). */
export function collectiveLines(found: CollectivesFound | null): Set<number> {
  return new Set(found?.collectives.map((c) => c.line) ?? []);
}

/** `all-reduce ×1, all-gather ×2`, or a sentence when there is none. */
export function countsText(
  counts: Readonly<Record<string, number | undefined>>,
): string {
  const parts = Object.entries(counts)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([op, n]) => `${op} ×${n ?? 0}`);
  return parts.length > 0
    ? parts.join(", ")
    : "none: every device computes its block alone";
}

/** `{0,4} {1,5}` for expanded groups (pairs as `0→4`). */
export function groupsText(
  op: string,
  groups: readonly (readonly number[])[] | null | undefined,
): string {
  if (groups == null) return "";
  if (op === "collective-permute")
    return groups.map(([a, b]) => `${a}→${b}`).join(" ");
  return groups.map((g) => `{${g.join(",")}}`).join(" ");
}

/** A sub-axis of XLA's mesh form, `'axis_0':(2)2`: the piece of size `size` after `pre`. */
export interface SubAxis {
  /** as XLA prints it */
  text: string;
  axis: string;
  /** the mesh axis's size in the collective's mesh (`null`: not in the mesh printed) */
  axisSize: number | null;
  pre: number;
  size: number;
  /** what is left of the axis after the piece (`axisSize / (pre * size)`) */
  rest: number | null;
}

/** What the note under the collectives explains: only the parts of XLA's mesh form shown. */
export interface MeshGroupsNote {
  /** the first mesh form shown, `mesh['axis_0'=2,'axis_1'=4]` */
  mesh: string;
  /** its grouped axes, `{'axis_0'}` */
  group: string;
  /** `device_ids=([2,2,2]T(0,2,1))` when a mesh form shown carries one */
  deviceIds: string | null;
  /** every distinct sub-axis shown, in order of appearance */
  subAxes: SubAxis[];
}

const MESH_FORM =
  /(mesh\[[^\]]*\])(?:, (device_ids=\(\[[\d,]+\](?:T\([\d,]+\))?\)))?\s*(\{[^}]*\})/;

/**
 * The note for XLA's mesh form of replica groups (`mesh['axis_0'=2,'axis_1'=4] {'axis_0'}`),
 * built from the forms the table shows: `device_ids` and sub-axes (`'axis_0':(2)2`) are
 * explained only when one appears. `null` when no collective prints the mesh form.
 */
export function meshGroupsNote(
  found: CollectivesFound | null,
): MeshGroupsNote | null {
  let note: MeshGroupsNote | null = null;
  const seen = new Set<string>();
  for (const c of found?.collectives ?? []) {
    const m = MESH_FORM.exec(c.replica_groups);
    if (m === null) continue;
    const [, mesh = "", deviceIds, group = ""] = m;
    note ??= { mesh, group, deviceIds: null, subAxes: [] };
    note.deviceIds ??= deviceIds ?? null;
    const sizes = new Map(
      [...mesh.matchAll(/'([^']+)'=(\d+)/g)].map((a) => [a[1] ?? "", Number(a[2])]),
    );
    for (const sub of group.matchAll(/'([^']+)':\((\d+)\)(\d+)/g)) {
      const [text, axis = "", pre = "1", size = "1"] = sub;
      const axisSize = sizes.get(axis) ?? null;
      if (seen.has(`${mesh} ${text}`)) continue;
      seen.add(`${mesh} ${text}`);
      note.subAxes.push({
        text,
        axis,
        axisSize,
        pre: Number(pre),
        size: Number(size),
        rest:
          axisSize === null ? null : axisSize / (Number(pre) * Number(size)),
      });
    }
  }
  return note;
}

/** What the grid shows: which array, and what that array is (before the picture). */
export interface PlacedCaption {
  /** `args[0], the input f receives` */
  title: string;
  /** where its sharding came from */
  detail: string;
  /** when JAX refused another spec inside f: the grid is not that spec */
  warning: string | null;
}

/**
 * The caption of the grid for `placed`: `args[0]` is the input, placed with
 * `NamedSharding(mesh, spec)` before `f` runs; when JAX then refused a spec inside `f`, that
 * failed spec is named so the input's placement is not read as it.
 */
export function placedCaption(
  placed: ShardingPlaced,
  error: ShardingErrorExplained | null,
): PlacedCaption {
  if (placed.name !== "args[0]") {
    const jitted = placed.name.startsWith("jax.jit(f)");
    return {
      title: jitted
        ? `${placed.name}: what jax.jit(f) returns`
        : `${placed.name}: what f returns, called as you call it`,
      detail: jitted
        ? "its sharding is the one the compiled program gave it"
        : "its sharding is the one f gave it",
      warning: null,
    };
  }
  const spec = placed.spec ?? "P()";
  const origin =
    placed.spec_origin === "default"
      ? `the snippet defines no spec, so ${spec}: the default, replicated`
      : placed.spec_origin === "options.spec"
        ? `${spec} from the form above`
        : placed.spec_origin === "spec"
          ? `${spec} from the snippet's spec`
          : spec;
  let warning: string | null = null;
  if (error !== null && error.where !== "args[0]") {
    warning =
      error.spec !== null && error.spec !== undefined
        ? `This is the input, not ${error.spec}: JAX refused that spec inside f, so no array was placed with it.`
        : "This is the input as it went into f: JAX raised inside f, so f returned nothing to show.";
  }
  return {
    title: "args[0], the input f receives",
    detail: `placed with NamedSharding(mesh, spec) before f runs; ${origin}`,
    warning,
  };
}

// ------------------------------------------------------------------------------------------
// The mesh/spec/array form
// ------------------------------------------------------------------------------------------

export type AxisTypeName = "Auto" | "Explicit";

export interface MeshForm {
  meshShape: string;
  axisNames: string;
  axisType: AxisTypeName;
  arrayShape: string;
  spec: string;
}

/** The form's starting values, from what the probe placed (`args[0]`). */
export function formFrom(placed: ShardingPlaced | undefined): MeshForm {
  if (placed === undefined) {
    return {
      meshShape: "2, 4",
      axisNames: "x, y",
      axisType: "Auto",
      arrayShape: "8, 16",
      spec: "P('x', 'y')",
    };
  }
  return {
    meshShape: placed.mesh_shape.join(", "),
    axisNames: placed.mesh_axes.join(", "),
    axisType: placed.axis_types.every((t) => t === "Explicit")
      ? "Explicit"
      : "Auto",
    arrayShape: placed.shape.join(", "),
    spec: placed.spec ?? "P()",
  };
}

function ints(text: string): number[] | null {
  const parts = text
    .split(/[,\sx×]+/)
    .map((t) => t.trim())
    .filter((t) => t.length > 0);
  if (!parts.every((t) => /^\d+$/.test(t))) return null;
  return parts.map(Number);
}

function tupleText(items: readonly string[]): string {
  return items.length === 1 ? `(${items[0]},)` : `(${items.join(", ")})`;
}

/**
 * The rerun options of the form (Python expressions the probe evaluates in the snippet), or an
 * error sentence. The mesh takes its devices from `jax.devices()` in order.
 */
export function formOptions(
  base: RunOptions,
  form: MeshForm,
  deviceCount: number,
): RunOptions | string {
  const shape = ints(form.meshShape);
  if (shape === null || shape.length === 0 || shape.some((n) => n < 1)) {
    return "Mesh shape: positive integers, e.g. 2, 4";
  }
  const names = form.axisNames
    .split(/[,\s]+/)
    .map((t) => t.trim())
    .filter((t) => t.length > 0);
  if (names.length !== shape.length) {
    return `Give one axis name per mesh dimension (${shape.length}), e.g. ${shape.map((_, i) => "xyzw"[i] ?? `a${i}`).join(", ")}`;
  }
  if (!names.every((n) => /^[A-Za-z_]\w*$/.test(n)))
    return "Axis names: Python identifiers, e.g. x, y";
  const size = shape.reduce((a, b) => a * b, 1);
  if (size > deviceCount)
    return `The mesh needs ${size} devices; the worker has ${deviceCount}`;
  const array = ints(form.arrayShape);
  if (array === null)
    return "Array shape: integers, e.g. 8, 16 (empty for a scalar)";
  const spec = form.spec.trim() === "" ? "P()" : form.spec.trim();
  const mesh =
    `jax.make_mesh(${tupleText(shape.map(String))}, ${tupleText(names.map((n) => `'${n}'`))}, ` +
    `axis_types=(AxisType.${form.axisType},) * ${shape.length}, devices=jax.devices()[:${size}])`;
  return { ...base, mesh, spec, array_shape: tupleText(array.map(String)) };
}

/** Options without the mesh/spec/array overrides (the snippet's own). */
/**
 * The form as a run's options set it (a page opened from a shared link, before its run: no
 * `sharding_placed` yet), over `formFrom(undefined)`: the spec and the array shape as they are,
 * the mesh read back from the expression `formOptions` writes (a mesh expression of another
 * form keeps the default mesh fields; the view shows that expression beside the form). Null
 * when the options set none of the three (the snippet's own run).
 */
export function formFromOptions(options: RunOptions): MeshForm | null {
  const { mesh, spec, array_shape: arrayShape } = options;
  if (mesh == null && spec == null && arrayShape == null) return null;
  const form = formFrom(undefined);
  const made =
    mesh == null
      ? null
      : /^jax\.make_mesh\(\(([^()]*)\), \(([^()]*)\), axis_types=\(AxisType\.(Auto|Explicit),\) \* \d+, /.exec(
          mesh,
        );
  if (made !== null) {
    const items = (text: string): string[] =>
      text
        .split(",")
        .map((t) => t.trim().replace(/^'(.*)'$/, "$1"))
        .filter((t) => t !== "");
    form.meshShape = items(made[1] ?? "").join(", ");
    form.axisNames = items(made[2] ?? "").join(", ");
    form.axisType = made[3] === "Explicit" ? "Explicit" : "Auto";
  }
  if (spec != null) form.spec = spec;
  if (arrayShape != null) {
    form.arrayShape = arrayShape
      .replace(/^\s*\(|\)\s*$/g, "")
      .split(",")
      .map((t) => t.trim())
      .filter((t) => t !== "")
      .join(", ");
  }
  return form;
}

export function snippetOptions(base: RunOptions): RunOptions {
  return { ...base, mesh: null, spec: null, array_shape: null };
}

export interface ArrayTiles {
  /** `[start, stop)` of each tile row (array axis 0) and column (axis 1; one whole column below rank 2) */
  rows: number[][];
  cols: number[][];
  /** per tile: the blocks that cover it (several when a later axis is split too) and their devices */
  tiles: { blocks: number[]; devices: string[] }[][];
}

/**
 * The array itself cut along its first two axes (the picture `jax.debug.visualize_array_sharding`
 * draws for 2-D arrays): each tile lists the devices holding it. `null` for a scalar.
 */
export function arrayTiles(placed: ShardingPlaced): ArrayTiles | null {
  if (placed.shape.length === 0) return null;
  const blocks = blocksOf(placed);
  const cuts = (axis: number): number[][] => {
    const size = placed.shape[axis];
    if (size === undefined) return [[0, 1]];
    const seen = new Map<string, number[]>();
    for (const b of blocks) {
      const r = b.index[axis] ?? [0, size];
      seen.set(`${r[0]}:${r[1]}`, r);
    }
    return [...seen.values()].sort((a, b) => (a[0] ?? 0) - (b[0] ?? 0));
  };
  const rows = cuts(0);
  const cols = placed.shape.length > 1 ? cuts(1) : [[0, 1]];
  const tiles = rows.map((r) =>
    cols.map((c) => {
      const covering = blocks.filter((b) => {
        const br = b.index[0];
        const bc = placed.shape.length > 1 ? b.index[1] : c;
        return (
          br?.[0] === r[0] &&
          br?.[1] === r[1] &&
          bc?.[0] === c[0] &&
          bc?.[1] === c[1]
        );
      });
      return {
        blocks: covering.map((b) => b.id),
        devices: covering.flatMap((b) => b.devices),
      };
    }),
  );
  return { rows, cols, tiles };
}

/**
 * The CSS columns of the tiles: each as wide as the array columns it covers (its share of
 * axis 1), never narrower than its label.
 */
export function tileColumns(tiles: ArrayTiles): string {
  return tiles.cols
    .map((c) => `minmax(4.5rem, ${(c[1] ?? 1) - (c[0] ?? 0)}fr)`)
    .join(" ");
}

/** A tile row's height in rem: taller for more array rows (a quarter rem each), within 1.6 to 6. */
export function tileHeight(tiles: ArrayTiles, row: number): number {
  const r = tiles.rows[row];
  return Math.min(6, 1.6 + ((r?.[1] ?? 1) - (r?.[0] ?? 0)) * 0.25);
}

/** `[0:4, 0:8]` of a tile (`[0:4]` below rank 2), the ranges of axes 0 and 1 it covers. */
export function tileRange(tiles: ArrayTiles, row: number, col: number, rank: number): string {
  const r = tiles.rows[row];
  const c = tiles.cols[col];
  return rank > 1 ? `[${r?.[0]}:${r?.[1]}, ${c?.[0]}:${c?.[1]}]` : `[${r?.[0]}:${r?.[1]}]`;
}

/** The mesh of a placed array: `x=2 × y=4`, or `8 devices` when it has no axes. */
export function meshSizes(placed: ShardingPlaced): string {
  return placed.mesh_axes.length > 0
    ? placed.mesh_axes.map((a, i) => `${a}=${placed.mesh_shape[i]}`).join(" × ")
    : `${placed.mesh_device_ids.length} devices`;
}

const SHORT: Record<string, string> = { float32: "f32", float64: "f64", bfloat16: "bf16", float16: "f16", int32: "i32" };

/** An annotation the compiled program did not keep, in the words of the CLI's stderr line
 * (artefacts.py `headline`): what was asked, what the program holds, why. */
export function annotationText(a: AnnotationCheck): string {
  const call = a.primitive === "sharding_constraint" ? "with_sharding_constraint" : "device_put";
  const value = `${SHORT[a.dtype] ?? a.dtype}[${a.shape.join(",")}]`;
  const where = a.where.startsWith("output") ? `as f's ${a.where}` : "compiled alone";
  return `${call} asked for ${a.spec} on ${value}; the program holds it ${a.got} (${where}): ${a.reason ?? ""}`;
}
