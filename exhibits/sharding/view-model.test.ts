import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import type { Event } from "../../frontend/src/protocol";
import {
  annotationText,
  arrayTiles,
  blocksOf,
  collectiveLines,
  countsText,
  dimSplits,
  formFrom,
  formFromOptions,
  formOptions,
  groupsText,
  meshGrid,
  meshGroupsNote,
  meshSizes,
  placedCaption,
  rangeText,
  shardingModel,
  snippetOptions,
  tileColumns,
  tileHeight,
  tileRange,
  unravel,
  type ShardingPlaced,
} from "./view-model";
import { fixtureLoader } from "../../frontend/src/test/fixtures";

// Captured from the real probe by fixtures/capture.py (never written by hand).
const load = fixtureLoader(import.meta.url);

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

describe("meshGroupsNote: only what the replica groups shown contain", () => {
  it("sum_sharded_axis: a plain mesh form, no device_ids, no sub-axis", () => {
    const found = shardingModel(load("sum_sharded_axis")).collectives;
    const text = found?.collectives[0]?.replica_groups ?? "";
    const note = meshGroupsNote(found);
    expect(note).not.toBeNull();
    // the mesh and group quoted are the ones XLA printed, and nothing else is explained
    expect(text).toContain(`${note?.mesh} ${note?.group}`);
    expect(note?.mesh).toBe("mesh['axis_0'=2,'axis_1'=4]");
    expect(note?.deviceIds).toBeNull();
    expect(note?.subAxes).toEqual([]);
    expect(text).not.toMatch(/':\(\d+\)\d+/);
  });

  it("transpose: the all-to-all's device_ids and sub-axis, with XLA's numbers", () => {
    const found = shardingModel(load("transpose")).collectives;
    const a2a = found?.collectives.find((c) => c.op === "all-to-all");
    const note = meshGroupsNote(found);
    expect(a2a?.replica_groups).toContain(note?.deviceIds ?? "(none)");
    expect(note?.deviceIds).toBe("device_ids=([2,2,2]T(0,2,1))");
    expect(note?.subAxes).toHaveLength(1);
    const sub = note?.subAxes[0];
    expect(a2a?.replica_groups).toContain(sub?.text ?? "(none)");
    expect(sub).toMatchObject({ axis: "axis_0", axisSize: 4, pre: 2, size: 2, rest: 1 });
    // one sub-axis of size 2 grouped: each expanded group (checked against XLA in pytest) has 2 devices
    expect(a2a?.groups?.every((g) => g.length === sub?.size)).toBe(true);
  });

  it("rank3_blocks: a mesh form over three axes, nothing more", () => {
    const note = meshGroupsNote(shardingModel(load("rank3_blocks")).collectives);
    expect(note?.group).toBe("{'axis_2'}");
    expect(note?.subAxes).toEqual([]);
  });

  it("no mesh form (collective-permute pairs only), no note", () => {
    const found = shardingModel(load("transpose")).collectives;
    if (found === null) throw new Error("no collectives");
    const pairs = {
      ...found,
      collectives: found.collectives.filter((c) => c.op === "collective-permute"),
    };
    expect(pairs.collectives).toHaveLength(1);
    expect(meshGroupsNote(pairs)).toBeNull();
    expect(meshGroupsNote(null)).toBeNull();
  });
});

describe("c16_indivisible_broken: the grid is the input, the error names the refused spec", () => {
  const model = shardingModel(load("c16_indivisible_broken"));
  const example = readFileSync(
    fileURLToPath(new URL("./examples/c16_indivisible_broken.py", import.meta.url)),
    "utf8",
  );
  it("places args[0] with the default P() (the snippet defines no spec)", () => {
    expect(example).not.toMatch(/^spec\s*=/m);
    const placed = arg0(load("c16_indivisible_broken"));
    expect(placed.spec).toBe("P()");
    expect(placed.spec_origin).toBe("default");
    expect(blocksOf(placed)).toHaveLength(1); // replicated: one block on every device
    const caption = placedCaption(placed, model.error);
    expect(caption.title).toBe("args[0], the input f receives");
    expect(caption.detail).toContain("the snippet defines no spec, so P()");
  });

  it("names the spec JAX refused inside f, as JAX's message prints it", () => {
    expect(model.error?.where).toBe("f");
    const fromJax = /spec=(P\(.*?\),?\)), memory_kind/.exec(model.error?.message ?? "")?.[1];
    expect(fromJax).toBe("P(('batch', 'fsdp'),)");
    expect(model.error?.spec).toBe(fromJax);
    const caption = placedCaption(arg0(load("c16_indivisible_broken")), model.error);
    expect(caption.warning).toContain(`not ${fromJax}`);
  });

  it("outputs are captioned as what f / jax.jit(f) return, with no warning", () => {
    const events = load("sum_sharded_axis");
    const m = shardingModel(events);
    const [out, jitted] = [m.placed[1], m.placed[2]];
    if (out === undefined || jitted === undefined) throw new Error("no outputs");
    expect(placedCaption(out, null).title).toBe("output: what f returns, called as you call it");
    expect(placedCaption(jitted, null).title).toBe("jax.jit(f) output: what jax.jit(f) returns");
    expect(placedCaption(arg0(events), null)).toMatchObject({ warning: null });
    expect(placedCaption(arg0(events), null).detail).toContain("from the snippet's spec");
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

  it("shows a shared link's options before its run (issue 31, item 1)", () => {
    for (const asked of [
      form,
      { ...form, meshShape: "4", axisNames: "d", axisType: "Auto" as const, arrayShape: "" },
      { ...form, meshShape: "2, 2, 2", axisNames: "a, b, c", spec: "P(('a', 'b'), 'c')" },
    ]) {
      const out = formOptions(base, asked, 8);
      if (typeof out === "string") throw new Error(out);
      expect(formFromOptions(out)).toEqual(asked);
    }
    // the snippet's own run: nothing to show over what the probe will place
    expect(formFromOptions(base)).toBeNull();
    expect(formFromOptions(snippetOptions({ ...base, spec: "P('x')" }))).toBeNull();
    // a spec alone, and a mesh written another way: the default mesh fields
    expect(formFromOptions({ ...base, spec: "P(None, 'y')" })).toEqual({
      ...formFrom(undefined),
      spec: "P(None, 'y')",
    });
    expect(
      formFromOptions({ ...base, mesh: "Mesh(jax.devices(), ('i',))", array_shape: "(16,)" }),
    ).toEqual({ ...formFrom(undefined), arrayShape: "16" });
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

describe("the tiles' layout: widths, heights and ranges", () => {
  it("gives each column its share of axis 1 and each tile its shard's ranges", () => {
    // sum_sharded_axis: f32[8, 16] with P('x', 'y') on a 2 x 4 mesh (x=2, y=4)
    const placed = arg0(load("sum_sharded_axis"));
    const tiles = arrayTiles(placed);
    if (tiles === null) throw new Error("no tiles");
    expect(tileColumns(tiles)).toBe(Array(4).fill("minmax(4.5rem, 4fr)").join(" "));
    // rows of 4 array rows: 1.6 + 4 * 0.25 rem
    expect(tileHeight(tiles, 0)).toBeCloseTo(2.6);
    for (const s of placed.shards) {
      const r = tiles.rows.findIndex((x) => x[0] === s.index[0]?.[0]);
      const c = tiles.cols.findIndex((x) => x[0] === s.index[1]?.[0]);
      expect(tileRange(tiles, r, c, 2)).toBe(rangeText(s.index));
    }
    expect(meshSizes(placed)).toBe("x=2 × y=4");
  });
  it("caps a tall row at 6rem and prints one range below rank 2", () => {
    const tiles = { rows: [[0, 100]], cols: [[0, 1]], tiles: [[{ blocks: [0], devices: ["cpu:0"] }]] };
    expect(tileHeight(tiles, 0)).toBe(6);
    expect(tileRange(tiles, 0, 0, 1)).toBe("[0:100]");
  });
});

describe("sharding annotations the compiled program does not keep", () => {
  it("says the constraint of constraint_not_kept at its line, in the words of the CLI", () => {
    // test_annotation_cases.py holds the same snippet (cases/SH01) to plain JAX's output sharding
    const model = shardingModel(load("constraint_not_kept"));
    const all = model.annotations?.annotations ?? [];
    expect(all).toHaveLength(1);
    const [a] = all;
    expect(a?.kept).toBe(false);
    expect(a?.source?.line).toBe(24);
    expect(a && annotationText(a)).toBe(
      "with_sharding_constraint asked for P('data', None) on f32[17,16]; the program holds it replicated (as f's output[0]): " +
        "axis 0 of size 17 does not divide among the 8 devices of mesh axis 'data': XLA replicates it instead of splitting it unevenly",
    );
  });

  it("has no annotation for an f that writes none", () => {
    expect(shardingModel(load("sum_sharded_axis")).annotations?.annotations).toEqual([]);
  });
});
