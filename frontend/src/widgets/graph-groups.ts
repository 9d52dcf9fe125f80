/**
 * The hierarchy of a jaxpr's eqns for the dataflow graph of a real program: eqns are grouped by
 * the user calls that made them, read from each eqn's source (`SourceLoc.callers`: the snippet
 * frames that led to its line, from the eqn's `source_info.traceback`). An eqn made inside
 * `layer_norm`, called from `block` at line 41, called from `f` at line 50, sits in the group of
 * the call at line 50 (into `block`), inside it in the group of the call at line 41 (into
 * `layer_norm`). Consecutive eqns of one call site form one group: the iterations of a loop that
 * calls `block` from one line are one group, inside which each call `block` makes is a group of
 * its own (frames do not record loop iterations, so they are not guessed). Long runs of eqns of one line with no call
 * (a Python loop unrolled in `f` itself) are grouped by line. Groups are collapsed into one node
 * until the user expands them (`visibleGraph`), so that a 12-layer model opens on a graph of tens
 * of nodes instead of a thousand.
 *
 * An eqn that holds inner jaxprs (`jit`, `scan`, `cond`, `while`, `custom_jvp_call`,
 * `custom_vjp_call`, `remat`) is a group too (`x:<index>`, inside it `x:<index>/jaxpr0/<j>` for
 * an eqn of its inner jaxpr, and so on down): one node until expanded, then its inner eqns in
 * place (`inner-jaxprs.ts`), wired to the eqn's operands and results by position, and grouped
 * there as the top level is (`innerTree`: a model under one `jax.jit` call opens into its layers'
 * scopes, collapsed, not into its thousand eqns). An expanded group is drawn as a box around what
 * it holds (`GraphCluster`), its header collapsing it again.
 *
 * JAX's name scopes come first: eqns traced inside `jax.named_scope('layer3')` (or a Flax linen
 * module, which enters one per module call) carry it in their name stack (`EqnView.name_stack`,
 * `str(eqn.source_info.name_stack)`: `layer3/attn`, `transpose(jvp(layer3))`), and consecutive
 * eqns of one scope form a group (`layer3`), inside it those of one inner scope (`attn`), and
 * only below the scopes the call groups above. A scope the user named says more than the line
 * that called a function, so a loop `with jax.named_scope(f'layer{i}')` opens as one box per
 * layer. A list of more than `CHUNK` items (the 40,000 eqns of one unrolled line) is split into
 * groups of `CHUNK` consecutive items, so that no expand draws more than that at once.
 */
import type { JaxprView, SourceLoc } from '../protocol';
import { avalText } from './format';
import type { DataflowGraph, GraphCluster, GraphEdge, GraphNode } from './dataflow-graph';
import type { ParsedInner } from './inner-jaxprs';
import { innerLabel, innerOfTop, innerOperands, innerResults, parsedEqn, topEqn, type AnyEqn } from './inner-jaxprs';

export interface EqnGroup {
  kind: 'group';
  /** unique in the tree: the path of scopes, call sites and run numbers
   * (`g/ns:layer3#0/ns:attn#0`, `g/50>block#0/41>layer_norm#2`) */
  id: string;
  /** what the group is: a name scope (`layer3`, `transpose(jvp(layer3))`), a call
   * (`block (line 50)`), `line 17` for a run of one line, `eqns 500–999` for a chunk */
  label: string;
  /** what made it: a name scope, a user call, a run of one line, or a chunk of a long list */
  origin: 'scope' | 'call' | 'line' | 'chunk';
  /** indices of the first and last eqn it holds (its eqns are contiguous) */
  first: number;
  last: number;
  items: GroupItem[];
}

export type GroupItem = EqnGroup | { kind: 'eqn'; index: number };

/** What the grouping reads of an eqn: its place in its jaxpr (`index`: a top-level eqn's index,
 * or an inner eqn's position in its inner jaxpr), where it was made and its name stack. A
 * top-level `EqnView` is one; an inner eqn is read as one (`innerTree`). */
export interface GroupEqn {
  index: number;
  source?: SourceLoc | null;
  name_stack?: string;
}

/** Runs of more than this many eqns of one line, with no call between, become a group. */
export const LINE_RUN_MIN = 8;

/** The user calls that led to an eqn, outermost first: `50>block`, `41>layer_norm`. */
export function callPath(source: SourceLoc | null | undefined): string[] {
  if (!source) return [];
  // Frames outermost first: the callers (innermost first on the wire), then the eqn's own line.
  const frames = [...(source.callers ?? [])].reverse().concat([{ line: source.line, function: source.function }]);
  const calls: string[] = [];
  for (let i = 0; i + 1 < frames.length; i++) {
    calls.push(`${frames[i]?.line}>${frames[i + 1]?.function ?? '?'}`);
  }
  return calls;
}

