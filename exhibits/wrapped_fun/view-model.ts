/**
 * The wrapped_fun exhibit's view model: linear_util's WrappedFun stacks seen around the
 * snippet's functions (`wrapped_fun_stack_built`), the real enter/leave/fill order
 * (`wrapped_fun_calls_recorded`) and the summary (`wrapped_fun_watched`). Pure functions of the
 * events, tested on the golden streams (`view-model.test.ts`); the view only lays them out.
 */
import type { Event, EventOf } from '../../frontend/src/protocol';
import { eventsOf, lastOf } from '../../frontend/src/widgets/events';

export type StackBuilt = EventOf<'wrapped_fun_stack_built'>;
export type CallsRecorded = EventOf<'wrapped_fun_calls_recorded'>;
export type Watched = EventOf<'wrapped_fun_watched'>;
export type CallStep = CallsRecorded['steps'][number];

/** The transformations the probe can apply, as the option's select lists them. */
export const TRANSFORMS = [
  'vmap',
  'custom_vjp',
  'custom_jvp',
  'linear_transpose',
  'jit',
  'grad',
  'jvp',
  'vjp',
  'make_jaxpr',
  'checkpoint',
] as const;

/** The stacks seen so far, entered ones first (in the order entered), then those built only. */
export function stacks(events: readonly Event[]): StackBuilt[] {
  const all = eventsOf(events, 'wrapped_fun_stack_built');
  return [...all.filter((s) => s.entered > 0), ...all.filter((s) => s.entered === 0)];
}

/** One transformation as a row of a stack's table. */
export interface TransformRow {
  position: number;
  name: string;
  module: string;
  params: string;
  /** "1st applied", "2nd applied" ...; null for a pair pushed before the watch */
  applied: string | null;
  store: string | null;
  /** where the arguments and results meet it: "arguments enter here first" ... */
  role: string | null;
}

function ordinal(n: number): string {
  const tail = n % 100 >= 11 && n % 100 <= 13 ? 'th' : (['th', 'st', 'nd', 'rd'][n % 10] ?? 'th');
  return `${n}${tail}`;
}

/** A stack's transformations, outermost first, with the order they were applied in. */
export function transformRows(stack: StackBuilt): TransformRow[] {
  const pushes = stack.transforms.map((t) => t.push).filter((p): p is number => p !== null);
  const rank = (p: number | null): number | null => (p === null ? null : [...pushes].sort((a, b) => a - b).indexOf(p));
  const last = stack.transforms.length - 1;
  return stack.transforms.map((t) => {
    const r = rank(t.push);
    let role: string | null = null;
    if (last === 0) role = 'arguments enter and results leave here';
    else if (t.position === 0) role = 'arguments meet it first, results last';
    else if (t.position === last) role = 'results meet it first, arguments last';
    return {
      position: t.position,
      name: t.name,
      module: t.module,
      params: t.params.map((p) => `${p.name}=${p.text}`).join(', '),
      applied: r === null ? null : `${ordinal(r + 1)} applied`,
      store: t.store,
      role,
    };
  });
}

/** One line of the timeline. */
export interface TimelineRow {
  index: number;
  step: CallStep;
  /** "→ _batch_outer", "← f", "■ store of flatten_fun_for_vmap filled" */
  text: string;
  depth: number;
}

const ARROWS: Record<CallStep['event'], string> = { enter: '→', leave: '←', fill: '■' };

/** The timeline: each step as a line, indented by the frames open before it. */
export function timeline(events: readonly Event[]): TimelineRow[] {
  const recorded = lastOf(events, 'wrapped_fun_calls_recorded');
  if (!recorded) return [];
  return recorded.steps.map((step, index) => {
    const what = step.core ? `${step.name} (your function)` : step.name;
    const text = step.event === 'fill' ? `${ARROWS.fill} ${step.name} fills its store` : `${ARROWS[step.event]} ${what}`;
    return { index, step, text, depth: step.depth };
  });
}

/** Steps the timeline leaves out (past the probe's cap). */
export function stepsLeftOut(events: readonly Event[]): number {
  return lastOf(events, 'wrapped_fun_calls_recorded')?.steps_left_out ?? 0;
}

/** The summary, once the stepper reached it. */
export function summary(events: readonly Event[]): Watched | undefined {
  return lastOf(events, 'wrapped_fun_watched');
}

/** The no-stack sentence for a transformation that built no WrappedFun around f, naming the
 * JAX function that called f instead; null when a stack was built. */
export function noStackText(w: Watched): string | null {
  if (w.built_around > 0) return null;
  const first = w.traced_by[0];
  const by = first ? `${first.function} (${first.file}:${first.line})` : 'its own tracing';
  // custom_vjp/custom_jvp run jax.vjp/jax.jvp on an f expected to call such a function
  const custom = { custom_vjp: 'vjp', custom_jvp: 'jvp' }[w.transform as string];
  if (custom !== undefined) {
    return `No WrappedFun stack: f calls no jax.${w.transform} function, and jax.${custom} built no WrappedFun around your function; it traces f with ${by} directly.`;
  }
  return `No WrappedFun stack: jax.${w.transform} built no WrappedFun around your function; it traces f with ${by} directly.`;
}

/** The summary's headline: what was applied and what the hooks saw. */
export function headline(w: Watched): string {
  const n = w.built_around;
  const objects = `${n} WrappedFun object${n === 1 ? '' : 's'}`;
  const stacksText = `${w.stacks} stack${w.stacks === 1 ? '' : 's'}`;
  return `${objects} built around your functions, ${stacksText}`;
}
