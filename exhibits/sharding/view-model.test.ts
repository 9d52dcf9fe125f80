import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import type { Event } from "../../frontend/src/protocol";
import {
  arrayTiles,
  blocksOf,
  collectiveLines,
  countsText,
  dimSplits,
  formFrom,
  formOptions,
  groupsText,
  meshGrid,
  rangeText,
  shardingModel,
  snippetOptions,
  unravel,
  type ShardingPlaced,
} from "./view-model";

// Captured from the real probe by fixtures/capture.py (never written by hand).
const dir = fileURLToPath(new URL("./fixtures/", import.meta.url));
function load(name: string): Event[] {
  return readFileSync(`${dir}${name}.jsonl`, "utf8")
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => JSON.parse(l) as Event);
}

function arg0(events: readonly Event[]): ShardingPlaced {
  const found = shardingModel(events).placed.find((p) => p.name === "args[0]");
  if (found === undefined) throw new Error("no args[0]");
  return found;
}

describe("sum_sharded_axis: (8, 16) on a 2 x 4 mesh with P(x, y)", () => {
  const events = load("sum_sharded_axis");
  const model = shardingModel(events);
  const placed = arg0(events);

  it("collects the placed arrays, the jaxpr and the collectives", () => {
    expect(model.placed.map((p) => p.name)).toEqual([
      "args[0]",
      "output",
      "jax.jit(f) output",
    ]);
    expect(model.jaxpr).not.toBeNull();
    expect(model.error).toBeNull();
    expect(model.collectives?.counts).toEqual({ "all-reduce": 1 });
  });

  it("lays the mesh out with each device at its mesh position", () => {
    const grid = meshGrid(placed);
    expect([grid.rows, grid.cols, grid.rowAxis, grid.colAxes]).toEqual([
      2,
      4,
      "x",
      ["y"],
    ]);
    // the device at mesh (i, j) is mesh_device_ids[i * 4 + j]; its block is its shard's
    for (const [r, row] of grid.cells.entries()) {
      for (const [c, cell] of row.entries()) {
        expect(cell.deviceId).toBe(placed.mesh_device_ids[r * 4 + c]);
        expect(cell.coord).toEqual([r, c]);
        expect(cell.shard?.device_id).toBe(cell.deviceId);
      }
    }
  });

  it("has one block per device when every mesh axis is named", () => {
    const blocks = blocksOf(placed);
    expect(blocks).toHaveLength(placed.shards.length);
    expect(new Set(blocks.map((b) => rangeText(b.index))).size).toBe(
      blocks.length,
    );
    expect(dimSplits(placed)).toEqual([
      "axis 0: 8 → 2 × 4",
      "axis 1: 16 → 4 × 4",
    ]);
  });

  it("marks the sum over x as replicated over x: output blocks shared by 2 devices", () => {
    const out = model.placed.find((p) => p.name === "output");
    if (out === undefined) throw new Error("no output");
    const blocks = blocksOf(out);
    expect(
      blocks.every(
        (b) => b.devices.length === out.shards.length / blocks.length,
      ),
    ).toBe(true);
    const replicas = meshGrid(out)
      .cells.flat()
      .filter((c) => c.replica);
    expect(replicas.length).toBe(
      out.shards.filter((s) => s.replica_id > 0).length,
    );
  });

  it("highlights the collective lines of the HLO", () => {
    const found = model.collectives;
    if (found === null) throw new Error("no collectives");
    const lines = collectiveLines(found);
    const text = found.hlo.split("\n");
    for (const n of lines) expect(text[n]).toContain("all-reduce(");
    expect(countsText(found.counts)).toBe("all-reduce ×1");
    const [c] = found.collectives;
    expect(groupsText(c?.op ?? "", c?.groups)).toMatch(
      /^\{\d,\d\}( \{\d,\d\}){3}$/,
    );
  });

  it("starts the form from what was placed", () => {
    expect(formFrom(placed)).toEqual({
      meshShape: "2, 4",
      axisNames: "x, y",
      axisType: "Auto",
      arrayShape: "8, 16",
      spec: "P('x', 'y')",
    });
  });
});

describe("rank3_blocks: a rank-3 array on a rank-3 mesh", () => {
  const placed = arg0(load("rank3_blocks"));
  it("flattens the mesh axes after the first across the columns", () => {
    const grid = meshGrid(placed);
    expect([grid.rows, grid.cols, grid.colAxes]).toEqual([2, 4, ["y", "z"]]);
    expect(grid.cells[1]?.[3]?.coord).toEqual([1, 1, 1]);
    expect(placed.shards[0]?.index).toHaveLength(3);
    expect(rangeText(placed.shards[0]?.index ?? [])).toBe("[0:2, 0:3, 0:2]");
  });
});

