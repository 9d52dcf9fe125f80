import { describe, expect, it } from "vitest";
import type { Event } from "../../frontend/src/protocol";
import {
  axesOptions,
  bdimText,
  highlightedBatchedEqns,
  isMove,
  originOf,
  ruleLocation,
  shapeBoxes,
  shownAxes,
  stepSentence,
  valueRows,
  vmapModel,
} from "./view-model";
import { fixtureLoader } from "../../frontend/src/test/fixtures";

// Captured from the real probe by fixtures/capture.py (never written by hand).
const load = fixtureLoader(import.meta.url);

describe("broadcast_columns: x mapped on axis 1, y on axis 0, bias not mapped", () => {
  const events = load("broadcast_columns");
  const model = vmapModel(events, events);

  it("reads the inputs, the per-example jaxpr, the steps and the batched jaxpr", () => {
    expect(model.inputs?.axis_size).toBe(4);
    expect(model.inputs?.inputs.map((i) => i.bdim)).toEqual([1, 0, null]);
    expect(model.example?.jaxpr.invars.map((v) => v.aval.short)).toEqual([
      "f32[3]",
      "f32[3]",
      "f32[3]",
    ]);
    expect(model.allSteps.map((s) => s.primitive)).toEqual(["mul", "gt", "jit", "reduce_sum"]);
    expect(model.current?.primitive).toBe("reduce_sum");
    expect(model.stagedReached).toBe(true);
    expect(model.failure).toBeUndefined();
  });

  it("walks the steps with the stepper cursor and keeps a picked step", () => {
    const upToMul = events.slice(0, events.findIndex((e) => e.type === "batch_rule_applied") + 1);
    const m = vmapModel(upToMul, events);
    expect(m.steps).toHaveLength(1);
    expect(m.current?.primitive).toBe("mul");
    expect(m.stagedReached).toBe(false);
    expect(m.staged).toBeDefined(); // shown ahead of the cursor
    expect(vmapModel(events, events, 1).current?.primitive).toBe("gt");
  });

  it("colours the batch axis in the shape pictures", () => {
    const mul = model.allSteps[0]!;
    const rows = valueRows(mul);
    expect(rows.map((r) => [r.side, r.var, r.bdim])).toEqual([
      ["in", "a", 1],
      ["in", "b", 0],
      ["out", "d", 0],
    ]);
    expect(shapeBoxes(rows[0]!.aval!, rows[0]!.bdim)).toEqual([
      { size: 3, batch: false },
      { size: 4, batch: true },
    ]);
    expect(shapeBoxes(rows[2]!.aval!, rows[2]!.bdim)).toEqual([
      { size: 4, batch: true },
      { size: 3, batch: false },
    ]);
    const gt = model.allSteps[1]!;
    expect(valueRows(gt)[1]).toMatchObject({ var: null, bdim: null });
    expect(bdimText(null)).toBe("not mapped");
    expect(bdimText(1)).toBe("axis 1");
  });

  it("marks the transpose the mul rule added and links batched eqns back to steps", () => {
    const mul = model.allSteps[0]!;
    expect(mul.moves).toHaveLength(1);
    expect(isMove(mul, mul.emitted![0]!)).toBe(true);
    expect(isMove(mul, mul.emitted![1]!)).toBe(false);
    expect(stepSentence(mul)).toBe(
      "mul: batch dims in (1, 0) → out (0). The rule lined the batch axes up first: 1 axis move/broadcast before the batched mul.",
    );
    expect([...highlightedBatchedEqns(mul)]).toEqual([0, 1]);
    expect(originOf(model.allSteps, 1)).toBe(0);
    const last = model.staged!.jaxpr.eqns.length - 1; // vmap's own broadcast of the bias output
    expect(originOf(model.allSteps, last)).toBeNull();
    expect(model.staged?.output_moves).toHaveLength(1);
    expect(ruleLocation(mul.rule)).toMatch(/^jax\/_src\/lax\/lax\.py:\d+$/);
  });
});

describe("per_example_loss (default)", () => {
  const events = load("per_example_loss");
  const model = vmapModel(events, events);

  it("maps the data, not the parameters", () => {
    expect(model.inputs?.in_axes).toBe("(None, 0, 0)");
    expect(model.inputs?.inputs.map((i) => [i.path, i.bdim])).toEqual([
      ["args[0]['b']", null],
      ["args[0]['w']", null],
      ["args[1]", 0],
      ["args[2]", 0],
    ]);
    const dot = model.allSteps[0]!;
    expect(stepSentence(dot)).toBe(
      "dot_general: batch dims in (0, None) → out (0). The batched dot_general handles the batch axis directly.",
    );
    expect(model.staged?.matches_jax_vmap).toBe(true);
    expect(model.staged?.outputs[0]?.shape).toEqual([8]);
  });
});

