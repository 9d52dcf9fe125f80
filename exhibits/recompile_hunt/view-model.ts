/**
 * The recompile hunt's view model: one `training_step_observed` per step (the stepper walks the
 * steps), summarised for the per-step strip (compiled steps marked, time bars on a log scale)
 * and the cause card (cause, the user's line, the fix, the key diff).
 */
import type { Event, EventOf } from "../../frontend/src/protocol";
import { eventsOf } from "../../frontend/src/widgets/events";

export type TrainingStep = EventOf<"training_step_observed">;
export type TrainingStopped = EventOf<"training_stopped">;

export type StepStatus = "hit" | "first" | "recompile";

export interface HuntModel {
  steps: TrainingStep[];
  compiled: number;
  recompiles: number;
  /** the slowest step (ms), the top of the bars' scale */
  maxMs: number;
  /** what counts as a step (`calls of \`step\``, or top-level calls of jitted functions) */
  watched: string;
  /** set when the loop was stopped (its time budget or its step cap) before it finished */
  stopped: TrainingStopped | undefined;
}

export function huntModel(events: readonly Event[]): HuntModel {
  const steps = eventsOf(events, "training_step_observed");
  return {
    steps,
    compiled: steps.filter((s) => s.compiled).length,
    recompiles: steps.filter((s) => statusOf(s) === "recompile").length,
    maxMs: steps.reduce((m, s) => Math.max(m, s.duration_ms), 0),
    watched: steps[0]?.watched ?? "",
    stopped: eventsOf(events, "training_stopped")[0],
  };
}

/** "Stopped after 37 steps: the loop ran for its 12 s time budget (12.1 s)...", or, when the
 * step cap stopped it, "Stopped after 200 steps: f was called with n = 1000000000, and the hunt
 * watches at most 200 steps...". The "does the loop use n?" hint only when n was within the cap
 * (then the loop ran past n). */
export function stoppedText(stopped: TrainingStopped): string {
  const n = stopped.steps_run;
  const steps = `${n} ${n === 1 ? "step" : "steps"}`;
  const asked = stopped.requested_n ?? null;
  if (stopped.max_steps != null) {
    if (asked !== null && asked > stopped.max_steps)
      return (
        `Stopped after ${steps}: f was called with n = ${asked}, and the hunt watches at most ` +
        `${stopped.max_steps} steps, so the step cap stopped it (the rest of the loop was not run). ` +
        `Ask for at most ${stopped.max_steps} steps to see the whole loop.`
      );
    return (
      `Stopped after ${steps}: the hunt watches at most ${stopped.max_steps} steps, and the loop ` +
      `called step again, so that call was not run.` +
      (asked !== null ? ` f was called with n = ${asked}: does the loop use n?` : "")
    );
  }
  return (
    `Stopped after ${steps}: the loop ran for its ` +
    `${stopped.budget_s} s time budget (${stopped.elapsed_s.toFixed(1)} s), so the next step ` +
    `was not run. Ask for fewer steps to see the whole loop.`
  );
}

/** The number the "Run [n] steps" box starts at: the steps asked for on the page, else the `n`
 * f was called with (even past the cap: the box shows what was asked, the note says the cap),
 * else the steps that ran. */
export function stepsShown(
  asked: number | null | undefined,
  model: HuntModel,
): number {
  return asked ?? model.stopped?.requested_n ?? model.steps.length;
}

/** `hit`: nothing compiled; `first`: the expected first compile; `recompile`: anything else. */
export function statusOf(step: TrainingStep): StepStatus {
  if (!step.compiled) return "hit";
  return step.kind === "first" ? "first" : "recompile";
}

/** Bar height in [0, 1]: log10(1 + ms) / log10(1 + max), so 0.05 ms and 300 ms both show. */
export function barHeight(ms: number, maxMs: number): number {
  if (maxMs <= 0 || ms <= 0) return 0;
  return Math.min(1, Math.log10(1 + ms) / Math.log10(1 + maxMs));
}

/**
 * The step to show when nothing is picked: while stepping (the events are a prefix of the run)
 * the latest step; for a whole run the first recompile, else the first compile, else step 0.
 */
export function defaultStep(
  model: HuntModel,
  stepping: boolean,
): number | undefined {
  const { steps } = model;
  if (steps.length === 0) return undefined;
  if (stepping) return steps[steps.length - 1]?.step;
  const pick =
    steps.find((s) => statusOf(s) === "recompile") ??
    steps.find((s) => s.compiled) ??
    steps[0];
  return pick?.step;
}

/** The snippet lines a step points at: the call site, then the function's definition. */
export function stepLines(step: TrainingStep): number[] {
  const lines: number[] = [];
  if (step.source) lines.push(step.source.line);
  if (step.defined_line != null && !lines.includes(step.defined_line))
    lines.push(step.defined_line);
  return lines;
}

const KIND_LABELS: Record<string, string> = {
  first: "first compile",
  new_function: "new function object",
  weak_type: "weak type flipped",
  dtype: "new dtype",
  shape: "new shape",
  static: "static argument changed",
  pytree: "new input structure",
  context: "tracing context changed",
  placement: "new placement",
  eager: "eager operation",
  unknown: "unexplained",
};

export function kindLabel(kind: string | null | undefined): string {
  if (kind == null) return "cache hit";
  return KIND_LABELS[kind] ?? kind;
}

/** "0.04 ms", "12.3 ms", "1.20 s" */
export function formatMs(ms: number): string {
  if (ms >= 1000) return `${(ms / 1000).toFixed(2)} s`;
  if (ms >= 10) return `${ms.toFixed(0)} ms`;
  if (ms >= 1) return `${ms.toFixed(1)} ms`;
  return `${ms.toFixed(2)} ms`;
}

/** "trace 3.1 ms · lower 9.0 ms · compile 228 ms" in JAX's stage order */
export function timersText(
  timers: Readonly<Record<string, number | undefined>> | undefined,
): string {
  if (!timers) return "";
  return ["trace", "lower", "compile"]
    .filter((k) => timers[k] !== undefined)
    .map((k) => `${k} ${formatMs(timers[k] ?? 0)}`)
    .join(" · ");
}
