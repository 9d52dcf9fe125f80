/**
 * The links between the user's source lines, the staged jaxpr's eqns and the StableHLO op lines,
 * and what a shared `Selection` highlights in each.
 *
 * Eqn -> line comes from `EqnView.source` (JAX's `source_info`); op line -> eqns and op line ->
 * line from `ModuleLowered.op_links` (the ops' debug locations). The maps are built once per run
 * and queried on every click.
 */
import type { Selection } from '../exhibit-api';
import type { EqnView, OpLink } from '../protocol';

export interface LinkMaps {
  /** eqn index -> its user line */
  eqnLine: Map<number, number>;
  /** user line -> eqn indices on it, ascending */
  lineEqns: Map<number, number[]>;
  /** eqn index -> StableHLO op lines (0-based) lowered from it, ascending */
  eqnOps: Map<number, number[]>;
  /** StableHLO op line (0-based) -> the link JAX's debug location gives it */
  opLink: Map<number, OpLink>;
  /** user line -> StableHLO op lines whose debug location is that line, ascending */
  lineOps: Map<number, number[]>;
}

function push(map: Map<number, number[]>, key: number, value: number): void {
  const list = map.get(key);
  if (list === undefined) map.set(key, [value]);
  else if (!list.includes(value)) list.push(value);
}

const ascending = (map: Map<number, number[]>): Map<number, number[]> => {
  for (const list of map.values()) list.sort((a, b) => a - b);
  return map;
};

/** Build the maps from the staged jaxpr's eqns and (when lowered) the op links. */
export function buildLinkMaps(eqns: readonly EqnView[], opLinks: readonly OpLink[] = []): LinkMaps {
  const eqnLine = new Map<number, number>();
  const lineEqns = new Map<number, number[]>();
  for (const e of eqns) {
    if (e.source) {
      eqnLine.set(e.index, e.source.line);
      push(lineEqns, e.source.line, e.index);
    }
  }
  const eqnOps = new Map<number, number[]>();
  const opLink = new Map<number, OpLink>();
  const lineOps = new Map<number, number[]>();
  for (const link of opLinks) {
    opLink.set(link.line, link);
    for (const i of link.eqn_indices) push(eqnOps, i, link.line);
    if (link.source) push(lineOps, link.source.line, link.line);
  }
  return { eqnLine, lineEqns: ascending(lineEqns), eqnOps: ascending(eqnOps), opLink, lineOps: ascending(lineOps) };
}

const uniqSorted = (xs: Iterable<number>): number[] => [...new Set(xs)].sort((a, b) => a - b);

/** The selection made by clicking eqn `index`: its source line and the ops lowered from it. */
export function selectEqn(maps: LinkMaps, index: number): Selection {
  const line = maps.eqnLine.get(index);
  return {
    origin: 'eqn',
    lines: line === undefined ? [] : [line],
    eqnIndices: [index],
    opLines: maps.eqnOps.get(index) ?? [],
  };
}

/** The selection made by clicking StableHLO op line `opLine`: its eqns and its source line. */
export function selectOp(maps: LinkMaps, opLine: number): Selection {
  const link = maps.opLink.get(opLine);
  const eqnIndices = uniqSorted(link?.eqn_indices ?? []);
  const lines = link?.source
    ? [link.source.line]
    : uniqSorted(eqnIndices.flatMap((i) => (maps.eqnLine.has(i) ? [maps.eqnLine.get(i) as number] : [])));
  return { origin: 'op', lines, eqnIndices, opLines: [opLine] };
}

export interface Highlight {
  /** eqns to highlight */
  eqns: Set<number>;
  /** StableHLO op lines to highlight */
  opLines: Set<number>;
}

/**
 * What `selection` highlights: the eqns and ops it names, the ops lowered from those eqns, and,
 * for a selection made in the editor, every eqn and op of the selected lines.
 */
export function highlightOf(maps: LinkMaps, selection: Selection): Highlight {
  const eqns = new Set<number>(selection.eqnIndices);
  const opLines = new Set<number>(selection.opLines);
  if (selection.origin === 'editor') {
    for (const line of selection.lines) {
      for (const i of maps.lineEqns.get(line) ?? []) eqns.add(i);
      for (const op of maps.lineOps.get(line) ?? []) opLines.add(op);
    }
  }
  if (selection.origin !== 'op') {
    for (const i of eqns) for (const op of maps.eqnOps.get(i) ?? []) opLines.add(op);
  }
  return { eqns, opLines };
}
