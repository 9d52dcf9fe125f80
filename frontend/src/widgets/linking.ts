/**
 * The links between the user's source lines, the staged jaxpr's eqns, the StableHLO op lines and
 * the optimized HLO's instruction lines, and what a shared `Selection` highlights in each.
 *
 * Eqn -> line comes from `EqnView.source` (JAX's `source_info`); op line -> eqns and op line ->
 * line from `ModuleLowered.op_links` (the ops' debug locations); instruction line -> eqns and
 * -> line from `ExecutableCompiled.hlo_links` (the instructions' metadata). The maps are built
 * once per run and queried on every click.
 */
import type { Selection } from '../exhibit-api';
import type { EqnView, HloLink, OpLink } from '../protocol';

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
  /** eqn index -> optimized HLO instruction lines (0-based) that came from it, ascending */
  eqnHlo: Map<number, number[]>;
  /** optimized HLO instruction line (0-based) -> the link its metadata gives it */
  hloLink: Map<number, HloLink>;
  /** user line -> optimized HLO instruction lines whose metadata names that line, ascending */
  lineHlo: Map<number, number[]>;
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

/** Build the maps from the staged jaxpr's eqns, (when lowered) the op links and (when compiled) the HLO links. */
export function buildLinkMaps(
  eqns: readonly EqnView[],
  opLinks: readonly OpLink[] = [],
  hloLinks: readonly HloLink[] = [],
): LinkMaps {
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
  const eqnHlo = new Map<number, number[]>();
  const hloLink = new Map<number, HloLink>();
  const lineHlo = new Map<number, number[]>();
  for (const link of hloLinks) {
    hloLink.set(link.line, link);
    for (const i of link.eqn_indices) push(eqnHlo, i, link.line);
    if (link.source) push(lineHlo, link.source.line, link.line);
  }
  return {
    eqnLine,
    lineEqns: ascending(lineEqns),
    eqnOps: ascending(eqnOps),
    opLink,
    lineOps: ascending(lineOps),
    eqnHlo: ascending(eqnHlo),
    hloLink,
    lineHlo: ascending(lineHlo),
  };
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

/** The source lines of a link: its own, else those of its eqns. */
function linkLines(maps: LinkMaps, source: { line: number } | null | undefined, eqnIndices: number[]): number[] {
  if (source) return [source.line];
  return uniqSorted(eqnIndices.flatMap((i) => (maps.eqnLine.has(i) ? [maps.eqnLine.get(i) as number] : [])));
}

/** The selection made by clicking StableHLO op line `opLine`: its eqns and its source line. */
export function selectOp(maps: LinkMaps, opLine: number): Selection {
  const link = maps.opLink.get(opLine);
  const eqnIndices = uniqSorted(link?.eqn_indices ?? []);
  return { origin: 'op', lines: linkLines(maps, link?.source, eqnIndices), eqnIndices, opLines: [opLine] };
}

/**
 * The selection made by clicking optimized HLO instruction line `hloLine`: the eqns it came from
 * (for a fusion, every eqn it fuses) and its source line.
 */
export function selectHlo(maps: LinkMaps, hloLine: number): Selection {
  const link = maps.hloLink.get(hloLine);
  const eqnIndices = uniqSorted(link?.eqn_indices ?? []);
  return { origin: 'hlo', lines: linkLines(maps, link?.source, eqnIndices), eqnIndices, opLines: [], hloLines: [hloLine] };
}

export interface Highlight {
  /** eqns to highlight */
  eqns: Set<number>;
  /** StableHLO op lines to highlight */
  opLines: Set<number>;
  /** optimized HLO instruction lines to highlight */
  hloLines: Set<number>;
}

/**
 * What `selection` highlights: the eqns, ops and instructions it names, the ops lowered from and
 * the instructions compiled from those eqns, and, for a selection made in the editor, every eqn,
 * op and instruction of the selected lines. A clicked op (or instruction) highlights only itself
 * in its own panel, not the other ops of its eqns.
 */
export function highlightOf(maps: LinkMaps, selection: Selection): Highlight {
  const eqns = new Set<number>(selection.eqnIndices);
  const opLines = new Set<number>(selection.opLines);
  const hloLines = new Set<number>(selection.hloLines ?? []);
  if (selection.origin === 'editor') {
    for (const line of selection.lines) {
      for (const i of maps.lineEqns.get(line) ?? []) eqns.add(i);
      for (const op of maps.lineOps.get(line) ?? []) opLines.add(op);
      for (const n of maps.lineHlo.get(line) ?? []) hloLines.add(n);
    }
  }
  if (selection.origin !== 'op') {
    for (const i of eqns) for (const op of maps.eqnOps.get(i) ?? []) opLines.add(op);
  }
  if (selection.origin !== 'hlo') {
    for (const i of eqns) for (const n of maps.eqnHlo.get(i) ?? []) hloLines.add(n);
  }
  return { eqns, opLines, hloLines };
}
