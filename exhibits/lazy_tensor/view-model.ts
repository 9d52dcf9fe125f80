/**
 * The lazy_tensor exhibit's view model: the line steps (the pending IR after each line of `f`,
 * and the cuts), the graph before the sync and the hash experiments, as pure functions of the
 * events (tested on the golden stream in `view-model.test.ts`).
 */
import type { Event, EventOf } from "../../frontend/src/protocol";
import { eventsOf } from "../../frontend/src/widgets/events";

export type LineStep = EventOf<"lazy_line_stepped">;

/** What a user writes for each host-reading torch.Tensor method the probe watches. */
const CALL_WORDS: Record<string, string> = {
  item: '.item()',
  cpu: '.cpu()',
  to: '.to(...)',
  tolist: '.tolist()',
  __bool__: 'bool(t): an if / while / and / or on a tensor',
  __repr__: 'print(t) / str(t) / repr(t)',
  __format__: 'an f-string / format(t)',
  __float__: 'float(t)',
  __int__: 'int(t)',
  __index__: 'a tensor used as an index',
};

/** A cut's call as the user wrote it, with torch's method name (`.item()`, `print(t) / ... (Tensor.__repr__)`). */
export function callWords(method: string): string {
  const words = CALL_WORDS[method];
  if (!words) return `Tensor.${method}`;
  return words.startsWith('.') ? words : `${words} (Tensor.${method})`;
}

/** One row of the steps table. */
export interface StepRow {
  index: number;
  line: number;
  source: string;
  pending: number;
  added: number;
  /** the programs torch_xla ran during the line: > 0 means the line cut the graph */
  cut: number;
  compiles: number;
  /** the calls that ran those programs, as the user wrote them (empty: none watched ran one) */
  cutBy: string[];
  /** programs no watched call ran: each op in eager mode, or an explicit sync */
  unnamed: number;
  eager: boolean;
}

export function stepRows(events: readonly Event[]): StepRow[] {
  return eventsOf(events, "lazy_line_stepped").map((e, index) => ({
    index,
    line: e.line,
    source: e.source,
    pending: e.pending.length,
    added: e.new_nodes,
    cut: e.executions,
    compiles: e.compiles,
    cutBy: e.cut_by.map((c) => callWords(c.method)),
    unnamed: e.executions - e.cut_by.reduce((n, c) => n + c.executions, 0),
    eager: e.eager_mode,
  }));
}

/** The IR lines of step `index`, each marked when it was made by that step's line. */
export function stepNodes(
  events: readonly Event[],
  index: number,
): { text: string; fresh: boolean; line: number | null }[] {
  const step = eventsOf(events, "lazy_line_stepped")[index];
  if (!step) return [];
  return step.pending.map((n) => ({
    text: n.text,
    fresh: n.line === step.line,
    line: n.line ?? null,
  }));
}

export function built(
  events: readonly Event[],
): EventOf<"lazy_graph_built"> | undefined {
  return eventsOf(events, "lazy_graph_built").at(-1);
}

export function synced(
  events: readonly Event[],
): EventOf<"lazy_graph_synced"> | undefined {
  return eventsOf(events, "lazy_graph_synced").at(-1);
}

export function hashes(
  events: readonly Event[],
): EventOf<"graph_hash_compared"> | undefined {
  return eventsOf(events, "graph_hash_compared").at(-1);
}

/** Whether the line steps ran in torch_xla's eager mode. */
export function eagerRun(events: readonly Event[]): boolean {
  return eventsOf(events, 'lazy_line_stepped').some((e) => e.eager_mode);
}

export type HashSource = EventOf<'graph_hash_compared'>['source'];

/** A link to lines [a, b] of the hash's source file at the tag's commit (each part of the commit
 * and path encoded: they come from the run's events; the view passes the link through
 * `safeHref`, as every link built from event data). */
export function sourceLink(source: HashSource, lines: readonly number[]): string {
  const [a, b] = [lines[0], lines[lines.length - 1]];
  const anchor = a === b ? `#L${a}` : `#L${a}-L${b}`;
  const path = source.path.split('/').map(encodeURIComponent).join('/');
  return `https://github.com/pytorch/xla/blob/${encodeURIComponent(source.commit)}/${path}${anchor}`;
}

/** An ingredient's excerpt with its line numbers (`  644  coll.hash = ...`). */
export function numbered(text: string, first: number): string {
  return text
    .split('\n')
    .map((line, i) => `${String(first + i).padStart(5, ' ')}  ${line}`)
    .join('\n');
}

export function torchaxStaged(events: readonly Event[]): EventOf<'torchax_staged'> | undefined {
  return eventsOf(events, 'torchax_staged').at(-1);
}

export type TorchaxVar = EventOf<'torchax_staged'>['inputs'][number];

/** What each kind of torchax's jaxpr variable is, in words. */
const VAR_ROLES: Record<TorchaxVar['kind'], string> = {
  parameter: 'input: a parameter of a module-level nn.Module',
  buffer: 'input: a buffer of a module-level nn.Module',
  argument: "input: one of f's args",
  tensor: 'constant: a module-level tensor f reads',
  constant: 'constant: not a snippet tensor (made by f or by torchax: its PRNG key)',
};

/** The jaxpr's variables that come from the snippet, invars then constvars, each with what it
 * is (`model.0.weight`, input: a parameter). */
export function torchaxVars(
  staged: EventOf<'torchax_staged'>,
): { var: string; aval: string; name: string; role: string }[] {
  return [...staged.inputs, ...staged.constants].map((v) => ({
    var: v.var,
    aval: v.aval,
    name: v.name,
    role: VAR_ROLES[v.kind],
  }));
}
