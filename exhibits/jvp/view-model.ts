/**
 * The jvp exhibit's view model: pure functions from the run's events to what the view shows.
 *
 * The probe emits `jaxpr_staged` (the primal jaxpr), then one `jvp_rule_applied` per primal eqn,
 * then `jvp_jaxpr_staged` (JAX's whole JVP jaxpr, each eqn attributed to its primal eqn). The
 * stepper walks the steps: the current step is the last `jvp_rule_applied` up to the cursor (or
 * the step the user picked). The whole JVP jaxpr arrives last, so the view reads it from all the
 * run's events and highlights the eqns the current step emitted.
 */
import type {
  Event,
  EventOf,
  JaxprStaged,
  RunFailed,
} from "../../frontend/src/protocol";
import { eventsOf, lastOf } from "../../frontend/src/widgets/events";
import { LOADING } from "../../frontend/src/widgets/format";

// Named through EventOf (frontend/src/protocol.ts re-exports the shared names only).
export type JvpRuleApplied = EventOf<"jvp_rule_applied">;
export type JvpJaxprStaged = EventOf<"jvp_jaxpr_staged">;
export type ValueView = JvpRuleApplied["primals_in"][number];
export type RuleView = NonNullable<JvpRuleApplied["rule"]>;
export type Mechanism = JvpRuleApplied["mechanism"];

/** What each way JAX's JVPTrace handled an eqn is called in the view. */
export const MECHANISM_LABEL: Readonly<Record<NonNullable<Mechanism>, string>> =
  {
    rule: "JVP rule from ad.primitive_jvps",
    zero_tangents: "no rule: all tangents are symbolic zeros",
    custom_jvp: "the function's own custom_jvp rule",
    custom_vjp: "the function's own custom_vjp rule (its fwd, differentiated)",
  };

export interface JvpModel {
  /** the primal jaxpr (first event of the run) */
  primal: JaxprStaged | undefined;
  /** the steps up to the cursor, in order */
  steps: JvpRuleApplied[];
  /** every step of the run (for the step count) */
  allSteps: JvpRuleApplied[];
  /** the step shown in the card */
  current: JvpRuleApplied | undefined;
  /** JAX's whole JVP jaxpr (from all events: it arrives after the last step) */
  staged: JvpJaxprStaged | undefined;
  /** true once the cursor reached the whole JVP jaxpr */
  stagedReached: boolean;
  failure: RunFailed | undefined;
  /** primal eqns after the step-by-step cap with no step (`steps_left_out`, 0 when none) */
  stepsLeftOut: number;
  /** the picked primal eqn when it is past that cap (it has no step to show), else null */
  pickedWithoutStep: number | null;
}

/**
 * Derive the model. `picked` is a primal eqn index the user clicked (its step is shown when it
 * was reached by the cursor); otherwise the last step up to the cursor.
 */
export function jvpModel(
  events: readonly Event[],
  allEvents: readonly Event[],
  picked?: number | null,
): JvpModel {
  const steps = eventsOf(events, "jvp_rule_applied");
  const allSteps = eventsOf(allEvents, "jvp_rule_applied");
  const pickedStep =
    picked == null ? undefined : steps.find((s) => s.index === picked);
  const staged = lastOf(allEvents, "jvp_jaxpr_staged");
  const stepsLeftOut = staged?.steps_left_out ?? 0;
  const lastIndex = allSteps.at(-1)?.index ?? -1;
  const pickedWithoutStep =
    picked != null && stepsLeftOut > 0 && picked > lastIndex ? picked : null;
  return {
    primal: lastOf(events, "jaxpr_staged") ?? lastOf(allEvents, "jaxpr_staged"),
    steps,
    allSteps,
    current:
      pickedWithoutStep !== null ? undefined : (pickedStep ?? steps.at(-1)),
    staged,
    stagedReached: lastOf(events, "jvp_jaxpr_staged") !== undefined,
    failure: lastOf(allEvents, "run_failed"),
    stepsLeftOut,
    pickedWithoutStep,
  };
}

/** `jax/_src/lax/lax.py:4571`, or the rule's name alone when JAX gave no location. */
export function ruleLocation(rule: RuleView | null | undefined): string | null {
  if (!rule?.file) return null;
  return rule.line == null ? rule.file : `${rule.file}:${rule.line}`;
}

/** The JVP-jaxpr eqns attributed to primal eqn `primalIndex` (ascending). */
export function jvpEqnsOf(
  staged: JvpJaxprStaged | undefined,
  primalIndex: number,
): number[] {
  if (!staged) return [];
  const out: number[] = [];
  staged.eqn_origin.forEach((o, k) => {
    if (o === primalIndex) out.push(k);
  });
  return out;
}

/** The primal eqn JVP eqn `jvpIndex` came from, or null. */
export function originOf(
  staged: JvpJaxprStaged | undefined,
  jvpIndex: number,
): number | null {
  return staged?.eqn_origin[jvpIndex] ?? null;
}

/** One row of the step card's value table: an input or output with its primal and tangent. */
export interface ValueRow {
  side: "in" | "out";
  position: number;
  primal: ValueView;
  tangent: ValueView | undefined;
}

/** The card's rows: inputs (primal with its tangent), then outputs. */
export function valueRows(step: JvpRuleApplied): ValueRow[] {
  const rows: ValueRow[] = [];
  step.primals_in.forEach((p, i) =>
    rows.push({
      side: "in",
      position: i,
      primal: p,
      tangent: step.tangents_in[i],
    }),
  );
  step.primals_out.forEach((p, i) =>
    rows.push({
      side: "out",
      position: i,
      primal: p,
      tangent: step.tangents_out[i],
    }),
  );
  return rows;
}

/** How a value is shown: its preview, `symbolic zero`, or a note when it was not fetched. */
export function valueText(v: ValueView | undefined): string {
  if (v === undefined) return "—";
  if (v.zero) return "symbolic zero (ad.Zero)";
  if (v.deferred === true) return `${v.aval.short} ${LOADING}`;
  return v.preview ?? "(not fetched: too large)";
}

/** The sentence under the card's title: what JAX did with this eqn. */
export function stepSentence(step: JvpRuleApplied): string {
  const emitted = step.tangent_eqns.length;
  const eqns = `${emitted} eqn${emitted === 1 ? "" : "s"}`;
  switch (step.mechanism) {
    case "zero_tangents":
      return `No tangent flows into ${step.primitive}: JAX binds the primal eqn alone (${eqns} emitted).`;
    case "custom_jvp":
    case "custom_vjp":
      return `${step.primitive} carries its own rule: JAX runs it instead of a table entry (${eqns} emitted).`;
    default:
      return `JAX looked up ${step.primitive} in ad.primitive_jvps and ran the rule: it emitted ${eqns}.`;
  }
}

/**
 * Highlighted JVP eqns: those the current step emitted (else those attributed to its primal eqn),
 * or, with no step, those attributed to the primal eqn clicked past the steps' cap
 * (`pickedWithoutStep`: JAX's JVP jaxpr and its attribution are whole).
 */
export function highlightedJvpEqns(
  staged: JvpJaxprStaged | undefined,
  current: JvpRuleApplied | undefined,
  pickedWithoutStep: number | null = null,
): Set<number> {
  if (!staged) return new Set();
  if (!current) return new Set(pickedWithoutStep === null ? [] : jvpEqnsOf(staged, pickedWithoutStep));
  const fromStep = current.jvp_eqn_indices ?? [];
  return new Set(
    fromStep.length > 0 ? fromStep : jvpEqnsOf(staged, current.index),
  );
}
