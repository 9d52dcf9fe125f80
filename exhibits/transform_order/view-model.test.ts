import { describe, expect, it } from "vitest";
import type { Event } from "../../frontend/src/protocol";
import {
  addChip,
  CHIPS,
  compact,
  keyMove,
  leavesLeftOut,
  MAX_CHIPS,
  moveChip,
  ms,
  nestBoxes,
  nodeText,
  orderModel,
  removeChip,
  shownStack,
  stackExpression,
  type ArgTrace,
  type Chip,
  type StackEvaluated,
  type TraceNode,
} from "./view-model";

const node = (
  depth: number,
  role: TraceNode["role"],
  tracer: string,
  trace: string | null,
  aval: string,
  batch_dim: number | null = null,
): TraceNode => ({
  depth,
  role,
  tracer,
  trace,
  aval,
  batch_dim,
  transform: null,
});

// The nest the probe records for x in vmap(grad(f)) on a (4, 3) batch (see test_transform_order.py).
const vmapGradX: ArgTrace = {
  path: "[0]",
  nodes: [
    node(0, "argument", "LinearizeTracer", "LinearizeTrace", "f32[3]"),
    node(1, "primal", "BatchTracer", "BatchTrace", "f32[3]", 0),
    node(2, "val", "ArrayImpl", null, "f32[4,3]"),
    node(1, "tangent", "DynamicJaxprTracer", "DynamicJaxprTrace", "f32[3]"),
  ],
};

const evaluated = (over: Partial<StackEvaluated>): StackEvaluated =>
  ({
    type: "transform_stack_evaluated",
    seq: 0,
    run_id: "r",
    stack: ["vmap", "grad"],
    label: "your stack",
    group: "user",
    code: "vmap(grad(f))(*args)",
    in_axes: null,
    ok: true,
    jaxpr: null,
    result: [],
    error_class: null,
    message: null,
    source: null,
    explanation: null,
    fix: null,
    traces: [],
    eqn_count: null,
    flops: null,
    time_ms: null,
    check: null,
    check_ok: null,
    ...over,
  }) as StackEvaluated;

describe("chip stack edits", () => {
  const s: Chip[] = ["jit", "vmap", "grad"];

  it("moves a chip by drag (from, to) without touching the input", () => {
    expect(moveChip(s, 2, 0)).toEqual(["grad", "jit", "vmap"]);
    expect(moveChip(s, 0, 2)).toEqual(["vmap", "grad", "jit"]);
    expect(moveChip(s, 1, 99)).toEqual(["jit", "grad", "vmap"]);
    expect(moveChip(s, 5, 0)).toEqual(s);
    expect(s).toEqual(["jit", "vmap", "grad"]);
  });

  it("moves the focused chip with Alt+Arrow and reports where it went", () => {
    expect(keyMove(s, 1, "ArrowRight", true)).toEqual({
      stack: ["jit", "grad", "vmap"],
      index: 2,
    });
    expect(keyMove(s, 1, "ArrowLeft", true)).toEqual({
      stack: ["vmap", "jit", "grad"],
      index: 0,
    });
    expect(keyMove(s, 2, "ArrowUp", true)).toEqual({
      stack: ["jit", "grad", "vmap"],
      index: 1,
    });
    expect(keyMove(s, 2, "Home", true)).toEqual({
      stack: ["grad", "jit", "vmap"],
      index: 0,
    });
    expect(keyMove(s, 0, "End", true)).toEqual({
      stack: ["vmap", "grad", "jit"],
      index: 2,
    });
  });

  it("ignores arrows without Alt and moves past the ends", () => {
    expect(keyMove(s, 1, "ArrowRight", false)).toBeNull();
    expect(keyMove(s, 0, "ArrowLeft", true)).toBeNull();
    expect(keyMove(s, 2, "ArrowRight", true)).toBeNull();
    expect(keyMove(s, 1, "x", true)).toBeNull();
  });

  it("adds innermost, up to the limit, and removes by position", () => {
    expect(addChip(["vmap"], "grad")).toEqual(["vmap", "grad"]);
    const full = Array.from({ length: MAX_CHIPS }, () => "jit" as Chip);
    expect(addChip(full, "grad")).toHaveLength(MAX_CHIPS);
    expect(removeChip(s, 1)).toEqual(["jit", "grad"]);
    expect(CHIPS).toContain("value_and_grad");
  });

  it("writes the stack as the nested call, in_axes on vmap", () => {
    expect(stackExpression(["vmap", "grad"])).toBe("vmap(grad(f))");
    expect(stackExpression(["vmap", "grad"], "loss", "(None, 0, 0)")).toBe(
      "vmap(grad(loss), in_axes=(None, 0, 0))",
    );
    expect(stackExpression([], "f")).toBe("f");
  });
});