function callLabel(call: string): string {
  // At the first `>` only: a nested function's name has one of its own (`attention.<locals>.heads`).
  const at = call.indexOf('>');
  return `${call.slice(at + 1)} (line ${call.slice(0, at)})`;
}

/** What the eqns are grouped by, indexed by eqn: the user calls that made each (`callPath`) and
 * its name scopes (`scopePath`). */
interface Keys {
  calls: readonly string[][];
  scopes: readonly string[][];
}

/** Group `eqns` (contiguous, in order) by the calls at call depth `depth`; inside each call
 * group, by the name scopes from scope depth `scopeDepth` again (a scope entered inside the
 * function called). */
function groupAt(eqns: readonly GroupEqn[], keys: Keys, scopeDepth: number, depth: number, prefix: string): GroupItem[] {
  const paths = keys.calls;
  const items: GroupItem[] = [];
  const runsOf = new Map<string, number>();
  let i = 0;
  while (i < eqns.length) {
    const eqn = eqns[i] as GroupEqn;
    const call = paths[eqn.index]?.[depth];
    if (call === undefined) {
      items.push({ kind: 'eqn', index: eqn.index });
      i++;
      continue;
    }
    let j = i;
    while (j < eqns.length && paths[(eqns[j] as GroupEqn).index]?.[depth] === call) j++;
    const run = runsOf.get(call) ?? 0;
    runsOf.set(call, run + 1);
    const id = `${prefix}/${call}#${run}`;
    const inner = groupLevel(eqns.slice(i, j), keys, scopeDepth, depth + 1, id);
    items.push({ kind: 'group', id, label: callLabel(call), origin: 'call', first: eqn.index, last: (eqns[j - 1] as GroupEqn).index, items: inner });
    i = j;
  }
  return groupLineRuns(items, eqns, prefix);
}

/** Long runs of direct eqns of one line (no call between) become groups of their own. */
function groupLineRuns(items: GroupItem[], eqns: readonly GroupEqn[], prefix: string): GroupItem[] {
  const lineOf = new Map(eqns.map((e) => [e.index, e.source?.line ?? null]));
  const out: GroupItem[] = [];
  let i = 0;
  while (i < items.length) {
    const item = items[i] as GroupItem;
    const line = item.kind === 'eqn' ? lineOf.get(item.index) : null;
    let j = i;
    if (line != null) {
      while (j < items.length) {
        const next = items[j] as GroupItem;
        if (next.kind !== 'eqn' || lineOf.get(next.index) !== line) break;
        j++;
      }
    }
    if (line != null && j - i > LINE_RUN_MIN) {
      const run = items.slice(i, j) as { kind: 'eqn'; index: number }[];
      const first = (run[0] as { index: number }).index;
      const last = (run[run.length - 1] as { index: number }).index;
      out.push({ kind: 'group', id: `${prefix}/line${line}@${first}`, label: `line ${line}`, origin: 'line', first, last, items: run });
      i = j;
    } else {
      out.push(item);
      i++;
    }
  }
  return out;
}

/** A transform of no named scope (`jvp()`, `transpose(jvp())`): names nothing the user wrote. */
const BARE_TRANSFORM = /^(?:[^()/]+\()+\)+$/;

/** The scopes of a name stack as JAX prints it, outermost first, split at the `/`s outside
 * parentheses: `transpose(jvp(layer3))/attn` → [`transpose(jvp(layer3))`, `attn`]; bare
 * transforms (`jvp()`) are left out. */
export function scopePath(nameStack: string | undefined): string[] {
  if (!nameStack) return [];
  const out: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i <= nameStack.length; i++) {
    const c = nameStack[i];
    if (c === '(') depth++;
    else if (c === ')') depth--;
    else if ((c === '/' && depth === 0) || c === undefined) {
      const part = nameStack.slice(start, i);
      if (part !== '' && !BARE_TRANSFORM.test(part)) out.push(part);
      start = i + 1;
    }
  }
  return out;
}

/** How many calls all of `eqns` share, outermost first (a scope entered inside `block` holds
 * eqns all called through `block`: its call groups start below that call). */
function sharedCalls(eqns: readonly GroupEqn[], paths: readonly string[][]): number {
  if (eqns.length === 0) return 0;
  const head = paths[(eqns[0] as GroupEqn).index] ?? [];
  let d = 0;
  while (d < head.length && eqns.every((e) => paths[e.index]?.[d] === head[d])) d++;
  return d;
}

interface ScopeRun {
  /** the scope at this depth; undefined for eqns grouped by their calls here */
  scope: string | undefined;
  eqns: GroupEqn[];
}

