import { describe, expect, it } from "vitest";
import type { Event } from "../../frontend/src/protocol";
import {
  barHeight,
  defaultStep,
  formatMs,
  timersText,
  huntModel,
  kindLabel,
  statusOf,
  stepLines,
  stepsShown,
  stoppedText,
  type TrainingStep,
} from "./view-model";

function step(
  i: number,
  ms: number,
  kind: string | null,
  line: number | null = 28,
  defined: number | null = 17,
): TrainingStep {
  return {
    type: "training_step_observed",
    seq: i,
    run_id: "r",
    step: i,
    compiled: kind !== null,
    duration_ms: ms,
    cause: kind === null ? null : `cause ${kind}`,
    source:
      line === null
        ? null
        : { line, column: 17, end_line: line, end_column: 30, function: "f", callers: null },
    fix: null,
    kind,
    function: kind === null ? null : "step",
    defined_line: kind === null ? null : defined,
    compared_step: null,
    entries: [],
    compiles: [],
    explanation: "",
    log: [],
    jaxpr: null,
    watched: "calls of `step`",
  };
}

// The ragged_batch preset as the probe reports it: steps 0 and 2 compile, 2 for a new shape.
const RAGGED: Event[] = [
  step(0, 216, "first"),
  step(1, 0.6, null),
  step(2, 453, "shape"),
  step(3, 0.1, null),
  { type: "run_finished", seq: 9, run_id: "r", duration_ms: 900 },
];

describe("recompile hunt view model", () => {
  it("counts compiled steps and recompiles", () => {
    const m = huntModel(RAGGED);
    expect(m.steps.map((s) => s.step)).toEqual([0, 1, 2, 3]);
    expect(m.compiled).toBe(2);
    expect(m.recompiles).toBe(1);
    expect(m.maxMs).toBe(453);
    expect(m.watched).toBe("calls of `step`");
    expect(m.steps.map(statusOf)).toEqual(["first", "hit", "recompile", "hit"]);
  });

  it("scales bars logarithmically so cache hits stay visible", () => {
    expect(barHeight(453, 453)).toBe(1);
    expect(barHeight(0, 453)).toBe(0);
    const hit = barHeight(0.6, 453);
    expect(hit).toBeGreaterThan(0.05);
    expect(hit).toBeLessThan(barHeight(216, 453));
    expect(barHeight(1, 0)).toBe(0);
  });

  it("picks the first recompile for a whole run and the latest step while stepping", () => {
    const m = huntModel(RAGGED);
    expect(defaultStep(m, false)).toBe(2);
    expect(defaultStep(huntModel(RAGGED.slice(0, 2)), true)).toBe(1);
    expect(defaultStep(huntModel(RAGGED.slice(0, 2)), false)).toBe(0);
    expect(defaultStep(huntModel([]), false)).toBeUndefined();
  });

  it("points at the call site, then the definition", () => {
    expect(stepLines(step(2, 1, "shape", 28, 17))).toEqual([28, 17]);
    expect(stepLines(step(2, 1, "new_function", 9, 9))).toEqual([9]);
    expect(stepLines(step(1, 1, null, null))).toEqual([]);
  });

  it("labels kinds and formats times", () => {
    expect(kindLabel("weak_type")).toBe("weak type flipped");
    expect(kindLabel(null)).toBe("cache hit");
    expect(kindLabel("something_new")).toBe("something_new");
    expect(formatMs(0.042)).toBe("0.04 ms");
    expect(formatMs(3.21)).toBe("3.2 ms");
    expect(formatMs(216.4)).toBe("216 ms");
    expect(formatMs(1234)).toBe("1.23 s");
    expect(timersText({ compile: 228.2, trace: 3.14 })).toBe(
      "trace 3.1 ms · compile 228 ms",
    );
    expect(timersText(undefined)).toBe("");
  });
});

describe("training_stopped", () => {
  it("is absent for a loop that finished, carried and explained when the budget stopped it", () => {
    const steps: Event[] = [step(0, 300, "first"), step(1, 200, "new_function")];
    expect(huntModel(steps).stopped).toBeUndefined();
    const stop: Event = {
      type: "training_stopped",
      seq: 2,
      run_id: "r",
      steps_run: 2,
      budget_s: 12,
      elapsed_s: 12.04,
      max_steps: null,
      requested_n: null,
    };
    const model = huntModel([...steps, stop]);
    expect(model.steps).toHaveLength(2);
    expect(model.stopped?.steps_run).toBe(2);
    const text = stoppedText(stop);
    expect(text).toContain("Stopped after 2 steps");
    expect(text).toContain("12 s time budget (12.0 s)");
  });

  /** A training_stopped at the 200-step cap, f having been called with ``requested_n``. */
  function capStop(requestedN: number) {
    return {
      type: "training_stopped" as const,
      seq: 200,
      run_id: "r",
      steps_run: 200,
      budget_s: 12,
      elapsed_s: 0.4,
      max_steps: 200,
      requested_n: requestedN,
    };
  }

  it("says when the step cap stopped the loop, not the time budget", () => {
    const stop: Event = capStop(50);
    const text = stoppedText(stop);
    // n = 50 within the cap and the loop ran on: it does not use n
    expect(text).toContain("Stopped after 200 steps: the hunt watches at most 200 steps");
    expect(text).toContain("f was called with n = 50: does the loop use n?");
    expect(text).not.toContain("budget");
  });

  it("names the requested n when the cap stopped it (args = (10**9,)), no misleading hint", () => {
    const stop = capStop(1_000_000_000);
    const text = stoppedText(stop);
    expect(text).toContain("f was called with n = 1000000000");
    expect(text).toContain("the step cap stopped it");
    expect(text).not.toContain("does the loop use n");
    const steps: Event[] = [step(0, 300, "first"), step(1, 2, null)];
    const model = huntModel([...steps, stop]);
    // the box shows what was asked, not the 2 (or 200) steps that ran; the page's own choice wins
    expect(stepsShown(undefined, model)).toBe(1_000_000_000);
    expect(stepsShown(30, model)).toBe(30);
    expect(stepsShown(undefined, huntModel(steps))).toBe(2);
  });
});
