import { describe, expect, it } from 'vitest';
import { loadEvents, loadTruth } from '../../test-fixtures/load';
import type { JaxprView } from '../protocol';
import { lastOf } from './events';
import { innerOfTop, type InnerEqn, type ParsedInner } from './inner-jaxprs';

/** An eqn as JAX holds it (`capture.py`'s `_inner_tree`: read from the eqn's params in Python). */
interface TruthEqn {
  primitive: string;
  invars: number;
  literals: number;
  out_types: string[];
  inner: { param: string; constvars: number; invars: number; outvars: number; eqns: TruthEqn[] }[];
}

interface Truth {
  eqns: { primitive: string }[];
  inner: TruthEqn[];
}

function staged(name: string): JaxprView {
  const e = lastOf(loadEvents(name), 'jaxpr_staged');
  if (!e) throw new Error(`${name} has no jaxpr_staged`);
  return e.jaxpr;
}

/** The parse of an eqn, in the truth's terms. */
function asTruth(eqn: InnerEqn): TruthEqn {
  return {
    primitive: eqn.primitive,
    invars: eqn.invars.length,
    literals: eqn.invars.filter((v) => v.literal).length,
    out_types: eqn.outvars.map((v) => v.type ?? '?'),
    inner: eqn.inner.map(innerAsTruth),
  };
}

function innerAsTruth(inner: ParsedInner): TruthEqn['inner'][number] {
  return {
    param: inner.param,
    constvars: inner.jaxpr.constvars.length,
    invars: inner.jaxpr.invars.length,
    outvars: inner.jaxpr.outvars.length,
    eqns: inner.jaxpr.eqns.map(asTruth),
  };
}

const FIXTURES = ['tracing-graph-inner', 'tracing-graph-layers'];

describe.each(FIXTURES)('the inner jaxprs of %s, as the backend read them from JAX', (name) => {
  const jaxpr = staged(name);
  const truth = loadTruth<Truth>(name);

  it("gives every eqn's inner jaxprs as JAX holds them, all the way down", () => {
    for (const eqn of jaxpr.eqns) {
      const want = truth.inner[eqn.index];
      const inner = innerOfTop(jaxpr, eqn);
      expect(inner, `eqn ${eqn.index} ${eqn.primitive}`).not.toBeNull();
      expect((inner ?? []).map(innerAsTruth)).toEqual(want?.inner);
    }
  });

  it("names inner binders as JAX's printout of the inner jaxpr does", () => {
    for (const eqn of jaxpr.eqns) {
      for (const [k, view] of eqn.inner_jaxprs.entries()) {
        const inner = (innerOfTop(jaxpr, eqn) ?? [])[k];
        // `{ lambda a:f32[]; b:f32[3]. let` (or a shared jaxpr's own text): its binders in order.
        const head = view.text.slice(view.text.indexOf('lambda') + 'lambda'.length, view.text.indexOf('. let'));
        const binders = head
          .split(/[;\s]+/)
          .filter((t) => t.includes(':'))
          .map((t) => t.slice(0, t.indexOf(':')));
        const names = [...(inner?.jaxpr.constvars ?? []), ...(inner?.jaxpr.invars ?? [])].map((v) => v.name);
        if (binders.length > 0) expect(names, `${eqn.primitive} ${view.param}`).toEqual(binders);
      }
    }
  });
});
