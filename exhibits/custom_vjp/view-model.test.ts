import { describe, expect, it } from "vitest";
import type { Event } from "../../frontend/src/protocol";
import {
  attemptText,
  customModel,
  diffText,
  failedAttempts,
  firstLine,
  formatNested,
  formatNumber,
  rowStatus,
  sortedProblems,
  verdictText,
  verdictTone,
  type ArgumentCheck,
  type CallRecorded,
  type RuleChecked,
  type RuleProblem,
} from "./view-model";

const aval = {
  shape: [3],
  dtype: "float32",
  weak_type: false,
  short: "f32[3]",
};

function recorded(name: string): CallRecorded {
  return {
    type: "custom_call_recorded",
    seq: 1,
    run_id: "r",
    name,
    kind: "custom_vjp",
    rule_names: { fwd: "fwd", bwd: "bwd" },
    nondiff_argnums: [],
    call_args: [],
    residuals: [],
  } as unknown as CallRecorded;
}

function arg(over: Partial<ArgumentCheck>): ArgumentCheck {
  return {
    path: "x",
    aval,
    custom: [1, 2, 3],
    autodiff: [1, 2, 3],
    finite_difference: [1, 2, 3],
    max_abs_diff_autodiff: 0,
    max_abs_diff_fd: 0,
    agrees_autodiff: true,
    agrees_fd: true,
    tolerance: 1e-4,
    ...over,
  } as ArgumentCheck;
}

function checked(
  name: string,
  verdict: RuleChecked["verdict"],
  problems: RuleProblem[] = [],
): RuleChecked {
  return {
    type: "custom_rule_checked",
    seq: 2,
    run_id: "r",
    name,
    kind: "custom_vjp",
    nondiff_argnums: [],
    arguments: [arg({})],
    attempts: [],
    problems,
    verdict,
  } as unknown as RuleChecked;
}

function problem(
  severity: RuleProblem["severity"],
  kind: RuleProblem["kind"],
): RuleProblem {
  return { kind, severity, title: kind, explanation: "" } as RuleProblem;
}

describe("customModel", () => {
  it("pairs each recorded call with the check that follows it", () => {
    const events = [
      recorded("g"),
      checked("g", "agrees"),
      recorded("h"),
    ] as unknown as Event[];
    const m = customModel(events);
    expect(
      m.sections.map((s) => [s.recorded.name, s.checked?.verdict]),
    ).toEqual([
      ["g", "agrees"],
      ["h", undefined],
    ]);
    expect(m.staged).toBeUndefined();
  });

  it("shows the check only once the stepper reaches it", () => {
    const m = customModel([recorded("g")] as unknown as Event[]);
    expect(m.sections[0]?.checked).toBeUndefined();
  });
});

describe("formatting", () => {
  it("formats numbers with 4 significant digits and keeps nan/null visible", () => {
    expect(formatNumber(1.7551651000976562)).toBe("1.755");
    expect(formatNumber(6)).toBe("6");
    expect(formatNumber("nan")).toBe("nan");
    expect(formatNumber(null)).toBe("—");
    expect(formatNumber(1.234e-9)).toBe("1.234e-9");
  });

  it("formats nested values and cuts long ones", () => {
    expect(formatNested([[2, 2, 2], 6])).toBe("[[2, 2, 2], 6]");
    expect(formatNested([1, 2, 3, 4], 2)).toBe("[1, 2, …]");
    expect(formatNested(null)).toBe("—");
    // a float32 gradient as the shared rule prints it (the residuals' 6 digits), not 4 digits
    expect(formatNested([0.33166807889938354, 2, "nan"], 8, "float32")).toBe("[0.331668, 2.0, nan]");
    expect(formatNested([1.7551651000976562], 8, "float64")).toBe("[1.755165]");
  });

  it("diffText says when one side is NaN/Inf only", () => {
    expect(diffText(null, false)).toBe("NaN/Inf on one side");
    expect(diffText(null, null)).toBe("—");
    expect(diffText(3.5103302, false)).toBe("3.51");
  });

  it("firstLine keeps the first line of JAX text", () => {
    expect(firstLine("a\nb")).toBe("a");
    expect(firstLine(null)).toBe("");
  });
});