/**
 * `eqns` cut into runs of one name scope at scope depth `depth`. A scope entered inside the
 * call the eqns around it are in (the `named_scope` `jnp.einsum` enters for its spec, in the
 * middle of `attention`) is not cut out of that call here: a scoped run next to an unscoped
 * one made by the same call at call depth `calls` joins it, and its scope is grouped inside the
 * call's group. A run of one eqn is not a scope group either. Runs of scopes that follow one
 * another (the layers of a loop, each in its own scope) stay apart.
 */
function scopeRuns(eqns: readonly GroupEqn[], keys: Keys, depth: number, calls: number): ScopeRun[] {
  const runs: ScopeRun[] = [];
  for (const e of eqns) {
    const scope = keys.scopes[e.index]?.[depth];
    const last = runs[runs.length - 1];
    if (last !== undefined && last.scope === scope) last.eqns.push(e);
    else runs.push({ scope, eqns: [e] });
  }
  const callAt = (e: GroupEqn | undefined): string | undefined => (e === undefined ? undefined : keys.calls[e.index]?.[calls]);
  const inside = (run: ScopeRun, k: number): boolean => {
    if (run.eqns.length === 1) return true;
    const before = runs[k - 1];
    const after = runs[k + 1];
    const first = callAt(run.eqns[0]);
    const last = callAt(run.eqns[run.eqns.length - 1]);
    return (
      (before?.scope === undefined && first !== undefined && callAt(before?.eqns[before.eqns.length - 1]) === first) ||
      (after?.scope === undefined && last !== undefined && callAt(after?.eqns[0]) === last)
    );
  };
  const merged: ScopeRun[] = [];
  runs.forEach((run, k) => {
    const scope = run.scope !== undefined && inside(run, k) ? undefined : run.scope;
    const prev = merged[merged.length - 1];
    if (prev !== undefined && scope === undefined && prev.scope === undefined) prev.eqns.push(...run.eqns);
    else merged.push({ scope, eqns: [...run.eqns] });
  });
  return merged;
}

/** Group `eqns` (contiguous, in order) by their name scopes at scope depth `depth`, and below
 * (or without) a scope by the calls that made them, from call depth `calls` (those all of a
 * scope's eqns share left out: the `block(p, x)` inside `with named_scope('layer3')` is the box
 * `layer3`, not `layer3` around `block (line 50)`). */
function groupLevel(eqns: readonly GroupEqn[], keys: Keys, depth: number, calls: number, prefix: string): GroupItem[] {
  const runs = scopeRuns(eqns, keys, depth, calls);
  if (runs.length === 1 && runs[0]?.scope === undefined) return groupAt(eqns, keys, depth, calls, prefix);
  const items: GroupItem[] = [];
  const runsOf = new Map<string, number>();
  for (const { scope, eqns: run } of runs) {
    const first = (run[0] as GroupEqn).index;
    const last = (run[run.length - 1] as GroupEqn).index;
    if (scope === undefined) {
      // Call-site ids are unique within one `groupAt`: each run outside the scopes has its own prefix.
      items.push(...groupAt(run, keys, depth, calls, `${prefix}@${first}`));
      continue;
    }
    const k = runsOf.get(scope) ?? 0;
    runsOf.set(scope, k + 1);
    const id = `${prefix}/ns:${scope}#${k}`;
    const inner = groupLevel(run, keys, depth + 1, Math.max(calls, sharedCalls(run, keys.calls)), id);
    items.push({ kind: 'group', id, label: scope, origin: 'scope', first, last, items: inner });
  }
  return items;
}

/** Most items a group (or the top level) lists; longer lists are split into chunks of this many. */
export const CHUNK = 500;

/** Split every list of more than `CHUNK` items into groups of `CHUNK` consecutive items
 * (`eqns 500–999`, by the eqn indices they span), all the way down. */
function chunked(items: GroupItem[], prefix: string): GroupItem[] {
  const deep = items.map((it) => (it.kind === 'group' ? { ...it, items: chunked(it.items, it.id) } : it));
  if (deep.length <= CHUNK) return deep;
  const out: GroupItem[] = [];
  const firstOf = (it: GroupItem): number => (it.kind === 'eqn' ? it.index : it.first);
  const lastOf = (it: GroupItem): number => (it.kind === 'eqn' ? it.index : it.last);
  for (let k = 0; k < deep.length; k += CHUNK) {
    const part = deep.slice(k, k + CHUNK);
    const first = firstOf(part[0] as GroupItem);
    const last = lastOf(part[part.length - 1] as GroupItem);
    out.push({ kind: 'group', id: `${prefix}/chunk@${first}`, label: `eqns ${first.toLocaleString('en-US')}–${last.toLocaleString('en-US')}`, origin: 'chunk', first, last, items: part });
  }
  // (past CHUNK² items: chunks of chunks, under ids of their own)
  return chunked(out, `${prefix}/c`);
}

