/**
 * The transform_order exhibit's view model: the chip stack (pure edits: add, remove, move by
 * drag or keyboard) and what the view shows of the run's events.
 *
 * The probe emits one `transform_stack_evaluated` per stack: the user's first (`group: "user"`),
 * then the built-in comparisons (`per_example`, `jacobian`, `model`). The stepper walks them one
 * event per step. A stack is a list of chip names, OUTERMOST first: `["vmap", "grad"]` is
 * `vmap(grad(f))`.
 */
import type { Event, EventOf, RunFailed } from "../../frontend/src/protocol";
import { eventsOf, lastOf } from "../../frontend/src/widgets/events";

export type StackEvaluated = EventOf<"transform_stack_evaluated">;
export type ArgTrace = StackEvaluated["traces"][number];
export type TraceNode = ArgTrace["nodes"][number];

/** The chips, in palette order (the protocol's `TransformName`). */
export const CHIPS = [
  "jit",
  "grad",
  "value_and_grad",
  "vmap",
  "jacfwd",
  "jacrev",
  "hessian",
  "jvp",
  "vjp",
] as const;
export type Chip = (typeof CHIPS)[number];

/** The most chips a stack may hold (`RunOptions.stack` max_length). */
export const MAX_CHIPS = 8;

/** What each chip does to the function inside it (how the probe applies it). */
export const CHIP_HELP: Readonly<Record<Chip, string>> = {
  jit: "jax.jit: trace once to a jaxpr, compile with XLA",
  grad: "jax.grad w.r.t. the first argument (needs a scalar output)",
  value_and_grad:
    "jax.value_and_grad w.r.t. the first argument: (value, gradient)",
  vmap: "jax.vmap with the snippet's in_axes (default 0) for every vmap chip",
  jacfwd: "jax.jacfwd w.r.t. the first argument: one JVP per input element",
  jacrev: "jax.jacrev w.r.t. the first argument: one VJP per output element",
  hessian: "jax.hessian w.r.t. the first argument (jacfwd of jacrev)",
  jvp: "jax.jvp w.r.t. the first argument, tangent = ones: returns (primal_out, tangent_out)",
  vjp: "jax.vjp w.r.t. the first argument, cotangent = ones: returns (primal_out, cotangent)",
};

export function isChip(name: string): name is Chip {
  return (CHIPS as readonly string[]).includes(name);
}

/** Move the chip at `from` to position `to` (both clamped); a new array. */
export function moveChip(
  stack: readonly Chip[],
  from: number,
  to: number,
): Chip[] {
  const out = [...stack];
  if (from < 0 || from >= out.length) return out;
  const [chip] = out.splice(from, 1);
  const at = Math.max(0, Math.min(to, out.length));
  out.splice(at, 0, chip as Chip);
  return out;
}

/** The keyboard move of a focused chip: Alt+ArrowLeft/Up outward, Alt+ArrowRight/Down inward,
 * Alt+Home/End to the ends. `null` when the key is not a move (or the chip cannot go there). */
export function keyMove(
  stack: readonly Chip[],
  index: number,
  key: string,
  altKey: boolean,
): { stack: Chip[]; index: number } | null {
  if (!altKey) return null;
  let to: number;
  if (key === "ArrowLeft" || key === "ArrowUp") to = index - 1;
  else if (key === "ArrowRight" || key === "ArrowDown") to = index + 1;
  else if (key === "Home") to = 0;
  else if (key === "End") to = stack.length - 1;
  else return null;
  if (to < 0 || to >= stack.length || to === index) return null;
  return { stack: moveChip(stack, index, to), index: to };
}

/** Remove the chip at `index`; a new array. */
export function removeChip(stack: readonly Chip[], index: number): Chip[] {
  return stack.filter((_, i) => i !== index);
}

/** Add `chip` innermost (nearest f), unless the stack is full. */
export function addChip(stack: readonly Chip[], chip: Chip): Chip[] {
  return stack.length >= MAX_CHIPS ? [...stack] : [...stack, chip];
}

/** `vmap(grad(f))` for `["vmap", "grad"]` (in_axes shown on vmap when not 0). */
export function stackExpression(
  stack: readonly string[],
  fname = "f",
  inAxes?: string | null,
): string {
  let expr = fname;
  for (let i = stack.length - 1; i >= 0; i--) {
    const name = stack[i];
    expr =
      name === "vmap" && inAxes && inAxes !== "0"
        ? `vmap(${expr}, in_axes=${inAxes})`
        : `${name}(${expr})`;
  }
  return expr;
}

export interface ComparisonGroup {
  id: string;
  title: string;
  lead: string;
  items: StackEvaluated[];
}

export const GROUPS: readonly Omit<ComparisonGroup, "items">[] = [
  {
    id: "per_example",
    title: "vmap(grad(u)) against grad(vmap(u)) against the summed gradient",
    lead: "u(x) = x³ + sin(x) on 4 points. Order matters: grad needs a scalar, and vmap outside grad gives each example its own scalar.",
  },
  {
    id: "jacobian",
    title: "jacfwd against jacrev: a tall and a wide Jacobian",
    lead: "tanh(A·x): tall = 4 inputs → 200 outputs, wide = 200 inputs → 4 outputs. Same values; forward mode costs one JVP per input, reverse mode one VJP per output.",
  },
  {
    id: "model",
    title: "Per-example gradients of a linear model",
    lead: "loss(w, x, y) = (x·w − y)² for one example; 8 examples, 3 parameters. The parameters are shared, the data is split.",
  },
];

