import { describe, expect, it } from 'vitest';
import { loadEvents, loadTruth } from '../../test-fixtures/load';
import { lastOf } from './events';
import { buildLinkMaps, highlightOf, selectEqn, selectOp } from './linking';

interface Truth {
  eqns: { primitive: string; line: number | null }[];
  stablehlo: string;
}

const events = loadEvents('stations-nested');
const truth = loadTruth<Truth>('stations-nested');
const staged = lastOf(events, 'jaxpr_staged');
const lowered = lastOf(events, 'module_lowered');
if (!staged || !lowered) throw new Error('fixture stations-nested is incomplete');
const maps = buildLinkMaps(staged.jaxpr.eqns, lowered.op_links);
// JAX's own text of the lowered module: op line indices address these lines.
const hlo = truth.stablehlo.split('\n');

describe('links between source lines, eqns and StableHLO ops (stations-nested)', () => {
  it('addresses the text of Lowered.as_text()', () => {
    expect(lowered.stablehlo).toBe(truth.stablehlo);
  });

  it("maps each eqn to the snippet line of JAX's traceback", () => {
    truth.eqns.forEach((e, i) => expect(maps.eqnLine.get(i)).toBe(e.line ?? undefined));
    expect(maps.lineEqns.get(7)).toEqual(
      truth.eqns.flatMap((e, i) => (e.line === 7 ? [i] : [])),
    );
  });

  it('selecting the dot_general eqn highlights its line and the stablehlo.dot_general op', () => {
    const i = truth.eqns.findIndex((e) => e.primitive === 'dot_general');
    const sel = selectEqn(maps, i);
    expect(sel.origin).toBe('eqn');
    expect(sel.lines).toEqual([truth.eqns[i]?.line]);
    expect(sel.opLines.length).toBeGreaterThan(0);
    for (const n of sel.opLines) expect(hlo[n]).toContain('stablehlo.dot_general');
  });

  it('clicking an op selects the eqns lowered into it and its source line', () => {
    const n = hlo.findIndex((l) => l.includes('stablehlo.compare GT'));
    const sel = selectOp(maps, n);
    const gt = truth.eqns.findIndex((e) => e.primitive === 'gt');
    expect(sel).toEqual({ origin: 'op', lines: [truth.eqns[gt]?.line], eqnIndices: [gt], opLines: [n] });
  });

  it('an op without a user location selects nothing in the source', () => {
    const n = lowered.op_links.find((l) => l.source === null && l.eqn_indices.length === 0)?.line;
    expect(n).toBeDefined();
    expect(selectOp(maps, n ?? -1)).toEqual({ origin: 'op', lines: [], eqnIndices: [], opLines: [n] });
  });

  it('an editor selection highlights every eqn and op of its lines', () => {
    const h = highlightOf(maps, { origin: 'editor', lines: [7], eqnIndices: [], opLines: [] });
    const onLine7 = truth.eqns.flatMap((e, i) => (e.line === 7 ? [i] : []));
    expect([...h.eqns].sort()).toEqual(onLine7);
    const texts = [...h.opLines].map((n) => hlo[n] ?? '');
    expect(texts.some((t) => t.includes('stablehlo.compare GT'))).toBe(true);
    expect(texts.some((t) => t.includes('stablehlo.add'))).toBe(true);
    expect(texts.some((t) => t.includes('stablehlo.dot_general'))).toBe(false);
  });

  it('an eqn selection made elsewhere (tracing view) still lights up its ops here', () => {
    const i = truth.eqns.findIndex((e) => e.primitive === 'transpose');
    const h = highlightOf(maps, { origin: 'eqn', lines: [6], eqnIndices: [i], opLines: [] });
    expect(h.opLines.size).toBeGreaterThan(0);
    for (const n of h.opLines) expect(hlo[n]).toContain('stablehlo.transpose');
  });
});
