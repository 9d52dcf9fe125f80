/**
 * The pytree exhibit's view model: pure functions from the run's events to what the view shows.
 *
 * The probe emits one `pytree_node_visited` per node of `args` in JAX's visit order, then
 * `pytree_flattened` (name "args"); with `other`, the same for it and `treedefs_compared`; then
 * `jaxpr_staged` (f's jaxpr) and `pytree_called` (jit vs eager outputs). The tree pictures are
 * drawn from all the run's visits; the stepper's cursor (or a node the user picked) decides the
 * current node, and nodes after it are still "pending".
 */
import type { Event, EventOf, JaxprStaged, RunFailed } from '../../frontend/src/protocol';
import { eventsOf, lastOf } from '../../frontend/src/widgets/events';

export type PytreeNodeVisited = EventOf<'pytree_node_visited'>;
export type PytreeFlattened = EventOf<'pytree_flattened'>;
export type TreedefsCompared = EventOf<'treedefs_compared'>;
export type PytreeCalled = EventOf<'pytree_called'>;

/** A node the user picked in a tree picture or with the stepper's buttons. */
export interface Pick {
  tree: string;
  index: number;
}

export interface PytreeModel {
  /** every visit of `args` / `other` (the full tree pictures) */
  argsVisits: PytreeNodeVisited[];
  otherVisits: PytreeNodeVisited[];
  /** visits reached by the stepper's cursor, in order */
  reached: PytreeNodeVisited[];
  /** the node being visited: the picked one, else the last one reached */
  current: PytreeNodeVisited | undefined;
  args: PytreeFlattened | undefined;
  other: PytreeFlattened | undefined;
  compared: TreedefsCompared | undefined;
  jaxpr: JaxprStaged | undefined;
  called: PytreeCalled | undefined;
  failure: RunFailed | undefined;
}

/** Derive the model from the events up to the cursor and all the run's events. */
export function pytreeModel(events: readonly Event[], allEvents: readonly Event[], picked?: Pick | null): PytreeModel {
  const all = eventsOf(allEvents, 'pytree_node_visited');
  const reached = eventsOf(events, 'pytree_node_visited');
  const pickedVisit = picked ? all.find((v) => v.tree === picked.tree && v.index === picked.index) : undefined;
  const flattened = eventsOf(allEvents, 'pytree_flattened');
  return {
    argsVisits: all.filter((v) => v.tree === 'args'),
    otherVisits: all.filter((v) => v.tree === 'other'),
    reached,
    current: pickedVisit ?? reached.at(-1),
    args: flattened.find((f) => f.name === 'args'),
    other: flattened.find((f) => f.name === 'other'),
    compared: lastOf(allEvents, 'treedefs_compared'),
    jaxpr: lastOf(allEvents, 'jaxpr_staged'),
    called: lastOf(allEvents, 'pytree_called'),
    failure: lastOf(allEvents, 'run_failed'),
  };
}

/** The node's own key: the last entry of its key path (the root is shown as `name`). */
export function ownKey(visit: PytreeNodeVisited, visits: readonly PytreeNodeVisited[], name: string): string {
  if (visit.parent === null) return name;
  const parent = visits.find((v) => v.index === visit.parent);
  if (!parent) return visit.keypath;
  return visit.keypath.slice(parent.keypath.length);
}

export function isLeaf(visit: PytreeNodeVisited): boolean {
  return visit.leaf_index !== null;
}

/** Where a node stands for the stepper: already visited, being visited, or not yet. */
export type VisitState = 'done' | 'current' | 'pending';

/** The state of `visit`, given the current node and the visits reached so far. */
export function visitState(
  visit: PytreeNodeVisited,
  current: PytreeNodeVisited | undefined,
  reached: readonly PytreeNodeVisited[],
): VisitState {
  if (current && current.tree === visit.tree && current.index === visit.index) return 'current';
  if (current && current.tree === visit.tree) return visit.index < current.index ? 'done' : 'pending';
  if (current && current.tree === 'other' && visit.tree === 'args') return 'done';
  return reached.some((r) => r.tree === visit.tree && r.index === visit.index) ? 'done' : 'pending';
}

