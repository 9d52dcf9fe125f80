/**
 * Search over the dataflow graph of a jaxpr: the eqns a query names, at any depth (the eqns of
 * inner jaxprs too), and the groups to expand to show each one. A query is a source line
 * (`line 26`, `line:26` or `26`: the top-level eqns JAX recorded at that user line), or a word:
 * the eqns of that primitive or `name` (`dot_general`, `_where`), or that define or read that
 * variable (`gi`), or the eqns JAX traced inside that `jax.named_scope` (or Flax module) at any
 * depth (`layer3`, `attn`; a path of scopes, `layer3/attn`; a scope under a transform,
 * `transpose(jvp(layer3))`, answers to `layer3`): the hits then open that scope's group; a
 * word that names none of these finds the primitives, names and scopes that contain it (`dot`
 * finds `dot_general`). A search holds while its view grows by eqn ranges (design 0045,
 * `searchOn`): it runs again on the grown view, so its hits include the eqns that arrived.
 */
import type { JaxprView } from '../protocol';
import type { ParsedInner } from './inner-jaxprs';
import { innerOfTop, parsedEqn, topEqn, type AnyEqn } from './inner-jaxprs';
import { eqnNodeId, groupsHolding, innerGroupId, innerPath, innerTree, scopePath, visibleEqnCount, type GroupItem } from './graph-groups';
import { grownFrom } from '../store/eqn-ranges';

export interface GraphHit {
  /** the top-level eqn that is or holds the hit */
  eqnIndex: number;
  /** the hit's place: `4` for top-level eqn 4, `4/jaxpr0/2` for an eqn of its inner jaxpr */
  path: string;
  /** its node id once shown (`eqn:4/jaxpr0/2`) */
  nodeId: string;
  /** the groups that hold it, outermost first: scope, call-site and line groups, then the eqns
   * with inner jaxprs it is inside (`x:4`), each followed by the groups inside that eqn's inner
   * jaxpr that hold it (`i:4/jaxpr0/ns:layer3#0`) */
  groups: string[];
}

interface Candidate {
  eqn: AnyEqn;
  index: number;
  path: string;
  line: number | null;
  groups: string[];
  /** names an inner jaxpr's binders share with its eqn's operands and results (JAX prints a
   * `jit`'s inner binders with its eqn's names): not this eqn's own variables */
  aliases: ReadonlySet<string>;
  /** the name scopes it was traced in, outermost first, lower-cased and bare (`layer3` for
   * `transpose(jvp(layer3))`): those of the eqns holding it, then its own */
  scopes: readonly string[];
  /** the scopes of the eqn holding it (none at the top level): a scope that already holds
   * that eqn finds that eqn, not the inner eqns of a `jnp` helper it calls */
  outer: readonly string[];
}

/** A scope as the user named it, lower-cased: `transpose(jvp(layer3))` → `layer3`. */
const bareScope = (scope: string): string => scope.replace(/^(?:[^()]*\()+/, '').replace(/\)+$/, '').toLowerCase();

const scopesOf = (nameStack: string | undefined): string[] => scopePath(nameStack).map(bareScope);

/** Whether `scopes` hold the path `want` (consecutive scopes, `['layer3', 'attn']`), each
 * scope equal to its part (`exact`) or containing it. */
function inScope(scopes: readonly string[], want: readonly string[], exact: boolean): boolean {
  const same = (scope: string | undefined, part: string): boolean => scope !== undefined && (exact ? scope === part : scope.includes(part));
  for (let i = 0; i + want.length <= scopes.length; i++) {
    if (want.every((part, k) => same(scopes[i + k], part))) return true;
  }
  return false;
}

/** Every eqn of `jaxpr`, top-level and inner, in order (each inner one after the eqn holding it). */
function* candidates(jaxpr: JaxprView, tree: readonly GroupItem[]): Generator<Candidate> {
  function* inside(
    eqn: AnyEqn,
    path: string,
    inner: readonly ParsedInner[] | null,
    index: number,
    groups: string[],
    scopes: readonly string[],
  ): Generator<Candidate> {
    if (!inner) return;
    const aliases = new Set([...eqn.invars, ...eqn.outvars].map((v) => v.name));
    for (const sub of inner) {
      const tree = innerTree(path, sub);
      for (const [j, e] of sub.jaxpr.eqns.entries()) {
        const at = innerPath(path, sub, j);
        const any = parsedEqn(e);
        const held = [...groups, innerGroupId(path), ...groupsHolding(tree, j)];
        // JAX keeps an inner eqn's name stack relative to the jaxpr that holds it.
        const within = [...scopes, ...scopesOf(e.nameStack)];
        yield { eqn: any, index, path: at, line: null, groups: held, aliases, scopes: within, outer: scopes };
        yield* inside(any, at, e.inner, index, held, within);
      }
    }
  }
  for (const e of jaxpr.eqns) {
    const eqn = topEqn(e);
    const groups = groupsHolding(tree, e.index);
    const path = String(e.index);
    const scopes = scopesOf(e.name_stack);
    yield { eqn, index: e.index, path, line: e.source?.line ?? null, groups, aliases: new Set(), scopes, outer: [] };
    if (e.inner_jaxprs.length > 0) yield* inside(eqn, path, innerOfTop(jaxpr, e), e.index, groups, scopes);
  }
}

