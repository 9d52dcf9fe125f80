/**
 * The vmap exhibit's view model: pure functions from the run's events to what the view shows.
 *
 * The probe emits `vmap_inputs_mapped` (each argument's batch dim and per-example aval),
 * `jaxpr_staged` (the per-example jaxpr), one `batch_rule_applied` per eqn of it, then
 * `batched_jaxpr_staged` (JAX's own `make_jaxpr(vmap(f, in_axes, out_axes))`). The stepper walks
 * the steps: the current step is the last `batch_rule_applied` up to the cursor (or the step the
 * user picked). The batched jaxpr arrives last, so it is read from all the run's events. When
 * batching fails, the steps that succeeded arrive, then a `failed` step for the eqn JAX raised
 * on, then `run_failed`: the stepper at the end stands on the failing eqn.
 */
import type { Event, EventOf, JaxprStaged, RunFailed } from "../../frontend/src/protocol";
import { eventsOf, lastOf } from "../../frontend/src/widgets/events";

export type BatchRuleApplied = EventOf<"batch_rule_applied">;
export type BatchedJaxprStaged = EventOf<"batched_jaxpr_staged">;
export type VmapInputsMapped = EventOf<"vmap_inputs_mapped">;
export type AvalView = BatchRuleApplied["in_avals"][number];
export type RuleView = NonNullable<BatchRuleApplied["rule"]>;

export interface VmapModel {
  inputs: VmapInputsMapped | undefined;
  /** the per-example (unbatched) jaxpr */
  example: JaxprStaged | undefined;
  steps: BatchRuleApplied[];
  allSteps: BatchRuleApplied[];
  current: BatchRuleApplied | undefined;
  staged: BatchedJaxprStaged | undefined;
  stagedReached: boolean;
  failure: RunFailed | undefined;
  /** the eqn JAX raised on (a `failed` step: the steps before it succeeded), once reached */
  failedStep: BatchRuleApplied | undefined;
  /** per-example eqns after the step-by-step cap with no step (`steps_left_out`, 0 when none) */
  stepsLeftOut: number;
  /** the picked eqn when it is past that cap (it has no step to show), else null */
  pickedWithoutStep: number | null;
}

/** Derive the model; `picked` is a per-example eqn index the user clicked (shown once reached). */
export function vmapModel(
  events: readonly Event[],
  allEvents: readonly Event[],
  picked?: number | null,
): VmapModel {
  const steps = eventsOf(events, "batch_rule_applied");
  const pickedStep = picked == null ? undefined : steps.find((s) => s.index === picked);
  const allSteps = eventsOf(allEvents, "batch_rule_applied");
  const staged = lastOf(allEvents, "batched_jaxpr_staged");
  const stepsLeftOut = staged?.steps_left_out ?? 0;
  const lastIndex = allSteps.at(-1)?.index ?? -1;
  const pickedWithoutStep = picked != null && stepsLeftOut > 0 && picked > lastIndex ? picked : null;
  return {
    inputs: lastOf(allEvents, "vmap_inputs_mapped"),
    example: lastOf(events, "jaxpr_staged") ?? lastOf(allEvents, "jaxpr_staged"),
    steps,
    allSteps,
    current: pickedWithoutStep !== null ? undefined : (pickedStep ?? steps.at(-1)),
    staged,
    stagedReached: lastOf(events, "batched_jaxpr_staged") !== undefined,
    failure: lastOf(allEvents, "run_failed"),
    failedStep: steps.find((s) => s.mechanism === "failed"),
    stepsLeftOut,
    pickedWithoutStep,
  };
}

/** One box of a shape picture: the dim's size, and whether it is the batch axis. */
export interface DimBox {
  size: number;
  batch: boolean;
}

/** The boxes of `aval`'s shape, the one at `bdim` marked as the batch axis. */
export function shapeBoxes(aval: AvalView, bdim: number | null | undefined): DimBox[] {
  return aval.shape.map((size, i) => ({ size, batch: bdim != null && i === bdim }));
}

/** `axis 1` or `not mapped`. */
export function bdimText(bdim: number | null | undefined): string {
  return bdim == null ? "not mapped" : `axis ${bdim}`;
}

/** The unmapped inputs fold into one row from this many on (a model's parameters: hundreds). */
export const UNMAPPED_GROUP_MIN = 8;

/** A row of the inputs table: the input and its index in the event (its test id). */
export interface InputRow {
  inp: VmapInputsMapped["inputs"][number];
  index: number;
}

/**
 * The inputs table: the mapped inputs (and static ones) first, in argument order, then the
 * inputs not mapped (in_axes None), folded into one row (`grouped`) when there are
 * UNMAPPED_GROUP_MIN or more: a transformer's 148 parameter leaves came before its two mapped
 * inputs and made the table 3,894 px tall.
 */