describe("c16_spec_table: replicated specs", () => {
  const model = shardingModel(load("c16_spec_table"));
  it("groups devices holding the same block", () => {
    const byName = new Map(model.placed.map((p) => [p.name, p]));
    const px = byName.get("output[1]"); // P('x'): 2 blocks, each on 4 devices
    if (px === undefined) throw new Error("no output[1]");
    expect(px.spec).toBe("P('x',)");
    expect(blocksOf(px).map((b) => b.devices.length)).toEqual([4, 4]);
    const rep = byName.get("output[0]"); // P(): one block, everywhere
    expect(rep && blocksOf(rep).length).toBe(1);
  });
});

describe("indivisible_spec: the error card", () => {
  const model = shardingModel(load("indivisible_spec"));
  it("has the explained error and no placed array", () => {
    expect(model.placed).toEqual([]);
    expect(model.error?.kind).toBe("indivisible");
    expect([
      model.error?.axis,
      model.error?.dim_size,
      model.error?.partitions,
    ]).toEqual([0, 6, 4]);
  });
});

describe("the form", () => {
  const base = { calls: [] } as unknown as Parameters<typeof formOptions>[0];
  const form = {
    meshShape: "2, 4",
    axisNames: "x, y",
    axisType: "Explicit" as const,
    arrayShape: "8, 16",
    spec: "P('x')",
  };

  it("builds make_mesh, spec and array_shape expressions", () => {
    const out = formOptions(base, form, 8);
    expect(out).toEqual({
      calls: [],
      mesh: "jax.make_mesh((2, 4), ('x', 'y'), axis_types=(AxisType.Explicit,) * 2, devices=jax.devices()[:8])",
      spec: "P('x')",
      array_shape: "(8, 16)",
    });
  });

  it("writes 1-tuples and scalars as Python does", () => {
    const out = formOptions(
      base,
      { ...form, meshShape: "4", axisNames: "d", arrayShape: "" },
      8,
    );
    expect(typeof out === "object" && [out.mesh, out.array_shape]).toEqual([
      "jax.make_mesh((4,), ('d',), axis_types=(AxisType.Explicit,) * 1, devices=jax.devices()[:4])",
      "()",
    ]);
  });

  it("refuses what cannot run", () => {
    expect(formOptions(base, { ...form, axisNames: "x" }, 8)).toMatch(
      /one axis name per mesh dimension/,
    );
    expect(formOptions(base, { ...form, meshShape: "4, 4" }, 8)).toMatch(
      /needs 16 devices/,
    );
    expect(formOptions(base, { ...form, meshShape: "a" }, 8)).toMatch(
      /positive integers/,
    );
  });

  it("resets to the snippet", () => {
    expect(
      snippetOptions({ ...base, mesh: "m", spec: "s", array_shape: "(1,)" }),
    ).toEqual({
      calls: [],
      mesh: null,
      spec: null,
      array_shape: null,
    });
  });

  it("unravels row-major", () => {
    expect(unravel(5, [2, 2, 2])).toEqual([1, 0, 1]);
  });
});

describe("arrayTiles: the array cut along its first two axes", () => {
  it("has one tile per block for P(x, y), each with its device", () => {
    const placed = arg0(load("sum_sharded_axis"));
    const tiles = arrayTiles(placed);
    expect(tiles?.rows).toEqual([
      [0, 4],
      [4, 8],
    ]);
    expect(tiles?.cols).toHaveLength(4);
    for (const s of placed.shards) {
      const r = tiles?.rows.findIndex((x) => x[0] === s.index[0]?.[0]) ?? -1;
      const c = tiles?.cols.findIndex((x) => x[0] === s.index[1]?.[0]) ?? -1;
      expect(tiles?.tiles[r]?.[c]?.devices).toEqual([s.device]);
    }
  });
  it("lists every block of a tile when a later axis is split (rank 3)", () => {
    const placed = arg0(load("rank3_blocks"));
    const tiles = arrayTiles(placed);
    const perTile =
      placed.shards.length /
      ((tiles?.rows.length ?? 1) * (tiles?.cols.length ?? 1));
    for (const row of tiles?.tiles ?? [])
      for (const t of row) expect(t.devices).toHaveLength(perTile);
  });
});
