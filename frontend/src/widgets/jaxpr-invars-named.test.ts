/**
 * The jaxpr text names its inputs by keypath (issue 31, item 2: "the jaxpr text of a real
 * program opens on 150 unnamed inputs"). JAX prints the header's binders in a row
 * (`{ lambda ; a:f32[16,8] b:f32[8,16] ...`); the keypath of each leaf is already on the wire,
 * `JaxprView.arg_names` (JAX's `debug_info.arg_names`, which the graph and the structured view
 * show). From a real capture (`tracing-graph-params`: a dict of 26 parameters and an index
 * array), checked against the truth's `jax.tree_util` keypaths and JAX's invars.
 */
import { describe, expect, it } from 'vitest';
import { loadEvents, loadTruth } from '../../test-fixtures/load';
import type { JaxprView } from '../protocol';
import { lastOf } from './events';
import { mapEqnLines, namedHeader, visibleRows } from './jaxpr-lines';

function jaxprOf(name: string): JaxprView {
  const staged = lastOf(loadEvents(name), 'jaxpr_staged');
  if (!staged) throw new Error(`${name} has no jaxpr_staged`);
  return staged.jaxpr;
}

const layoutOf = (view: JaxprView) =>
  mapEqnLines(
    view.text,
    view.eqns.map((e) => e.text),
  );

describe('the header of a real program, named', () => {
  const view = jaxprOf('tracing-graph-params');
  const truth = loadTruth<{ arg_keypaths: string[] }>('tracing-graph-params');
  const layout = layoutOf(view);
  const header = namedHeader(layout, view.arg_names);

  it("has one row per invar, JAX's binder beside the keypath of its leaf", () => {
    expect(header).not.toBeNull();
    const rows = header?.rows ?? [];
    expect(rows[0]).toEqual({ text: '{ lambda ;', keypath: null, invar: null });
    const inputs = rows.slice(1);
    expect(inputs).toHaveLength(view.invars.length);
    expect(inputs.map((r) => r.keypath)).toEqual(truth.arg_keypaths);
    expect(inputs.map((r) => r.invar)).toEqual(view.invars.map((_, i) => i));
    // each row starts with JAX's binder of that invar (name:type), the last one closing the header
    inputs.forEach((r, i) => {
      const v = view.invars[i];
      expect(r.text.trim()).toBe(`${v?.name}:${v?.aval.short}${i === inputs.length - 1 ? '. let' : ''}`);
    });
  });

  it("replaces the header's lines only: the eqns keep their lines", () => {
    const rows = visibleRows(layout, new Set(), true, header);
    const firstEqn = layout.spans[0]?.start ?? -1;
    expect(header?.end).toBe(firstEqn);
    expect(rows.slice(0, view.invars.length + 1).every((r) => r.kind === 'invar')).toBe(true);
    const rest = rows.slice(view.invars.length + 1);
    expect(rest[0]).toEqual({ kind: 'line', line: firstEqn, eqn: 0 });
    expect(rest.map((r) => (r.kind === 'line' ? r.line : -1))).toEqual(layout.lines.map((_, l) => l).slice(firstEqn));
    // without it, JAX's text line by line
    expect(visibleRows(layout, new Set(), true).map((r) => (r.kind === 'line' ? r.line : -1))).toEqual(layout.lines.map((_, l) => l));
  });
});

describe('a header with nothing to name stays as JAX printed it', () => {
  it('bare arguments (f(x, w)), and a jaxpr JAX built itself (no arg_names)', () => {
    for (const name of ['stations-mlp', 'tracing-where']) {
      const view = jaxprOf(name);
      expect(view.arg_names?.some((n) => /[[.]/.test(n))).toBe(false);
      expect(namedHeader(layoutOf(view), view.arg_names)).toBeNull();
    }
    const view = jaxprOf('tracing-graph-params');
    expect(namedHeader(layoutOf(view), null)).toBeNull();
  });

  it('a header whose binders are not one per name', () => {
    const view = jaxprOf('tracing-graph-params');
    const names = view.arg_names ?? [];
    expect(namedHeader(layoutOf(view), names.slice(1))).toBeNull();
  });

  it('keeps the constvars on the first row', () => {
    const text = "{ lambda a:f32[3]; b:f32[3] c:f32[]. let\n    d:f32[3] = sin b\n  in (d,) }";
    const layout = mapEqnLines(text, ['d:f32[3] = sin b']);
    const header = namedHeader(layout, ["p['w']", 'y']);
    expect(header?.rows.map((r) => [r.text.trimEnd(), r.keypath])).toEqual([
      ['{ lambda a:f32[3];', null],
      ['    b:f32[3]', "p['w']"],
      ['    c:f32[]. let', 'y'],
    ]);
  });
});
