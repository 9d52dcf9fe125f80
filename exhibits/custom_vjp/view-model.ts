/**
 * The custom_vjp lab's view model: pure functions from the run's events (up to the stepper's
 * cursor) to what the view shows — f's jaxpr, then per custom function what it received and what
 * fwd saved (or, for custom_jvp, its rule's tangents against autodiff), then the per-argument
 * gradient table (custom rule vs autodiff without it vs finite differences) and the problems.
 */
import type {
  Event,
  EventOf,
  JaxprStaged,
  RunFailed,
} from "../../frontend/src/protocol";
import { eventsOf, lastOf } from "../../frontend/src/widgets/events";
import { formatScalar } from "../../frontend/src/widgets/format";

export type CallRecorded = EventOf<"custom_call_recorded">;
export type RuleChecked = EventOf<"custom_rule_checked">;
export type ArgumentCheck = RuleChecked["arguments"][number];
export type RuleProblem = RuleChecked["problems"][number];
export type Severity = RuleProblem["severity"];

/** Nested numbers as the protocol sends them (non-finite values as strings, null at kinks). */
export type Nested = number | string | null | Nested[];

export interface CustomSection {
  recorded: CallRecorded;
  /** absent until the stepper reaches the check */
  checked: RuleChecked | undefined;
}

export interface CustomModel {
  staged: JaxprStaged | undefined;
  sections: CustomSection[];
  failure: RunFailed | undefined;
}

/** Group the events: each `custom_call_recorded` with the `custom_rule_checked` after it. */
export function customModel(events: readonly Event[]): CustomModel {
  const sections: CustomSection[] = [];
  for (const e of events) {
    if (e.type === "custom_call_recorded")
      sections.push({ recorded: e, checked: undefined });
    else if (e.type === "custom_rule_checked") {
      const last = sections[sections.length - 1];
      if (
        last !== undefined &&
        last.checked === undefined &&
        last.recorded.name === e.name
      )
        last.checked = e;
    }
  }
  return {
    staged: lastOf(events, "jaxpr_staged"),
    sections,
    failure: eventsOf(events, "run_failed")[0],
  };
}

/** One number for a table cell: 4 significant digits; `nan`/`inf` as written; `—` for null. */
export function formatNumber(x: number | string | null | undefined): string {
  if (x === null || x === undefined) return "—";
  if (typeof x === "string") return x;
  if (Number.isInteger(x) && Math.abs(x) < 1e6) return String(x);
  const s = x.toPrecision(4);
  return s.includes("e") ? s : String(Number(s));
}

/** Nested numbers as a compact string, `[1, 2.5, nan]`, cut after `limit` numbers. With a
 * `dtype` (the gradients of a float32 leaf), each number as the shared rule prints a value of
 * that dtype (`formatScalar`: `0.331668`, as the residuals beside them); without one (the
 * float64 finite differences), :func:`formatNumber`'s 4 significant digits. */
export function formatNested(value: Nested | undefined, limit = 8, dtype?: string): string {
  if (value === undefined) return "—";
  let count = 0;
  let cut = false;
  const walk = (v: Nested): string => {
    if (Array.isArray(v)) {
      const parts: string[] = [];
      for (const x of v) {
        if (count >= limit) {
          cut = true;
          break;
        }
        parts.push(walk(x));
      }
      return `[${parts.join(", ")}${cut && parts.length < v.length ? ", …" : ""}]`;
    }
    count += 1;
    return dtype === undefined || v === null ? formatNumber(v) : formatScalar(v, dtype);
  };
  return walk(value);
}

/** The status of one argument row: the custom rule against the truth (finite differences where
 * they exist, else autodiff). */
export type RowStatus = "pass" | "differs" | "missing";

export function rowStatus(a: ArgumentCheck): RowStatus {
  const truth = a.agrees_fd ?? a.agrees_autodiff;
  if (truth === null || truth === undefined) return "missing";
  return truth ? "pass" : "differs";
}

/** A max-abs-diff cell: the number, or `unbounded` when one side is NaN/Inf only. */
export function diffText(
  diff: number | null | undefined,
  agrees: boolean | null | undefined,
): string {
  if (diff === null || diff === undefined)
    return agrees === false ? "NaN/Inf on one side" : "—";
  return formatNumber(diff);
}

