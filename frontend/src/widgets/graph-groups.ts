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
 */
import type { EqnView, JaxprView, SourceLoc } from '../protocol';
import { avalText } from './format';
import type { DataflowGraph, GraphEdge, GraphNode } from './dataflow-graph';

export interface EqnGroup {
  kind: 'group';
  /** unique in the tree: the path of call sites and run numbers (`g:50>block#0/41>layer_norm#2`) */
  id: string;
  /** what the group is: `block (line 50)`, or `line 17` for a run of one line */
  label: string;
  /** indices of the first and last eqn it holds (its eqns are contiguous) */
  first: number;
  last: number;
  items: GroupItem[];
}

export type GroupItem = EqnGroup | { kind: 'eqn'; index: number };

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
  const [line, fn] = call.split('>');
  return `${fn} (line ${line})`;
}

/** Group `eqns` (contiguous, in order) at call depth `depth`. */
function groupAt(eqns: readonly EqnView[], paths: readonly string[][], depth: number, prefix: string): GroupItem[] {
  const items: GroupItem[] = [];
  const runsOf = new Map<string, number>();
  let i = 0;
  while (i < eqns.length) {
    const eqn = eqns[i] as EqnView;
    const call = paths[eqn.index]?.[depth];
    if (call === undefined) {
      items.push({ kind: 'eqn', index: eqn.index });
      i++;
      continue;
    }
    let j = i;
    while (j < eqns.length && paths[(eqns[j] as EqnView).index]?.[depth] === call) j++;
    const run = runsOf.get(call) ?? 0;
    runsOf.set(call, run + 1);
    const id = `${prefix}/${call}#${run}`;
    const inner = groupAt(eqns.slice(i, j), paths, depth + 1, id);
    items.push({ kind: 'group', id, label: callLabel(call), first: eqn.index, last: (eqns[j - 1] as EqnView).index, items: inner });
    i = j;
  }
  return groupLineRuns(items, eqns, prefix);
}

/** Long runs of direct eqns of one line (no call between) become groups of their own. */
function groupLineRuns(items: GroupItem[], eqns: readonly EqnView[], prefix: string): GroupItem[] {
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
      out.push({ kind: 'group', id: `${prefix}/line${line}@${first}`, label: `line ${line}`, first, last, items: run });
      i = j;
    } else {
      out.push(item);
      i++;
    }
  }
  return out;
}

/** The group tree of `jaxpr`'s top-level eqns. */
export function groupTree(jaxpr: JaxprView): GroupItem[] {
  const paths: string[][] = [];
  for (const e of jaxpr.eqns) paths[e.index] = callPath(e.source);
  return groupAt(jaxpr.eqns, paths, 0, 'g');
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

export interface VisibleGraph extends DataflowGraph {
  /** the visible node of each eqn: its own node, or the collapsed group that holds it */
  nodeOfEqn: Map<number, string>;
}

/**
 * The graph with collapsed groups as single nodes: an edge runs from the node that defines a
 * variable to each node that reads it (one edge per pair of nodes, labelled with the first
 * variable and how many more), none inside a collapsed group. Eqn nodes past `maxEqns` visible
 * ones are left out (and counted).
 */
export function visibleGraph(
  jaxpr: JaxprView,
  tree: readonly GroupItem[],
  expanded: ReadonlySet<string>,
  maxEqns = 300,
): VisibleGraph {
  const nodes: GraphNode[] = [];
  const nodeOfEqn = new Map<number, string>();
  let eqnNodes = 0;
  let omitted = 0;
  const byIndex = new Map(jaxpr.eqns.map((e) => [e.index, e]));
  const place = (list: readonly GroupItem[]): void => {
    for (const it of list) {
      if (it.kind === 'group' && !expanded.has(it.id)) {
        const id = `grp:${it.id}`;
        const count = it.last - it.first + 1;
        nodes.push({ id, kind: 'group', label: `▸ ${it.label}`, sublabel: `${count.toLocaleString('en-US')} eqns`, eqnIndex: null, line: null, groupId: it.id });
        for (let k = it.first; k <= it.last; k++) nodeOfEqn.set(k, id);
        continue;
      }
      if (it.kind === 'group') {
        place(it.items);
        continue;
      }
      const eqn = byIndex.get(it.index);
      if (eqn === undefined) continue;
      if (eqnNodes >= maxEqns) {
        omitted++;
        continue;
      }
      eqnNodes++;
      const id = `eqn:${eqn.index}`;
      const literals = eqn.invars.filter((v) => v.literal).map((v) => v.name);
      const label = literals.length ? `${eqn.primitive} ${literals.join(' ')}` : eqn.primitive;
      nodes.push({ id, kind: 'eqn', label, sublabel: eqn.outvars.map((v) => avalText(v.aval)).join(', '), eqnIndex: eqn.index, line: eqn.source?.line ?? null });
      nodeOfEqn.set(eqn.index, id);
    }
  };
  const definedBy = new Map<string, string>();
  for (const c of jaxpr.constvars) {
    nodes.push({ id: `const:${c.var.name}`, kind: 'constvar', label: c.var.name, sublabel: avalText(c.var.aval), eqnIndex: null, line: null });
    definedBy.set(c.var.name, `const:${c.var.name}`);
  }
  const argGroups = invarGroups(jaxpr);
  jaxpr.invars.forEach((v, i) => {
    const arg = argGroups?.[i];
    if (arg !== undefined && !expanded.has(arg.id)) {
      const id = `grp:${arg.id}`;
      if (!nodes.some((n) => n.id === id)) {
        nodes.push({ id, kind: 'group', label: `▸ ${arg.name}`, sublabel: `${arg.leaves} leaves`, eqnIndex: null, line: null, groupId: arg.id });
      }
      definedBy.set(v.name, id);
      return;
    }
    nodes.push({ id: `in:${v.name}`, kind: 'invar', label: v.name, sublabel: avalText(v.aval), eqnIndex: null, line: null });
    definedBy.set(v.name, `in:${v.name}`);
  });
  place(tree);
  const edgeOf = new Map<string, GraphEdge & { more: number }>();
  const connect = (from: string, to: string, name: string): void => {
    if (from === to) return;
    const key = `${from}→${to}`;
    const seen = edgeOf.get(key);
    if (seen) seen.more++;
    else edgeOf.set(key, { from, to, label: name, more: 0 });
  };
  for (const eqn of jaxpr.eqns) {
    const to = nodeOfEqn.get(eqn.index);
    if (to !== undefined) {
      for (const v of eqn.invars) {
        const from = v.literal ? undefined : definedBy.get(v.name);
        if (from !== undefined) connect(from, to, v.name);
      }
    }
    for (const v of eqn.outvars) {
      if (v.name !== '_' && to !== undefined) definedBy.set(v.name, to);
    }
  }
  jaxpr.outvars.forEach((v, i) => {
    const from = v.literal ? undefined : definedBy.get(v.name);
    if (from === undefined && !v.literal) return;
    const id = `out:${i}`;
    nodes.push({ id, kind: 'outvar', label: v.literal ? `out[${i}] = ${v.name}` : `out[${i}]`, sublabel: avalText(v.aval), eqnIndex: null, line: null });
    if (from !== undefined) connect(from, id, v.name);
  });
  // An eqn node reads the same variable twice (`mul a a`): one edge, labelled once.
  const edges = [...edgeOf.values()].map(({ from, to, label, more }) => ({
    from,
    to,
    label: more > 0 && from.startsWith('grp:') ? `${label} +${more}` : label,
  }));
  return { nodes, edges, omittedEqns: omitted, nodeOfEqn };
}