describe("the run", () => {
  it("takes the user stack first and groups the comparisons up to the cursor", () => {
    const events = [
      evaluated({}),
      evaluated({ group: "per_example", code: "vmap(grad(u))(xs)" }),
      evaluated({ group: "per_example", code: "grad(vmap(u))(xs)", ok: false }),
      evaluated({ group: "jacobian", code: "jit(jacfwd(tall))(x)" }),
    ] as Event[];
    const m = orderModel(events);
    expect(m.user?.code).toBe("vmap(grad(f))(*args)");
    expect(m.groups.map((g) => [g.id, g.items.length])).toEqual([
      ["per_example", 2],
      ["jacobian", 1],
    ]);
    expect(orderModel(events.slice(0, 1)).groups).toEqual([]);
  });

  it("shows the options stack, else the evaluated one, dropping pseudo-chips", () => {
    const user = evaluated({ stack: ["grad", "sum", "vmap"] });
    expect(shownStack(["jit"], user)).toEqual(["jit"]);
    expect(shownStack(undefined, user)).toEqual(["grad", "vmap"]);
    // Before a run: the default stack the run will evaluate, not just f.
    expect(shownStack(null, undefined)).toEqual(["vmap", "grad"]);
    expect(shownStack([], undefined)).toEqual([]);
  });
});

describe("the nest diagram", () => {
  it("puts the outermost transform outside and what f receives innermost", () => {
    const boxes = nestBoxes(vmapGradX);
    expect(boxes.map((b) => b.node.tracer)).toEqual([
      "ArrayImpl",
      "BatchTracer",
      "LinearizeTracer",
    ]);
    expect(boxes[0]?.node.aval).toBe("f32[4,3]");
    expect(boxes[2]?.tangent.map((t) => t.tracer)).toEqual([
      "DynamicJaxprTracer",
    ]);
    expect(boxes[1]?.tangent).toEqual([]);
  });

  it("keeps a batched tangent (jacfwd) with what it wraps", () => {
    const jacfwd: ArgTrace = {
      path: "[0]",
      nodes: [
        node(0, "argument", "JVPTracer", "JVPTrace", "f32[3]"),
        node(1, "primal", "ArrayImpl", null, "f32[3]"),
        node(1, "tangent", "BatchTracer", "BatchTrace", "f32[3]", 0),
        node(2, "val", "ArrayImpl", null, "f32[3,3]"),
      ],
    };
    const boxes = nestBoxes(jacfwd);
    expect(boxes.map((b) => b.node.tracer)).toEqual(["ArrayImpl", "JVPTracer"]);
    expect(boxes[1]?.tangent.map((t) => t.aval)).toEqual([
      "f32[3]",
      "f32[3,3]",
    ]);
  });

  it("reverses when the order of vmap and grad is swapped", () => {
    const gradVmap: ArgTrace = {
      path: "[0]",
      nodes: [
        node(0, "argument", "BatchTracer", "BatchTrace", "f32[]", 0),
        node(1, "val", "LinearizeTracer", "LinearizeTrace", "f32[4]"),
        node(2, "primal", "ArrayImpl", null, "f32[4]"),
        node(2, "tangent", "DynamicJaxprTracer", "DynamicJaxprTrace", "f32[4]"),
      ],
    };
    expect(nestBoxes(gradVmap).map((b) => b.node.trace)).toEqual([
      null,
      "LinearizeTrace",
      "BatchTrace",
    ]);
  });
});

describe("argument leaves past the drawn ones", () => {
  // A model of 13 layers {w, b} and a batch x (test_transform_order.py's
  // test_argument_leaves_past_the_drawn_ones_are_counted): 27 leaves, the probe draws 8 and
  // counts the rest; the composed jaxpr takes every leaf as an invar.
  const aval = { shape: [3], dtype: "float32", weak_type: false, short: "f32[3]" };
  const invars = Array.from({ length: 27 }, (_, i) => ({ aval, literal: false, name: `v${i}` }));
  const drawn = Array.from({ length: 8 }, (_, i) => ({ ...vmapGradX, path: `p['layer${i >> 1}']` }));
  const model = evaluated({
    traces: drawn,
    traces_left_out: 19,
    jaxpr: { arg_names: null, constvars: [], effects: [], eqns: [], invars, outvars: [], text: "", total_eqns: 0 },
  });

  it("says how many more leaves there are: the event's count, its drawn list and its invars agree", () => {
    const more = leavesLeftOut(model);
    expect(more).toBe((model.jaxpr?.invars.length ?? 0) - model.traces.length);
    expect(more + model.traces.length).toBe(27);
  });

  it("says nothing when every leaf is drawn (the field is off the wire)", () => {
    expect(leavesLeftOut(evaluated({ traces: [vmapGradX] }))).toBe(0);
  });
});

describe("formatting", () => {
  it("compacts flops and times", () => {
    expect(compact(481800)).toBe("481.8k");
    expect(compact(8068)).toBe("8.1k");
    expect(compact(2.5e6)).toBe("2.50M");
    expect(compact(null)).toBe("—");
    expect(ms(0.0252)).toBe("25 µs");
    expect(ms(3.14159)).toBe("3.14 ms");
  });

  it("writes a tracer as its class and aval, with vmap's batch dim", () => {
    const [argument, primal, val] = vmapGradX.nodes;
    expect(nodeText(argument!)).toBe("LinearizeTracer f32[3]");
    expect(nodeText(primal!)).toBe("BatchTracer f32[3], batch dim 0");
    expect(nodeText(val!)).toBe("ArrayImpl f32[4,3]");
    expect(nodeText(node(1, "val", "BatchTracer", "BatchTrace", "f32[]", 2))).toBe(
      "BatchTracer f32[], batch dim 2",
    );
  });
});