/** The failed attempts' labels, `jax.grad(f)` / `jax.jit(jax.grad(f))`. */
function failedLabels(c: RuleChecked): string[] {
  return c.attempts
    .filter((t) => !t.ok)
    .map((t) => (t.mode === "eager" ? "jax.grad(f)" : "jax.jit(jax.grad(f))"));
}

/** How the verdict line is coloured: `agrees` (green) only when the values agree AND nothing
 * failed (no failed gradient attempt, no error among the problems); else `error` (red) or
 * `differs`. */
export type VerdictTone = "agrees" | "differs" | "error";

export function verdictTone(c: RuleChecked): VerdictTone {
  if (c.verdict !== "agrees") return c.verdict;
  const errors = c.problems.some((p) => p.severity === "error");
  return errors || failedLabels(c).length > 0 ? "error" : "agrees";
}

/** The verdict line of a check: the values' verdict, and what failed beside them. */
export function verdictText(c: RuleChecked): string {
  if (c.verdict === "agrees") {
    const failed = failedLabels(c);
    const errors = c.problems.filter((p) => p.severity === "error").length;
    const see =
      errors > 0 ? ` — see the ${errors === 1 ? "error" : `${errors} errors`} below.` : ".";
    if (failed.length > 0)
      return `${c.name}: with your rule, jax.grad(f) agrees with finite differences on every argument, but ${failed.join(" and ")} fails${see}`;
    if (errors > 0)
      return `${c.name}: your rule's values agree with finite differences on every argument, but the check found ${errors === 1 ? "an error" : `${errors} errors`} — see below.`;
    return `${c.name}: your rule agrees with finite differences on every argument.`;
  }
  if (c.verdict === "differs")
    return `${c.name}: your rule's gradient differs — see the table and the problems.`;
  return `${c.name}: jax.grad(f) with your rule failed — see the problems.`;
}

/** Problems sorted errors first, then warnings, then notes (the probe sends them sorted too). */
export function sortedProblems(
  problems: readonly RuleProblem[],
): RuleProblem[] {
  const rank: Record<Severity, number> = { error: 0, warning: 1, note: 2 };
  return [...problems].sort((a, b) => rank[a.severity] - rank[b.severity]);
}

/** The first line of JAX's error text (the rest is behind a disclosure). */
export function firstLine(text: string | null | undefined): string {
  if (!text) return "";
  const i = text.indexOf("\n");
  return i < 0 ? text : text.slice(0, i);
}

/** A failed gradient attempt as the view lists it: its label, class and first line of text. */
export interface FailedAttempt {
  mode: RuleChecked["attempts"][number]["mode"];
  label: string;
  error_class: string;
  firstLine: string;
}

/**
 * The failed attempts whose error text is shown under the badges (JAX's or the user's rule's own
 * message, first line): the jit attempt is left out when its text is the eager one's.
 */
export function failedAttempts(
  attempts: RuleChecked["attempts"],
): FailedAttempt[] {
  const out: FailedAttempt[] = [];
  const shown = new Set<string>();
  for (const t of attempts) {
    if (t.ok) continue;
    const text = t.message ?? "";
    if (shown.has(text)) continue;
    shown.add(text);
    out.push({
      mode: t.mode,
      label: t.mode === "eager" ? "jax.grad(f)" : "jax.jit(jax.grad(f))",
      error_class: t.error_class ?? "error",
      firstLine: firstLine(text) || "(no message)",
    });
  }
  return out;
}

/** What the kind of a custom function means, in one line. */
export function kindText(kind: CallRecorded["kind"]): string {
  return kind === "custom_vjp"
    ? "custom_vjp: fwd runs in place of the function and saves residuals; bwd turns an output cotangent into one cotangent per argument."
    : "custom_jvp: the jvp rule maps (primals, tangents) to (primal_out, tangent_out); JAX transposes it for reverse mode.";
}

/** A gradient attempt's badge: `jax.grad(f): ok`, or its error class and the line it points at. */
export function attemptText(t: RuleChecked["attempts"][number]): string {
  const label = t.mode === "eager" ? "jax.grad(f)" : "jax.jit(jax.grad(f))";
  if (t.ok) return `${label}: ok`;
  return `${label}: ${t.error_class}${t.source ? ` at line ${t.source.line}` : ""}`;
}