export function inputTable(inputs: VmapInputsMapped["inputs"]): {
  first: InputRow[];
  unmapped: InputRow[];
  grouped: boolean;
} {
  const rows = inputs.map((inp, index) => ({ inp, index }));
  const isUnmapped = (r: InputRow): boolean => !r.inp.static && r.inp.bdim == null;
  const unmapped = rows.filter(isUnmapped);
  return {
    first: rows.filter((r) => !isUnmapped(r)),
    unmapped,
    grouped: unmapped.length >= UNMAPPED_GROUP_MIN,
  };
}

/** The folded row's label: `148 inputs not mapped (in_axes None)`. */
export function unmappedText(n: number): string {
  return `${n.toLocaleString("en-US")} ${n === 1 ? "input" : "inputs"} not mapped (in_axes None): shared by every example`;
}

/** One row of the step card's table: a value going in or out of the eqn. */
export interface ValueRow {
  side: "in" | "out";
  position: number;
  /** the var name in the per-example jaxpr; null for a literal */
  var: string | null;
  exampleAval: AvalView | undefined;
  aval: AvalView | undefined;
  bdim: number | null;
}

export function valueRows(step: BatchRuleApplied): ValueRow[] {
  const rows: ValueRow[] = [];
  step.in_bdims.forEach((d, i) =>
    rows.push({
      side: "in",
      position: i,
      var: step.in_vars?.[i] ?? null,
      exampleAval: step.example_in_avals?.[i],
      aval: step.in_avals[i],
      bdim: d ?? null,
    }),
  );
  step.out_bdims.forEach((d, i) =>
    rows.push({
      side: "out",
      position: i,
      var: step.out_vars?.[i] ?? null,
      exampleAval: step.example_out_avals?.[i],
      aval: step.out_avals[i],
      bdim: d ?? null,
    }),
  );
  return rows;
}

/** Batch dims as Python writes them: `(0, None)`. */
export const dimsText = (ds: readonly (number | null | undefined)[]): string =>
  `(${ds.map((d) => (d == null ? "None" : String(d))).join(", ")})`;
const dims = dimsText;

/** A sentence saying what the rule did with the batch dims. */
export function stepSentence(step: BatchRuleApplied): string {
  const head = `${step.primitive}: batch dims in ${dims(step.in_bdims)} → out ${dims(step.out_bdims)}.`;
  if (step.mechanism === "failed") {
    return `${step.primitive}: batch dims in ${dims(step.in_bdims)} → JAX raised here, so vmap failed at this eqn (the error panel has JAX's message).`;
  }
  if (step.mechanism === "not_mapped") return `${head} No rule ran: nothing was mapped.`;
  const moved = step.moves?.length ?? 0;
  if (moved > 0) {
    return `${head} The rule lined the batch axes up first: ${moved} axis move${moved > 1 ? "s" : ""}/broadcast${moved > 1 ? "s" : ""} before the batched ${step.primitive}.`;
  }
  if (step.in_bdims.every((d) => d == null)) return `${head} Computed once, shared by all examples.`;
  return `${head} The batched ${step.primitive} handles the batch axis directly.`;
}

/** `jax/_src/lax/lax.py:4571`, or null when JAX gave no location. */
export function ruleLocation(rule: RuleView | null | undefined): string | null {
  if (!rule?.file) return null;
  return rule.line == null ? rule.file : `${rule.file}:${rule.line}`;
}

/** The batched-jaxpr eqns the current step emitted. */
export function highlightedBatchedEqns(step: BatchRuleApplied | undefined): Set<number> {
  return new Set(step?.batched_eqn_indices ?? []);
}

/** The step (per-example eqn index) that emitted batched eqn `k`, or null (vmap's own moves). */
export function originOf(steps: readonly BatchRuleApplied[], k: number): number | null {
  for (const s of steps) if (s.batched_eqn_indices?.includes(k)) return s.index;
  return null;
}

/** Whether an emitted eqn's text is one of the step's axis moves. */
export function isMove(step: BatchRuleApplied, text: string): boolean {
  return (step.moves ?? []).includes(text);
}

/**
 * The options of a rerun with the edited axes: empty text means "the snippet's own" (null).
 */
export function axesOptions<T extends object>(
  options: T,
  inAxes: string,
  outAxes: string,
): T & { in_axes: string | null; out_axes: string | null } {
  const norm = (s: string): string | null => (s.trim() === "" ? null : s.trim());
  return { ...options, in_axes: norm(inAxes), out_axes: norm(outAxes) };
}

/**
 * The texts the in_axes/out_axes boxes show: the user's unsent edit, else the run's option, else
 * the axes the probe reported it used (also when jax.vmap rejected them: the run tried these).
 */
export function shownAxes(
  options: { in_axes?: string | null; out_axes?: string | null },
  inputs: VmapInputsMapped | undefined,
  edits: { in_axes: string | null; out_axes: string | null } = { in_axes: null, out_axes: null },
): { inAxes: string; outAxes: string } {
  return {
    inAxes: edits.in_axes ?? options.in_axes ?? inputs?.in_axes ?? "",
    outAxes: edits.out_axes ?? options.out_axes ?? inputs?.out_axes ?? "",
  };
}