/** The group tree of `eqns` (one jaxpr's, in order, `index` their places 0, 1, ...): name
 * scopes, then user calls, then long runs of one line; long lists chunked. Group ids start with
 * `prefix`. With `inner`, the calls all the eqns share are left out (an inner jaxpr's: the
 * function `jit` or `scan` traced, called from the line of the eqn that holds it, is the box
 * itself). */
function treeOf(eqns: readonly GroupEqn[], prefix: string, inner: boolean): GroupItem[] {
  const paths: string[][] = [];
  const scopes: string[][] = [];
  let scoped = false;
  for (const e of eqns) {
    paths[e.index] = callPath(e.source);
    const path = scopePath(e.name_stack);
    scopes[e.index] = path;
    scoped ||= path.length > 0;
  }
  const keys = { calls: paths, scopes };
  const depth = inner ? sharedCalls(eqns, paths) : 0;
  const tree = scoped ? groupLevel(eqns, keys, 0, depth, prefix) : groupAt(eqns, keys, 0, depth, prefix);
  return chunked(tree, prefix);
}

/** The group tree of `jaxpr`'s top-level eqns: name scopes, then user calls, then long runs of
 * one line; long lists chunked. */
export function groupTree(jaxpr: JaxprView): GroupItem[] {
  return treeOf(jaxpr.eqns, 'g', false);
}

const innerTrees = new WeakMap<ParsedInner['jaxpr'], Map<string, GroupItem[]>>();

/**
 * The group tree of the eqns of `inner`, an inner jaxpr of the eqn at `path` (`0`, `0/jaxpr0/4`),
 * grouped as the top level is (`groupTree`): by the inner eqns' own name stacks, which JAX keeps
 * relative to the jaxpr that holds them (the eqns of `jax.jit(model)` are `layer0/attn`, not
 * under the scope of the call), then by their calls below those they all share. Its items'
 * `index` (and `first`, `last`) are positions in `inner`'s eqns; its group ids are
 * `i:<path>/<param><position>/...` (`i:0/jaxpr0/ns:layer3#0`). Cached per inner jaxpr.
 */
export function innerTree(path: string, inner: ParsedInner): GroupItem[] {
  const prefix = `i:${path}/${inner.param}${inner.position}`;
  let byPrefix = innerTrees.get(inner.jaxpr);
  if (byPrefix === undefined) innerTrees.set(inner.jaxpr, (byPrefix = new Map()));
  const hit = byPrefix.get(prefix);
  if (hit !== undefined) return hit;
  const eqns: GroupEqn[] = inner.jaxpr.eqns.map((e, j) => ({ index: j, source: e.source, name_stack: e.nameStack }));
  const tree = treeOf(eqns, prefix, true);
  byPrefix.set(prefix, tree);
  return tree;
}

/** An argument of many leaves gets one node: more than this many invars in all, and it is grouped. */
export const INVAR_GROUP_MIN = 16;

/** The argument (of `f`) that each invar is a leaf of, from `arg_names` (`params['layers'][3]['w']`
 * belongs to `params`), when the jaxpr has more than `INVAR_GROUP_MIN` invars; arguments of one
 * leaf are not grouped. Null for a jaxpr with few invars or no names. */