describe("axesOptions", () => {
  it("keeps the other options and maps empty text to the snippet's axes", () => {
    const base = { calls: [], known: null, in_axes: "0", out_axes: null, stack: null };
    expect(axesOptions(base, " (None, 0) ", "")).toEqual({ ...base, in_axes: "(None, 0)", out_axes: null });
  });
});

describe("in_axes_mismatch: jax.vmap rejects the snippet's in_axes before mapping", () => {
  // What the probe sends (exhibits/vmap/test_vmap.py checks it): the axes tried, nothing mapped.
  const tried = {
    type: "vmap_inputs_mapped",
    seq: 3,
    run_id: "r",
    in_axes: "(0, 0, None)",
    out_axes: "0",
    axis_size: null,
    inputs: [],
  } satisfies Event;
  const failed = {
    type: "run_failed",
    seq: 4,
    run_id: "r",
    kind: "user_exception",
    error_class: "ValueError",
    message: "vmap in_axes must be an int, None, or a tuple of entries corresponding to the positional arguments passed to the function, but got len(in_axes)=3, len(args)=2",
    source: { line: 12, column: null, end_line: null, end_column: null, function: "<module>", callers: null },
    traceback: [],
    explanation: null,
    fix: null,
    stage: "trace",
    during: "while jax.vmap mapped the arguments (in_axes)",
  } satisfies Event;
  const events = [tried, failed];
  const model = vmapModel(events, events);

  it("keeps the axes the run tried in the boxes", () => {
    expect(model.inputs?.axis_size).toBeNull();
    expect(shownAxes({}, model.inputs)).toEqual({ inAxes: "(0, 0, None)", outAxes: "0" });
    // the run's option and the user's unsent edit come first
    expect(shownAxes({ in_axes: "(1, 0, 0)" }, model.inputs).inAxes).toBe("(1, 0, 0)");
    expect(shownAxes({}, model.inputs, { in_axes: null, out_axes: "1" }).outAxes).toBe("1");
    expect(shownAxes({}, undefined)).toEqual({ inAxes: "", outAxes: "" });
    expect(model.failure?.source?.line).toBe(12);
  });
});

describe("no_batching_rule: sin and mul batched, then twice (no batching rule) fails", () => {
  // Captured from the real probe, the run_failed event from the sandbox's classify.
  const events = load("no_batching_rule");

  it("at the end of the run, the stepper stands on the failing eqn", () => {
    const model = vmapModel(events, events);
    expect(model.steps.map((s) => [s.index, s.primitive, s.mechanism])).toEqual([
      [0, "sin", "rule"],
      [1, "mul", "rule"],
      [2, "twice", "failed"],
    ]);
    expect(model.current?.index).toBe(2);
    expect(model.failedStep?.index).toBe(2);
    expect(model.example?.jaxpr.eqns[2]?.text).toContain("twice");
    expect(model.example?.jaxpr.eqns).toHaveLength(4);
    expect(highlightedBatchedEqns(model.current).size).toBe(0);
    expect(model.failure?.error_class).toBe("NotImplementedError");
    expect(stepSentence(model.current!)).toBe(
      "twice: batch dims in (0) → JAX raised here, so vmap failed at this eqn (the error panel has JAX's message).",
    );
    expect(valueRows(model.current!).map((r) => r.side)).toEqual(["in"]);
  });

  it("before the failure, the sin step is the current one and nothing failed yet", () => {
    const before = events.slice(0, events.findIndex((e) => e.type === "batch_rule_applied") + 1);
    const model = vmapModel(before, events);
    expect(model.current?.primitive).toBe("sin");
    expect(model.current?.out_bdims).toEqual([0]);
    expect(model.failedStep).toBeUndefined();
  });
});

describe("broadcast_columns with the step-by-step capture capped at 2 steps (its 4 eqns)", () => {
  // Captured with batching_steps.MAX_STEPS = 2 (fixtures/capture.py): steps_left_out = 4 - 2.
  const events = load("broadcast_columns_capped");
  const whole = load("broadcast_columns");

  it("counts the eqns past the cap and shows no step for a click on one of them", () => {
    const all = vmapModel(whole, whole);
    const model = vmapModel(events, events);
    expect(model.allSteps).toHaveLength(2);
    expect(model.stepsLeftOut).toBe(all.allSteps.length - 2);
    expect(model.example?.jaxpr.eqns).toHaveLength(all.allSteps.length);
    expect(vmapModel(events, events, 1).current?.index).toBe(1);
    expect(vmapModel(events, events, 1).pickedWithoutStep).toBeNull();
    const past = vmapModel(events, events, 3);
    expect(past.pickedWithoutStep).toBe(3);
    expect(past.current).toBeUndefined();
  });

  it("a whole run has nothing left out and never a click without a step", () => {
    const model = vmapModel(whole, whole, 3);
    expect(model.stepsLeftOut).toBe(0);
    expect(model.pickedWithoutStep).toBeNull();
    expect(model.current?.index).toBe(3);
  });
});