describe("status and verdict", () => {
  it("judges a row against finite differences first, autodiff when FD is missing", () => {
    expect(rowStatus(arg({}))).toBe("pass");
    expect(rowStatus(arg({ agrees_fd: false }))).toBe("differs");
    expect(rowStatus(arg({ agrees_autodiff: false, agrees_fd: true }))).toBe(
      "pass",
    );
    expect(rowStatus(arg({ agrees_fd: null, agrees_autodiff: false }))).toBe(
      "differs",
    );
    expect(rowStatus(arg({ agrees_fd: null, agrees_autodiff: null }))).toBe(
      "missing",
    );
  });

  it("verdict sentences name the function", () => {
    expect(verdictText(checked("g", "agrees"))).toContain(
      "g: your rule agrees",
    );
    expect(verdictText(checked("g", "error"))).toContain("failed");
  });

  it("is green only when nothing failed: values agree but jit(grad) fails (c20_int_arg_broken)", () => {
    const ok = checked("g", "agrees");
    expect(verdictTone(ok)).toBe("agrees");
    // As the probe reports c20_int_arg_broken: eager grad agrees with FD, jit(grad) raises, and
    // two problems are errors (jit_failed, int_not_nondiff).
    const jitFails = {
      ...checked("pad_scale", "agrees", [problem("error", "jit_failed"), problem("error", "int_not_nondiff")]),
      attempts: [
        { mode: "eager" as const, ok: true, error_class: null, message: null, source: null },
        { mode: "jit" as const, ok: false, error_class: "TypeError", message: "Shapes must be 1D", source: null },
      ],
    } as RuleChecked;
    expect(verdictTone(jitFails)).toBe("error");
    const text = verdictText(jitFails);
    expect(text).toBe(
      "pad_scale: with your rule, jax.grad(f) agrees with finite differences on every argument, but jax.jit(jax.grad(f)) fails — see the 2 errors below.",
    );
    // Errors without a failed attempt are not green either; warnings and notes are.
    expect(verdictTone(checked("g", "agrees", [problem("error", "jvp_rule")]))).toBe("error");
    expect(verdictText(checked("g", "agrees", [problem("error", "jvp_rule")]))).toContain("found an error");
    expect(verdictTone(checked("g", "agrees", [problem("warning", "int_not_nondiff")]))).toBe("agrees");
    expect(verdictTone(checked("g", "differs"))).toBe("differs");
    expect(verdictTone(checked("g", "error"))).toBe("error");
  });

  it("sorts problems errors first", () => {
    const ps = [
      problem("note", "autodiff_failed"),
      problem("error", "bwd_structure"),
      problem("warning", "differs_fd"),
    ];
    expect(sortedProblems(ps).map((p) => p.severity)).toEqual([
      "error",
      "warning",
      "note",
    ]);
  });
});

describe("failed attempts (a rule that raises: its text, not only its class)", () => {
  it("lists each failed attempt's class and first line, the jit one only when it differs", () => {
    const attempts = [
      { mode: "eager" as const, ok: false, error_class: "ValueError", message: "my bwd is broken\nmore", source: null },
      { mode: "jit" as const, ok: false, error_class: "ValueError", message: "my bwd is broken\nmore", source: null },
    ];
    expect(failedAttempts(attempts)).toEqual([
      { mode: "eager", label: "jax.grad(f)", error_class: "ValueError", firstLine: "my bwd is broken" },
    ]);
    const differ = [
      { ...attempts[0]!, ok: true, error_class: null, message: null },
      { ...attempts[1]!, message: "TracerIntegerConversionError text" },
    ];
    expect(failedAttempts(differ).map((t) => [t.label, t.firstLine])).toEqual([
      ["jax.jit(jax.grad(f))", "TracerIntegerConversionError text"],
    ]);
  });
});

describe("attempt badges", () => {
  it("names the call and says ok, or the error class and the line it points at", () => {
    const line = { line: 19, column: 4, end_line: 19, end_column: 20, function: "bwd", callers: null };
    expect(attemptText({ mode: "eager", ok: true, error_class: null, message: null, source: null })).toBe(
      "jax.grad(f): ok",
    );
    expect(
      attemptText({ mode: "jit", ok: false, error_class: "TypeError", message: "x", source: line }),
    ).toBe("jax.jit(jax.grad(f)): TypeError at line 19");
    expect(attemptText({ mode: "eager", ok: false, error_class: "ValueError", message: "x", source: null })).toBe(
      "jax.grad(f): ValueError",
    );
  });
});