/** Whether `keypath` lies at or below the first difference `diffPath` (highlighted in red). */
export function inDiff(keypath: string, diffPath: string | null | undefined): boolean {
  if (diffPath === null || diffPath === undefined) return false;
  return keypath === diffPath || (keypath.startsWith(diffPath) && keypath.length > diffPath.length);
}

const REGISTRATION_TEXT: Record<string, string> = {
  leaf: 'not registered: a leaf',
  None: 'None: a node with no children',
  builtin: 'built-in container',
  namedtuple: 'namedtuple (built in)',
  is_leaf: 'is_leaf said True: a leaf',
  register_pytree_node: 'register_pytree_node',
  register_pytree_with_keys: 'register_pytree_with_keys',
  register_pytree_node_class: '@register_pytree_node_class',
  register_pytree_with_keys_class: '@register_pytree_with_keys_class',
  register_dataclass: 'register_dataclass',
  register_static: 'register_static (no children)',
};

/** A short human label for a registration kind. */
export function registrationText(registration: string): string {
  return REGISTRATION_TEXT[registration] ?? registration;
}

/** One sentence: what JAX did at this node. */
export function visitSentence(visit: PytreeNodeVisited): string {
  const where = visit.keypath === '' ? 'the root' : visit.keypath;
  const asked =
    visit.is_leaf_result === null ? '' : `is_leaf(${where}) → ${visit.is_leaf_result ? 'True' : 'False'}, asked first. `;
  if (visit.registration === 'is_leaf') {
    return `${asked}So ${where} (${visit.node_type}) is leaf #${visit.leaf_index}; JAX does not look inside it.`;
  }
  if (visit.leaf_index !== null) {
    return `${asked}${visit.node_type} is not a registered pytree type: ${where} is leaf #${visit.leaf_index} (${visit.aval ?? visit.node_type}).`;
  }
  if (visit.registration === 'None') {
    return `${asked}None is a pytree node with no children: it adds no leaf, only a None in the treedef.`;
  }
  const n = visit.children.length;
  const kids = n === 0 ? 'no children' : `${n} ${n === 1 ? 'child' : 'children'}: ${visit.children.join(' ')}`;
  const sorted = visit.node_type === 'dict' && n > 1 ? ' (dict keys sorted)' : '';
  const aux = visit.aux !== null ? ` Aux data kept in the treedef: ${visit.aux}.` : '';
  return `${asked}${visit.node_type} is ${registrationText(visit.registration)}; JAX flattens it into ${kids}${sorted}, visited next in this order.${aux}`;
}

/** Step to the previous/next visit across both trees (args, then other). */
export function neighbour(
  visits: readonly PytreeNodeVisited[],
  current: PytreeNodeVisited | undefined,
  delta: number,
): Pick | null {
  if (visits.length === 0) return null;
  const at = current ? visits.findIndex((v) => v.tree === current.tree && v.index === current.index) : -1;
  const next = Math.min(Math.max(at + delta, 0), visits.length - 1);
  const v = visits[next];
  return v ? { tree: v.tree, index: v.index } : null;
}

/** The leaf rows of a flattened container: index, key path, aval, type, preview. */
export interface LeafRow {
  index: number;
  keypath: string;
  aval: string;
  type: string;
  preview: string;
}

export function leafRows(flat: PytreeFlattened): LeafRow[] {
  return flat.keypaths.map((keypath, index) => ({
    index,
    keypath,
    aval: flat.avals[index] ?? '',
    type: flat.leaf_types[index] ?? '',
    preview: flat.leaves[index]?.preview ?? '…',
  }));
}

/** The jaxpr invar names, one per leaf (when there are as many invars as leaves). */
export function invarNames(jaxpr: JaxprStaged | undefined, flat: PytreeFlattened | undefined): string[] {
  if (!jaxpr || !flat || jaxpr.jaxpr.invars.length !== flat.num_leaves) return [];
  return jaxpr.jaxpr.invars.map((v) => v.name);
}

/** How many of the container's nodes the tree picture leaves out: the probe sends the first
 * MAX_VISITS visits (400) while `flat.num_nodes` counts them all; 0 when all are drawn. */
export function visitsOmitted(visits: readonly PytreeNodeVisited[], flat: PytreeFlattened | undefined): number {
  return flat ? Math.max(flat.num_nodes - visits.length, 0) : 0;
}
