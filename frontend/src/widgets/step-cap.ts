/**
 * The step-by-step views (jvp, vmap) capture one step per eqn up to `MAX_STEPS` (2,000) of the
 * backend's `jvp_steps` / `batching_steps`; the staged event's `steps_left_out` counts the eqns
 * after that, which have no step (the jaxprs themselves are whole). These sentences say so, so
 * that "step 2000 / 2000" is not read as the whole program.
 */

const n = (x: number): string => x.toLocaleString('en-US');

/** The badge of a step-by-step view: `step 12 / 2,000 of 20,001 eqns` when steps were left out. */
export function stepCount(shown: number, steps: number, left: number): string {
  return left > 0 ? `step ${n(shown)} / ${n(steps)} of ${n(steps + left)} eqns` : `step ${shown} / ${steps}`;
}

/** Null when every eqn has a step; else the sentence saying the steps stop after the first ones. */
export function stepCapNote(steps: number, left: number): string | null {
  if (left <= 0) return null;
  return (
    `Steps for the first ${n(steps)} of ${n(steps + left)} eqns: the step-by-step view stops at ` +
    `${n(steps)} (the jaxprs are whole).`
  );
}

/** Why eqn `index` (clicked) shows no step: it is past the steps' cap. */
export function noStepNote(index: number, steps: number, left: number): string {
  return (
    `Eqn ${n(index)} has no step: the step-by-step view stops after the first ${n(steps)} of ` +
    `${n(steps + left)} eqns (the jaxprs are whole).`
  );
}

/**
 * The eqns a step-by-step view marks in its jaxpr: the current step's eqn, or the eqn clicked past
 * the cap (`pickedWithoutStep`: the "no step" note speaks of it). Marking none there cleared the
 * highlight on that click, and the text went back to its top as for the stepper's ⏮.
 */
export function markedEqns(step: number | undefined, pickedWithoutStep: number | null): Set<number> {
  const eqn = pickedWithoutStep ?? step;
  return new Set(eqn === undefined ? [] : [eqn]);
}
