import { describe, expect, it } from "vitest";
import type { Event } from "../../frontend/src/protocol";
import { goldenLoader } from "../../frontend/src/test/fixtures";
import {
  highlightedJvpEqns,
  jvpEqnsOf,
  jvpModel,
  originOf,
  ruleLocation,
  stepSentence,
  valueRows,
  valueText,
  type JvpJaxprStaged,
  type JvpRuleApplied,
  type ValueView,
} from "./view-model";

// The shape of the events the probe sends for f(x) = sin(x) * x at 1.0 (values as previews).
const src = {
  line: 7,
  column: null,
  end_line: null,
  end_column: null,
  function: "f",
  callers: null,
};
const aval = { shape: [], dtype: "float32", weak_type: false, short: "f32[]" };
const v = (
  role: ValueView["role"],
  preview: string | null,
  variable: string | null,
  zero = false,
): ValueView => ({
  role,
  aval,
  preview,
  var: variable,
  zero,
  nonfinite: false,
});

const eqn = (index: number, primitive: string, text: string) => ({
  index,
  primitive,
  params: {},
  invars: [],
  outvars: [],
  effects: [],
  source: src,
  text,
  inner_jaxprs: [],
});

const primal: Event = {
  type: "jaxpr_staged",
  seq: 1,
  run_id: "r",
  fun_name: "f",
  jaxpr: {
    text: "{ lambda ; a:f32[]. let\n    b:f32[] = sin a\n    c:f32[] = mul b a\n  in (c,) }",
    constvars: [],
    invars: [],
    outvars: [],
    eqns: [
      eqn(0, "sin", "b:f32[] = sin a"),
      eqn(1, "mul", "c:f32[] = mul b a"),
    ],
    effects: [],
    arg_names: null,
    total_eqns: null,
  },
};

const step0: JvpRuleApplied = {
  type: "jvp_rule_applied",
  seq: 2,
  run_id: "r",
  index: 0,
  primitive: "sin",
  source: src,
  rule: {
    table: "primitive_jvps",
    name: "standard_jvp(<lambda>)",
    file: "jax/_src/lax/lax.py",
    line: 4571,
  },
  mechanism: "rule",
  note: null,
  primals_in: [v("primal", "1.0", "a")],
  tangents_in: [v("tangent", "1.0", "b")],
  tangent_eqns: ["c:f32[] = sin a", "d:f32[] = cos a", "e:f32[] = mul b d"],
  jvp_eqn_indices: [0, 1, 2],
  primals_out: [v("primal", "0.84147096", "b")],
  tangents_out: [v("tangent", "0.5403023", "e")],
};
const step1: JvpRuleApplied = {
  ...step0,
  seq: 3,
  index: 1,
  primitive: "mul",
  primals_in: [v("primal", "0.84147096", "b"), v("primal", "1.0", "a")],
  tangents_in: [v("tangent", "0.5403023", "e"), v("tangent", null, null, true)],
  tangent_eqns: ["f:f32[] = mul c a", "g:f32[] = mul e a"],
  jvp_eqn_indices: [3, 4],
  primals_out: [v("primal", "0.84147096", "c")],
  tangents_out: [v("tangent", "1.3817732", "i")],
};
const staged: JvpJaxprStaged = {
  type: "jvp_jaxpr_staged",
  seq: 4,
  run_id: "r",
  jaxpr: {
    ...(primal.type === "jaxpr_staged" ? primal.jaxpr : ({} as never)),
    eqns: [],
  },
  expression: "jax.make_jaxpr(...)",
  eqn_origin: [0, 0, 0, 1, 1, null],
  attributed: true,
  tangents_in: [],
  primals_out: [],
  tangents_out: [],
  jax_primals_out: [],
  jax_tangents_out: [],
  matches_jax_jvp: true,
  max_abs_diff: 0,
};
const all: Event[] = [primal, step0, step1, staged];