const hit = (c: Candidate): GraphHit => ({ eqnIndex: c.index, path: c.path, nodeId: eqnNodeId(c.path), groups: c.groups });

/** The eqns `query` finds in `jaxpr` (grouped as `tree`), in order; [] for a blank query. */
export function searchGraph(jaxpr: JaxprView, tree: readonly GroupItem[], query: string): GraphHit[] {
  const q = query.trim();
  if (q === '') return [];
  const line = /^(?:line\s*:?\s*)?(\d+)$/i.exec(q);
  if (line) {
    const n = Number(line[1]);
    return [...candidates(jaxpr, tree)].filter((c) => c.line === n).map(hit);
  }
  const word = q.toLowerCase();
  const scope = word.split('/').map(bareScope).filter((part) => part !== '');
  // An eqn in the scope whose holder is not (an inner eqn's own scope counts; one it only
  // inherits from the eqn holding it does not).
  const scoped = (c: Candidate, exact: boolean): boolean =>
    scope.length > 0 && inScope(c.scopes, scope, exact) && !inScope(c.outer, scope, exact);
  const all = [...candidates(jaxpr, tree)];
  const own = (c: Candidate, v: { name: string; literal: boolean }): boolean => !v.literal && v.name === q && !c.aliases.has(v.name);
  const exact = all.filter(
    (c) =>
      c.eqn.primitive.toLowerCase() === word ||
      c.eqn.name?.toLowerCase() === word ||
      c.eqn.outvars.some((v) => own(c, v)) ||
      c.eqn.invars.some((v) => own(c, v)) ||
      scoped(c, true),
  );
  if (exact.length > 0) return exact.map(hit);
  return all
    .filter(
      (c) =>
        c.eqn.primitive.toLowerCase().includes(word) ||
        (c.eqn.name?.toLowerCase().includes(word) ?? false) ||
        scoped(c, false),
    )
    .map(hit);
}

/** A search entered in the graph: its query, the view it ran on, its hits there and the one selected. */
export interface GraphSearch {
  jaxpr: JaxprView;
  query: string;
  hits: GraphHit[];
  /** the selected hit's index in `hits` */
  at: number;
}

/** The search `query` on `jaxpr` (grouped as `tree`), its first hit selected. */
export function newSearch(jaxpr: JaxprView, tree: readonly GroupItem[], query: string): GraphSearch {
  return { jaxpr, query, hits: searchGraph(jaxpr, tree, query), at: 0 };
}

/**
 * `search` as it stands for `jaxpr` (grouped as `tree`), the view the graph shows now: itself
 * when it ran on that view; when `jaxpr` is that view grown by eqn ranges (`grownFrom`: a new
 * object after each range), the same query run on the grown view, so that its hits include the
 * eqns that arrived, with the same hit selected (the first, should it be gone: a word that only
 * partly matched may now name a primitive exactly); null for another program, or no search.
 */
export function searchOn(search: GraphSearch | null, jaxpr: JaxprView, tree: readonly GroupItem[]): GraphSearch | null {
  if (search === null || search.jaxpr === jaxpr) return search;
  if (!grownFrom(search.jaxpr, jaxpr)) return null;
  const grown = newSearch(jaxpr, tree, search.query);
  const was = search.hits[search.at]?.path;
  return { ...grown, at: Math.max(0, grown.hits.findIndex((h) => h.path === was)) };
}

/**
 * The groups to expand to show `hits`: those of the first (added to `expanded`, or alone when
 * the two together would draw more than `budget` eqns, so that the graph leaves no hit out),
 * then those of each next hit while the eqns drawn stay within `budget` (a search for `mul` in
 * a 12-layer model must not open every layer at once). The caller asks again for each hit the
 * user steps to.
 */
export function groupsToShow(
  jaxpr: JaxprView,
  tree: readonly GroupItem[],
  hits: readonly GraphHit[],
  expanded: ReadonlySet<string>,
  budget: number,
): Set<string> {
  const [first, ...rest] = hits;
  if (first === undefined) return new Set(expanded);
  // What the user opened stays open when it is over the budget already ("expand all" of a
  // large program): stepping through hits adds the hit's groups, never collapses their graph.
  if (visibleEqnCount(jaxpr, tree, expanded) > budget) return new Set([...expanded, ...first.groups]);
  let out = new Set([...expanded, ...first.groups]);
  if (visibleEqnCount(jaxpr, tree, out) > budget) out = new Set(first.groups);
  for (const hit of rest) {
    if (hit.groups.every((g) => out.has(g))) continue;
    const more = new Set([...out, ...hit.groups]);
    if (visibleEqnCount(jaxpr, tree, more) > budget) break;
    out = more;
  }
  return out;
}