export function invarGroups(jaxpr: JaxprView): ({ id: string; name: string; leaves: number } | undefined)[] | null {
  const names = jaxpr.arg_names;
  if (!names || jaxpr.invars.length <= INVAR_GROUP_MIN) return null;
  const argOf = names.map((n) => n.split(/[[.]/, 1)[0] ?? n);
  const counts = new Map<string, number>();
  for (const a of argOf) counts.set(a, (counts.get(a) ?? 0) + 1);
  return argOf.map((a) => ((counts.get(a) ?? 0) > 1 ? { id: `arg:${a}`, name: a, leaves: counts.get(a) ?? 0 } : undefined));
}

/** Longest label of an argument leaf's node (longer keypaths are cut on the left). */
export const LEAF_LABEL_MAX = 24;

/** Most leaves in one row of an expanded argument's box. */
export const LEAF_ROW_MAX = 12;

/** A row of fewer leaves than this takes the next parent's leaves too. */
export const LEAF_ROW_MIN = 4;

/**
 * The label of an invar whose leaf JAX named (`arg_names`): its keypath, dict keys written as
 * attributes (`params['layers'][3]['w_up']` → `params.layers[3].w_up`), without the argument's
 * name when the leaf is drawn in that argument's box (`layers[3].w_up`), and at most
 * `LEAF_LABEL_MAX` characters (cut on the left: the leaf's own key is kept).
 */
export function leafLabel(name: string, inBox: boolean): string {
  let s = name;
  if (inBox) {
    const cut = s.search(/[[.]/);
    if (cut > 0) s = s.slice(cut);
  }
  s = s.replace(/\['([^'\]]*)'\]/g, '.$1').replace(/^\./, '');
  if (s === '') s = name;
  return s.length > LEAF_LABEL_MAX ? `…${s.slice(-(LEAF_LABEL_MAX - 1))}` : s;
}

/** The keypath a leaf's row is keyed by: its own, less its last key (`params['layers'][3]`). */
const parentPath = (name: string): string => name.replace(/(\[[^\]]*\]|\.[^.[]*)$/, '');

/**
 * The layout-only edges that lay an expanded argument's leaves out in rows instead of one row
 * as wide as the argument has leaves (148 parameters: 16,000 units): consecutive leaves of one
 * parent keypath (`params['layers'][3]`) share a row of at most `LEAF_ROW_MAX` (a row of fewer
 * than `LEAF_ROW_MIN` takes the next parent's leaves too, so that parents of one leaf each do
 * not make a column); each leaf sits
 * below a leaf of the row before (the `j`-th below the `j % n`-th of a row of `n`).
 * `leaves`: each box's leaves in order, as node id and keypath.
 */
export function leafRows(leaves: ReadonlyMap<string, { id: string; name: string }[]>): { from: string; to: string }[] {
  const out: { from: string; to: string }[] = [];
  for (const list of leaves.values()) {
    const rows: string[][] = [];
    let key: string | null = null;
    for (const leaf of list) {
      const k = parentPath(leaf.name);
      const row = rows.at(-1);
      // a new parent starts a row unless the row so far is short (single-leaf parents: one row, not a column)
      if (row === undefined || row.length >= LEAF_ROW_MAX || (k !== key && row.length >= LEAF_ROW_MIN)) rows.push([leaf.id]);
      else row.push(leaf.id);
      key = k;
    }
    for (let r = 1; r < rows.length; r++) {
      const above = rows[r - 1] ?? [];
      (rows[r] ?? []).forEach((id, j) => out.push({ from: above[j % above.length] ?? id, to: id }));
    }
  }
  return out;
}

/** Every group id in the tree (to expand all). */
export function allGroupIds(items: readonly GroupItem[]): string[] {
  const out: string[] = [];
  const walk = (list: readonly GroupItem[]): void => {
    for (const it of list) {
      if (it.kind === 'group') {
        out.push(it.id);
        walk(it.items);
      }
    }
  };
  walk(items);
  return out;
}

/** The group ids (outermost first) of the groups of `tree` that hold its eqn `index` (a top-level
 * eqn's index in `groupTree`, an inner eqn's position in `innerTree`). */
export function groupsHolding(tree: readonly GroupItem[], index: number): string[] {
  const out: string[] = [];
  let list: readonly GroupItem[] = tree;
  for (;;) {
    const group = list.find((it): it is EqnGroup => it.kind === 'group' && it.first <= index && index <= it.last);
    if (group === undefined) return out;
    out.push(group.id);
    list = group.items;
  }
}

/** The group id of an eqn with inner jaxprs: `x:4` for top-level eqn 4, `x:4/jaxpr0/2` for the
 * third eqn of its inner jaxpr. `path` is the eqn's place (`4`, `4/jaxpr0/2`). */
export const innerGroupId = (path: string): string => `x:${path}`;

/** The node id of an eqn: `eqn:4`, `eqn:4/jaxpr0/2`. */
export const eqnNodeId = (path: string): string => `eqn:${path}`;

/** The path of the `j`-th eqn of `inner`, an inner jaxpr of the eqn at `path`. */
export const innerPath = (path: string, inner: ParsedInner, j: number): string => `${path}/${inner.param}${inner.position}/${j}`;

export interface VisibleGraph extends DataflowGraph {
  /** the visible node of each top-level eqn: its own node, or the collapsed group that holds it
   * (none for an eqn expanded into its inner jaxprs, or left out) */
  nodeOfEqn: Map<number, string>;
}

/** An eqn's label: its primitive, its `name` (`jit _where`) and the literals it reads. */
function eqnLabel(eqn: AnyEqn): string {
  const literals = eqn.invars.filter((v) => v.literal).map((v) => v.name);
  return [eqn.primitive, ...(eqn.name ? [eqn.name] : []), ...literals].join(' ');
}

type Defs = Map<string, string[]>;

/** Most eqn nodes a graph draws (the layered layout and the windowed drawing keep this many
 * responsive; past it the graph says how many it left out). */
export const MAX_VISIBLE_EQNS = 50_000;

/**
 * The graph with collapsed groups as single nodes: an edge runs from the node that defines a
 * variable to each node that reads it (one edge per pair of nodes, labelled with the first
 * variable and how many more), none inside a collapsed group. Eqn nodes past `maxEqns` visible
 * ones are left out (and counted). An expanded eqn with inner jaxprs is not a node: its inner
 * eqns are, grouped by `innerTree` (collapsed groups one node each, as at the top level), each
 * inner invar reading what the eqn's operand at its position reads, and each of the eqn's
 * results defined by the inner outvars at its position (by every branch of a `cond`). An inner
 * eqn's node carries its own source line (`GraphNode.line`).
 */
export function visibleGraph(
  jaxpr: JaxprView,
  tree: readonly GroupItem[],
  expanded: ReadonlySet<string>,
  maxEqns = MAX_VISIBLE_EQNS,
): VisibleGraph {
  const nodes: GraphNode[] = [];
  const clusters: GraphCluster[] = [];
  const nodeOfEqn = new Map<number, string>();
  let eqnNodes = 0;
  let omitted = 0;
  const byIndex = new Map(jaxpr.eqns.map((e) => [e.index, e]));
  const edgeOf = new Map<string, GraphEdge & { more: number }>();
  const connect = (from: string, to: string, name: string): void => {
    if (from === to) return;
    const key = `${from}→${to}`;
    const seen = edgeOf.get(key);
    if (seen) seen.more++;
    else edgeOf.set(key, { from, to, label: name, more: 0 });
  };
  const read = (defs: Defs, v: { name: string; literal: boolean }): string[] => (v.literal ? [] : (defs.get(v.name) ?? []));
  const withParent = (parent: string | null): { parent?: string } => (parent === null ? {} : { parent });

  const top: Defs = new Map();
  for (const c of jaxpr.constvars) {
    nodes.push({ id: `const:${c.var.name}`, kind: 'constvar', label: c.var.name, sublabel: avalText(c.var.aval), eqnIndex: null, line: null });
    top.set(c.var.name, [`const:${c.var.name}`]);
  }
  const argGroups = invarGroups(jaxpr);
  const leaves = new Map<string, { id: string; name: string }[]>();
  jaxpr.invars.forEach((v, i) => {
    const arg = argGroups?.[i];
    if (arg !== undefined && !expanded.has(arg.id)) {
      const id = `grp:${arg.id}`;
      if (!nodes.some((n) => n.id === id)) {
        nodes.push({ id, kind: 'group', label: `▸ ${arg.name}`, sublabel: `${arg.leaves} leaves`, eqnIndex: null, line: null, groupId: arg.id });
      }
      top.set(v.name, [id]);
      return;
    }
    let parent: string | null = null;
    if (arg !== undefined) {
      parent = `cl:${arg.id}`;
      if (!clusters.some((c) => c.id === parent)) {
        clusters.push({ id: parent, label: `${arg.name} (${arg.leaves} leaves)`, groupId: arg.id, parent: null, eqnIndex: null });
      }
    }
    const id = `in:${v.name}`;
    const name = jaxpr.arg_names?.[i];
    if (name) {
      // JAX's keypath of the leaf as the label; the binder as JAX's text writes it below
      const label = leafLabel(name, parent !== null);
      nodes.push({ id, kind: 'invar', label, sublabel: `${v.name}:${avalText(v.aval)}`, title: `${name} (${v.name}:${avalText(v.aval)})`, eqnIndex: null, line: null, ...withParent(parent) });
      if (parent !== null) leaves.set(parent, [...(leaves.get(parent) ?? []), { id, name }]);
    } else {
      nodes.push({ id, kind: 'invar', label: v.name, sublabel: avalText(v.aval), eqnIndex: null, line: null, ...withParent(parent) });
    }
    top.set(v.name, [id]);
  });

  /** Draw `eqn` (top-level eqn `index`, or an eqn of an inner jaxpr at `path`) reading `defs`. */
  const emit = (eqn: AnyEqn, defs: Defs, index: number, path: string, line: number | null, inner: ParsedInner[] | null, parent: string | null): void => {
    const groupId = innerGroupId(path);
    // An inner jaxpr with no eqns (`custom_vjp_call` of the identity) has nothing to show.
    const expandable = inner !== null && inner.some((sub) => sub.jaxpr.eqns.length > 0);
    if (expandable && expanded.has(groupId)) {
      const box = `cl:${groupId}`;
      clusters.push({ id: box, label: path === String(index) ? `${eqnLabel(eqn)} · eqn ${index}` : eqnLabel(eqn), groupId, parent, eqnIndex: index });
      const results: string[][] = eqn.outvars.map(() => []);
      for (const sub of inner) {
        let where = box;
        if (inner.length > 1) {
          where = `${box}/${sub.param}${sub.position}`;
          clusters.push({ id: where, label: innerLabel(sub, inner), groupId: null, parent: box, eqnIndex: index });
        }
        const scope: Defs = new Map();
        const operands = innerOperands(eqn, sub);
        sub.jaxpr.invars.forEach((v, i) => {
          const at = operands[i];
          const operand = at == null ? undefined : eqn.invars[at];
          scope.set(v.name, operand === undefined ? [] : read(defs, operand));
        });
        for (const c of sub.jaxpr.constvars) {
          const id = `const:${path}/${sub.param}${sub.position}/${c.name}`;
          nodes.push({ id, kind: 'constvar', label: c.name, sublabel: c.type ?? '', eqnIndex: null, line: null, parent: where });
          scope.set(c.name, [id]);
        }
        placeInner(innerTree(path, sub), sub, scope, index, path, where);
        const at = innerResults(eqn, sub);
        sub.jaxpr.outvars.forEach((v, i) => {
          const r = at[i];
          if (r != null) results[r]?.push(...read(scope, v));
        });
      }
      eqn.outvars.forEach((v, r) => {
        if (v.name !== '_') defs.set(v.name, [...new Set(results[r])]);
      });
      return;
    }
    if (eqnNodes >= maxEqns) {
      omitted++;
      return;
    }
    eqnNodes++;
    const id = eqnNodeId(path);
    const isTop = path === String(index);
    nodes.push({
      id,
      kind: 'eqn',
      label: eqnLabel(eqn),
      sublabel: eqn.outTypes.join(', '),
      eqnIndex: index,
      line,
      ...withParent(parent),
      ...(isTop ? {} : { path }),
      ...(expandable ? { expand: groupId } : {}),
    });
    if (isTop) nodeOfEqn.set(index, id);
    for (const v of eqn.invars) for (const from of read(defs, v)) connect(from, id, v.name);
    for (const v of eqn.outvars) if (v.name !== '_') defs.set(v.name, [id]);
  };

  /** Draw the items of `list` (of `innerTree(path, sub)`: groups of `sub`'s eqns, an inner jaxpr
   * of top-level eqn `index`'s eqn at `path`) in box `parent`, reading `defs`: as `place` draws
   * the top level, a collapsed group one node wired to what its eqns read and define. */
  const placeInner = (list: readonly GroupItem[], sub: ParsedInner, defs: Defs, index: number, path: string, parent: string): void => {
    for (const it of list) {
      if (it.kind === 'group' && !expanded.has(it.id)) {
        const id = `grp:${it.id}`;
        const count = it.last - it.first + 1;
        nodes.push({ id, kind: 'group', label: `▸ ${it.label}`, sublabel: `${count.toLocaleString('en-US')} eqns`, eqnIndex: null, line: null, groupId: it.id, parent });
        for (const e of sub.jaxpr.eqns.slice(it.first, it.last + 1)) {
          for (const v of e.invars) for (const from of read(defs, v)) connect(from, id, v.name);
          for (const v of e.outvars) if (v.name !== '_') defs.set(v.name, [id]);
        }
        continue;
      }
      if (it.kind === 'group') {
        const box = `cl:${it.id}`;
        clusters.push({ id: box, label: it.label, groupId: it.id, parent, eqnIndex: null });
        placeInner(it.items, sub, defs, index, path, box);
        continue;
      }
      const e = sub.jaxpr.eqns[it.index];
      if (e !== undefined) emit(parsedEqn(e), defs, index, innerPath(path, sub, it.index), e.line, e.inner, parent);
    }
  };

  const place = (list: readonly GroupItem[], parent: string | null): void => {
    for (const it of list) {
      if (it.kind === 'group' && !expanded.has(it.id)) {
        const id = `grp:${it.id}`;
        const count = it.last - it.first + 1;
        nodes.push({ id, kind: 'group', label: `▸ ${it.label}`, sublabel: `${count.toLocaleString('en-US')} eqns`, eqnIndex: null, line: null, groupId: it.id, ...withParent(parent) });
        for (let k = it.first; k <= it.last; k++) {
          nodeOfEqn.set(k, id);
          const eqn = byIndex.get(k);
          if (eqn === undefined) continue;
          for (const v of eqn.invars) for (const from of read(top, v)) connect(from, id, v.name);
          for (const v of eqn.outvars) if (v.name !== '_') top.set(v.name, [id]);
        }
        continue;
      }
      if (it.kind === 'group') {
        const box = `cl:${it.id}`;
        clusters.push({ id: box, label: it.label, groupId: it.id, parent, eqnIndex: null });
        place(it.items, box);
        continue;
      }
      const eqn = byIndex.get(it.index);
      if (eqn === undefined) continue;
      emit(topEqn(eqn), top, eqn.index, String(eqn.index), eqn.source?.line ?? null, innerOfTop(jaxpr, eqn), parent);
    }
  };
  place(tree, null);

  jaxpr.outvars.forEach((v, i) => {
    // An outvar that no drawn node defines (its eqn left out past `maxEqns`) is left out too; one
    // an expanded eqn passes through from a literal (a scan's ys that are its carry in) is drawn.
    if (!v.literal && !top.has(v.name)) return;
    const from = read(top, v);
    const id = `out:${i}`;
    nodes.push({ id, kind: 'outvar', label: v.literal ? `out[${i}] = ${v.name}` : `out[${i}]`, sublabel: avalText(v.aval), eqnIndex: null, line: null });
    for (const f of from) connect(f, id, v.name);
  });
  // An eqn node reads the same variable twice (`mul a a`): one edge, labelled once.
  const edges = [...edgeOf.values()].map(({ from, to, label, more }) => ({
    from,
    to,
    label: more > 0 && from.startsWith('grp:') ? `${label} +${more}` : label,
  }));
  const stubbed = stubArgGroups(nodes, edges);
  const layoutEdges = leafRows(leaves);
  return { ...stubbed, clusters: nonEmpty(clusters, stubbed.nodes), omittedEqns: omitted, nodeOfEqn, ...(layoutEdges.length > 0 ? { layoutEdges } : {}) };
}

/** A collapsed argument read by more nodes than this is marked on its readers instead of wired to them. */
export const ARG_STUB_FANOUT = 4;

/**
 * A collapsed argument of many leaves (`params`) that many nodes read keeps its one node (to
 * expand it) but not its edges: each reader is marked as reading it (`GraphNode.reads`). The
 * readers of a model's weights run down the whole graph; dagre draws every edge from the top to
 * them as a chain of bends, which makes the graph thousands of pixels wide and its layout ten
 * times slower, and a copy of the argument beside each reader pulls every layer sideways (dagre
 * centres a node between its parents), so that the layers run down a diagonal.
 */
function stubArgGroups(nodes: GraphNode[], edges: GraphEdge[]): { nodes: GraphNode[]; edges: GraphEdge[] } {
  const readers = new Map<string, number>();
  for (const e of edges) if (e.from.startsWith('grp:arg:')) readers.set(e.from, (readers.get(e.from) ?? 0) + 1);
  const stub = new Set([...readers].filter(([, n]) => n > ARG_STUB_FANOUT).map(([id]) => id));
  if (stub.size === 0) return { nodes, edges };
  const nameOf = new Map(nodes.map((n) => [n.id, n.label.replace(/^▸ /, '')]));
  const reads = new Map<string, string[]>();
  const kept: GraphEdge[] = [];
  for (const e of edges) {
    if (!stub.has(e.from)) {
      kept.push(e);
      continue;
    }
    const list = reads.get(e.to) ?? [];
    list.push(nameOf.get(e.from) ?? e.from);
    reads.set(e.to, list);
  }
  return { nodes: nodes.map((n) => (reads.has(n.id) ? { ...n, reads: reads.get(n.id) } : n)), edges: kept };
}

/** How many eqn nodes `visibleGraph` draws for `expanded` when nothing is left out: a collapsed
 * group draws none, an expanded eqn its inner eqns (those of every inner jaxpr), all the way down. */
export function visibleEqnCount(jaxpr: JaxprView, tree: readonly GroupItem[], expanded: ReadonlySet<string>): number {
  const byIndex = new Map(jaxpr.eqns.map((e) => [e.index, e]));
  const ofEqn = (path: string, inner: readonly ParsedInner[] | null): number => {
    if (inner === null || !inner.some((sub) => sub.jaxpr.eqns.length > 0) || !expanded.has(innerGroupId(path))) return 1;
    let n = 0;
    for (const sub of inner) n += ofInner(innerTree(path, sub), sub, path);
    return n;
  };
  const ofInner = (list: readonly GroupItem[], sub: ParsedInner, path: string): number => {
    let n = 0;
    for (const it of list) {
      if (it.kind === 'group') {
        if (expanded.has(it.id)) n += ofInner(it.items, sub, path);
        continue;
      }
      const e = sub.jaxpr.eqns[it.index];
      if (e !== undefined) n += ofEqn(innerPath(path, sub, it.index), e.inner);
    }
    return n;
  };
  const walk = (list: readonly GroupItem[]): number => {
    let n = 0;
    for (const it of list) {
      if (it.kind === 'group') {
        if (expanded.has(it.id)) n += walk(it.items);
        continue;
      }
      const eqn = byIndex.get(it.index);
      if (eqn !== undefined) n += ofEqn(String(eqn.index), innerOfTop(jaxpr, eqn));
    }
    return n;
  };
  return walk(tree);
}

/** The clusters that hold a node (dagre cannot lay out an empty one: an expanded group whose
 * eqns were all left out, an inner jaxpr with no eqns). */
function nonEmpty(clusters: readonly GraphCluster[], nodes: readonly GraphNode[]): GraphCluster[] {
  const parentOf = new Map(clusters.map((c) => [c.id, c.parent]));
  const held = new Set<string>();
  for (const n of nodes) {
    let at: string | null | undefined = n.parent;
    while (at != null && !held.has(at)) {
      held.add(at);
      at = parentOf.get(at);
    }
  }
  return clusters.filter((c) => held.has(c.id));
}