describe("jvp view model", () => {
  it("walks the steps as the cursor moves, and shows the whole JVP jaxpr from all events", () => {
    expect(jvpModel(all.slice(0, 1), all).current).toBeUndefined();
    expect(jvpModel(all.slice(0, 2), all).current?.primitive).toBe("sin");
    const m = jvpModel(all.slice(0, 3), all);
    expect(m.current?.primitive).toBe("mul");
    expect(m.steps.length).toBe(2);
    expect(m.staged).toBeDefined();
    expect(m.stagedReached).toBe(false);
    expect(jvpModel(all, all).stagedReached).toBe(true);
  });

  it("shows a picked step only once the cursor reached it", () => {
    expect(jvpModel(all, all, 0).current?.primitive).toBe("sin");
    expect(jvpModel(all.slice(0, 1), all, 1).current).toBeUndefined();
  });

  it("attributes JVP eqns to primal eqns both ways", () => {
    expect(jvpEqnsOf(staged, 0)).toEqual([0, 1, 2]);
    expect(jvpEqnsOf(staged, 1)).toEqual([3, 4]);
    expect(originOf(staged, 4)).toBe(1);
    expect(originOf(staged, 5)).toBeNull();
    expect([...highlightedJvpEqns(staged, step1)]).toEqual([3, 4]);
    expect([
      ...highlightedJvpEqns(staged, { ...step1, jvp_eqn_indices: [] }),
    ]).toEqual([3, 4]);
    expect(highlightedJvpEqns(undefined, step1).size).toBe(0);
  });

  it("pairs primals with tangents and marks symbolic zeros", () => {
    const rows = valueRows(step1);
    expect(rows.map((r) => [r.side, r.position])).toEqual([
      ["in", 0],
      ["in", 1],
      ["out", 0],
    ]);
    expect(valueText(rows[1]?.tangent)).toBe("symbolic zero (ad.Zero)");
    expect(valueText(rows[0]?.tangent)).toBe("0.5403023");
    expect(valueText({ ...v("primal", null, null) })).toContain("not fetched");
  });

  it("names the rule and what JAX did", () => {
    expect(ruleLocation(step0.rule)).toBe("jax/_src/lax/lax.py:4571");
    expect(ruleLocation(null)).toBeNull();
    expect(stepSentence(step0)).toContain("ad.primitive_jvps");
    expect(stepSentence(step0)).toContain("3 eqns");
    expect(
      stepSentence({
        ...step0,
        mechanism: "zero_tangents",
        tangent_eqns: ["x"],
      }),
    ).toContain("1 eqn emitted");
  });
});

describe("the step-by-step capture capped (jvp_steps.MAX_STEPS): steps_left_out", () => {
  // The golden mlp_loss stream as a capped run sends it: the steps after the first 4 are not
  // sent and the whole JVP jaxpr counts them in steps_left_out (backend: test_jvp.py checks the
  // field against jax.make_jaxpr on a program longer than the cap).
  const golden = goldenLoader(import.meta.url)("mlp_loss");
  const all = golden.filter((e) => e.type === "jvp_rule_applied").length;
  const cap = 4;
  let kept = 0;
  const capped: Event[] = golden.flatMap((e): Event[] => {
    if (e.type === "jvp_rule_applied") return kept++ < cap ? [e] : [];
    if (e.type === "jvp_jaxpr_staged") return [{ ...e, steps_left_out: all - cap }];
    return [e];
  });

  it("counts the eqns past the cap; a click on one shows no step, one before it its step", () => {
    const model = jvpModel(capped, capped);
    expect(all).toBeGreaterThan(cap);
    expect(model.allSteps).toHaveLength(cap);
    expect(model.stepsLeftOut).toBe(all - cap);
    expect(model.allSteps.length + model.stepsLeftOut).toBe(model.primal?.jaxpr.eqns.length);
    expect(jvpModel(capped, capped, cap - 1).current?.index).toBe(cap - 1);
    const past = jvpModel(capped, capped, cap + 2);
    expect(past.pickedWithoutStep).toBe(cap + 2);
    expect(past.current).toBeUndefined();
  });

  it("a click past the cap marks the JVP eqns JAX attributes to that primal eqn", () => {
    const past = jvpModel(capped, capped, cap + 2);
    const marked = [...highlightedJvpEqns(past.staged, past.current, past.pickedWithoutStep)];
    expect(marked.length).toBeGreaterThan(0);
    expect(marked).toEqual(jvpEqnsOf(past.staged, cap + 2));
    // no click past the cap and no step: nothing marked
    expect(highlightedJvpEqns(past.staged, undefined).size).toBe(0);
  });

  it("the whole golden stream has nothing left out", () => {
    const model = jvpModel(golden, golden, all - 1);
    expect(model.stepsLeftOut).toBe(0);
    expect(model.pickedWithoutStep).toBeNull();
    expect(model.current?.index).toBe(all - 1);
  });
});
