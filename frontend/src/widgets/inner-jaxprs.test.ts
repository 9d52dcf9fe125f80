import { describe, expect, it } from 'vitest';
import { loadEvents, loadTruth } from '../../test-fixtures/load';
import type { JaxprView } from '../protocol';
import { lastOf } from './events';
import { innerOfTop } from './inner-jaxprs';
import { parseJaxpr, sharedJaxprs, type ParsedEqn, type ParsedInner } from './jaxpr-parse';

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
function asTruth(eqn: ParsedEqn): TruthEqn {
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

describe.each(FIXTURES)("reading JAX's printout of %s", (name) => {
  const jaxpr = staged(name);
  const truth = loadTruth<Truth>(name);

  it("reads every eqn's inner jaxprs as JAX holds them, all the way down", () => {
    for (const eqn of jaxpr.eqns) {
      const want = truth.inner[eqn.index];
      const inner = innerOfTop(jaxpr, eqn);
      expect(inner, `eqn ${eqn.index} ${eqn.primitive}`).not.toBeNull();
      expect((inner ?? []).map(innerAsTruth)).toEqual(want?.inner);
    }
  });

  it('reads the whole top-level text back: eqns, binders and the variables each eqn reads', () => {
    const shared = sharedJaxprs(jaxpr.text);
    // The top-level jaxpr follows the shared ones (`let big = { ... } in`).
    const body = jaxpr.text.slice(jaxpr.text.lastIndexOf('\n{ lambda') + 1 || 0);
    const parsed = parseJaxpr(body, shared);
    expect(parsed.eqns.map((e) => e.primitive)).toEqual(truth.eqns.map((e) => e.primitive));
    expect(parsed.invars.map((v) => v.name)).toEqual(jaxpr.invars.map((v) => v.name));
    expect(parsed.constvars.map((v) => v.name)).toEqual(jaxpr.constvars.map((c) => c.var.name));
    expect(parsed.outvars.map((v) => v.name)).toEqual(jaxpr.outvars.map((v) => v.name));
    parsed.eqns.forEach((e, i) => {
      const view = jaxpr.eqns[i];
      expect(e.invars.map((v) => v.name)).toEqual(view?.invars.map((v) => v.name));
      expect(e.outvars.map((v) => v.name)).toEqual(view?.outvars.map((v) => v.name));
      expect(asTruth(e)).toEqual(truth.inner[i]);
    });
  });
});

describe('the shapes of the printout', () => {
  it('a jaxpr printed on one line, eqns separated by ";"', () => {
    const j = parseJaxpr('{ lambda a:f32[]; b:f32[3] c:i32[]. let d:f32[3] = mul b 2.0:f32[]; e:f32[3] = add d a in (e, 1.0:f32[]) }');
    expect(j.constvars).toEqual([{ name: 'a', type: 'f32[]', literal: false }]);
    expect(j.invars.map((v) => `${v.name}:${v.type}`)).toEqual(['b:f32[3]', 'c:i32[]']);
    expect(j.eqns.map((e) => [e.primitive, e.invars.map((v) => v.name), e.outvars.map((v) => v.name)])).toEqual([
      ['mul', ['b', '2.0:f32[]'], ['d']],
      ['add', ['d', 'a'], ['e']],
    ]);
    expect(j.outvars).toEqual([
      { name: 'e', type: null, literal: false },
      { name: '1.0:f32[]', type: 'f32[]', literal: true },
    ]);
  });

  it('an eqn with no outvars and params with spaces, quotes and braces; an empty jaxpr', () => {
    const j = parseJaxpr(
      "{ lambda ; a:f32[]. let\n    debug_print[\n      fmt=n={n}\n      in_tree=PyTreeDef(((), {'n': *}))\n      callback=<function f at 0xXXXX>\n    ] a\n    b:f32[] = sin a\n  in (b,) }",
    );
    expect(j.eqns.map((e) => e.primitive)).toEqual(['debug_print', 'sin']);
    expect(j.eqns[0]?.outvars).toEqual([]);
    expect(j.eqns[0]?.invars.map((v) => v.name)).toEqual(['a']);
    expect(j.eqns[0]?.params).toEqual({ fmt: 'n={n}', in_tree: "PyTreeDef(((), {'n': *}))", callback: '<function f at 0xXXXX>' });
    expect(parseJaxpr('{ lambda ; cw:f32[3,4]. let  in (cw,) }').eqns).toEqual([]);
  });

  it('a shared jaxpr by name, but not a `name=` that happens to be the same word', () => {
    const text = 'let big = { lambda ; a:f32[]. let b:f32[] = sin a in (b,) } in\n{ lambda ; c:f32[]. let\n    d:f32[] = jit[name=big jaxpr=big] c\n  in (d,) }';
    const shared = sharedJaxprs(text);
    expect([...shared.keys()]).toEqual(['big']);
    const j = parseJaxpr(text.slice(text.indexOf('\n') + 1), shared);
    const jit = j.eqns[0];
    expect(jit?.params.name).toBe('big');
    expect(jit?.inner.map((i) => [i.param, i.jaxpr.eqns.map((e) => e.primitive)])).toEqual([['jaxpr', ['sin']]]);
  });
});