export interface OrderModel {
  /** the user's stack, once evaluated */
  user: StackEvaluated | undefined;
  /** the built-in comparisons up to the cursor, by group (groups with no event yet omitted) */
  groups: ComparisonGroup[];
  failure: RunFailed | undefined;
}

export function orderModel(events: readonly Event[]): OrderModel {
  const all = eventsOf(events, "transform_stack_evaluated");
  const user = all.find((e) => e.group === "user");
  const groups = GROUPS.map((g) => ({
    ...g,
    items: all.filter((e) => e.group === g.id),
  })).filter((g) => g.items.length > 0);
  return { user, groups, failure: lastOf(events, "run_failed") };
}

/** The stack the probe evaluates when neither the run options nor the snippet (a `stack = [...]`
 * variable) name one: probe.py's DEFAULT_STACK (a vitest reads it there). */
export const DEFAULT_STACK: readonly Chip[] = ["vmap", "grad"];

/** Where the chips shown come from: the run options, the stack the probe evaluated (the
 * snippet's or the default), or, before that event arrives, the default the run will use unless
 * the snippet names its own. */
export type StackSource = "options" | "evaluated" | "default";

export function stackSource(optionStack: readonly string[] | null | undefined, user?: StackEvaluated): StackSource {
  return optionStack ? "options" : user ? "evaluated" : "default";
}

/** The chips shown: the options' stack when the run was (or will be) started with one, else the
 * stack the probe evaluated (the snippet's or the default), else, before a run, the default the
 * next run evaluates (so what Run evaluates is what is on screen); only real chips (no `sum`). */
export function shownStack(
  optionStack: readonly string[] | null | undefined,
  user?: StackEvaluated,
): Chip[] {
  const stack = optionStack ?? user?.stack ?? DEFAULT_STACK;
  return stack.filter(isChip);
}

/** One box of the nest diagram: a value along the primal/val chain, outermost first. */
export interface NestBox {
  node: TraceNode;
  /** the tangent this tracer carries beside its primal (JVP/Linearize tracers), then what
   * that tangent wraps (e.g. jacfwd's batch of tangents) */
  tangent: TraceNode[];
}

/** The chain of values an argument carried, OUTERMOST first: from the concrete array (or jit's
 * tracer) the outermost transform holds, in to the tracer f itself received. Follows `primal`
 * and `val` links; `tangent` children become side notes of their parent. */
export function nestBoxes(arg: ArgTrace): NestBox[] {
  const nodes = arg.nodes;
  const chain: NestBox[] = [];
  let i = 0;
  while (i < nodes.length) {
    const node = nodes[i] as TraceNode;
    const tangent: TraceNode[] = [];
    let next = -1;
    for (
      let j = i + 1;
      j < nodes.length && (nodes[j] as TraceNode).depth > node.depth;
      j++
    ) {
      const c = nodes[j] as TraceNode;
      if (c.depth !== node.depth + 1) continue;
      if (c.role === "tangent") {
        for (
          let k = j;
          k < nodes.length &&
          (k === j || (nodes[k] as TraceNode).depth > c.depth);
          k++
        ) {
          tangent.push(nodes[k] as TraceNode);
        }
      } else if (next < 0) next = j;
    }
    chain.push({ node, tangent });
    if (next < 0) break;
    i = next;
  }
  return chain.reverse();
}

/** How many argument leaves the event has past those it draws (a model's parameters: the probe
 * records the first 8, `traces_left_out` counts the rest); 0 when every leaf is drawn. */
export function leavesLeftOut(e: StackEvaluated): number {
  return e.traces_left_out ?? 0;
}

/** The trace each argument meets, as a short word for the diagram's legend. */
export function traceLabel(node: TraceNode): string {
  if (node.trace === null || node.trace === undefined) return "concrete array";
  return node.trace;
}

/** A compact number: 12.3k, 4.56M. */
export function compact(n: number | null | undefined): string {
  if (n === null || n === undefined) return "—";
  const abs = Math.abs(n);
  if (abs >= 1e9) return `${(n / 1e9).toFixed(2)}G`;
  if (abs >= 1e6) return `${(n / 1e6).toFixed(2)}M`;
  if (abs >= 1e3) return `${(n / 1e3).toFixed(1)}k`;
  return String(Math.round(n));
}

/** Milliseconds with a sensible precision (warm times are tens of microseconds here). */
export function ms(t: number | null | undefined): string {
  if (t === null || t === undefined) return "—";
  return t < 1 ? `${(t * 1000).toFixed(0)} µs` : `${t.toFixed(2)} ms`;
}

/** A tracer as the nest diagram writes it: its class, its aval, and vmap's batch dim if any. */
export function nodeText(n: TraceNode): string {
  const bd =
    n.batch_dim !== null && n.batch_dim !== undefined
      ? `, batch dim ${n.batch_dim}`
      : "";
  return `${n.tracer} ${n.aval}${bd}`;
}
