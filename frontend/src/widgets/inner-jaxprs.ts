/**
 * The inner jaxprs of a staged jaxpr's eqns, for the dataflow graph to expand an eqn in place:
 * each `EqnView.inner_jaxprs` text parsed once (`jaxpr-parse.ts`) and kept with the eqn, and how
 * an inner jaxpr's binders line up with the eqn's own operands and results (the positions JAX's
 * rules give them: `jit`, `custom_jvp_call`, `custom_vjp_call`, `remat` and `scan` pass the
 * eqn's operands as the inner jaxpr's invars one for one; `cond`'s branches take all but the
 * index; `while`'s `cond_jaxpr` takes its `cond_nconsts` consts and the carry, its `body_jaxpr`
 * the rest).
 */
import type { EqnView, JaxprView } from '../protocol';
import { avalText } from './format';
import { parseJaxpr, sharedJaxprs, type ParsedEqn, type ParsedInner, type ParsedVar } from './jaxpr-parse';

/** What the graph needs of an eqn, top-level (`EqnView`) or inner (parsed from text). */
export interface AnyEqn {
  primitive: string;
  /** the `name` param JAX prints first (`jit[name=_where ...]`, `custom_jvp_call[name=relu ...]`) */
  name: string | null;
  params: Record<string, string | undefined>;
  invars: { name: string; literal: boolean }[];
  outvars: { name: string; literal: boolean }[];
  /** the outvars' types as the printout writes them (`f32[3]`) */
  outTypes: string[];
}

interface Parsed {
  shared: Map<string, string>;
  inner: WeakMap<EqnView, ParsedInner[] | null>;
}

const parsedOf = new WeakMap<JaxprView, Parsed>();

/** The inner jaxprs of a top-level eqn, parsed (cached per eqn); [] for an eqn with none, null
 * when the text could not be read (the eqn then stays one node). */
export function innerOfTop(jaxpr: JaxprView, eqn: EqnView): ParsedInner[] | null {
  if (eqn.inner_jaxprs.length === 0) return [];
  let parsed = parsedOf.get(jaxpr);
  if (parsed === undefined) {
    parsed = { shared: sharedJaxprs(jaxpr.text), inner: new WeakMap() };
    parsedOf.set(jaxpr, parsed);
  }
  const hit = parsed.inner.get(eqn);
  if (hit !== undefined) return hit;
  let out: ParsedInner[] | null;
  try {
    const seen = new Map<string, number>();
    out = eqn.inner_jaxprs.map((view) => {
      const position = seen.get(view.param) ?? 0;
      seen.set(view.param, position + 1);
      return { param: view.param, position, jaxpr: parseJaxpr(view.text, parsed.shared) };
    });
  } catch {
    out = null;
  }
  parsed.inner.set(eqn, out);
  return out;
}

/** `name=` when JAX prints it as the eqn's first param (`jit`, `custom_jvp_call`, `custom_vjp_call`). */
function firstParamName(text: string): string | null {
  const m = /^[^=\n]*=\s*[A-Za-z_][\w.-]*\[\s*name=([^\s\]]+)/.exec(text);
  return m ? (m[1] as string) : null;
}

export function topEqn(eqn: EqnView): AnyEqn {
  return {
    primitive: eqn.primitive,
    name: eqn.params.name ?? eqn.inner_jaxprs[0]?.name ?? firstParamName(eqn.text),
    params: eqn.params,
    invars: eqn.invars,
    outvars: eqn.outvars,
    outTypes: eqn.outvars.map((v) => avalText(v.aval)),
  };
}

export function parsedEqn(eqn: ParsedEqn): AnyEqn {
  return {
    primitive: eqn.primitive,
    name: eqn.params.name ?? null,
    params: eqn.params,
    invars: eqn.invars,
    outvars: eqn.outvars,
    outTypes: eqn.outvars.map((v: ParsedVar) => v.type ?? ''),
  };
}

/** A label for an inner jaxpr: `jaxpr`, `branches[1]`, `body_jaxpr`. */
export function innerLabel(inner: ParsedInner, all: readonly ParsedInner[]): string {
  const many = all.filter((o) => o.param === inner.param).length > 1;
  return many ? `${inner.param}[${inner.position}]` : inner.param;
}

const int = (text: string | undefined): number => {
  const n = Number.parseInt(text ?? '', 10);
  return Number.isFinite(n) ? n : 0;
};

/**
 * For each invar of `inner`, the operand of `eqn` it is bound to (its index in `eqn.invars`), or
 * null where the positions do not say.
 */
export function innerOperands(eqn: AnyEqn, inner: ParsedInner): (number | null)[] {
  const n = inner.jaxpr.invars.length;
  const m = eqn.invars.length;
  if (eqn.primitive === 'while' && inner.param === 'cond_jaxpr') {
    // while's operands: cond consts, body consts, carry; the cond jaxpr takes the first and last.
    const cn = int(eqn.params.cond_nconsts);
    const bn = int(eqn.params.body_nconsts);
    return Array.from({ length: n }, (_, i) => (i < cn ? i : cn + bn + (i - cn) < m ? cn + bn + (i - cn) : null));
  }
  if (n <= m) return Array.from({ length: n }, (_, i) => m - n + i);
  return Array.from({ length: n }, () => null);
}

/** For each outvar of `inner`, the result of `eqn` it becomes (its index in `eqn.outvars`), or null. */
export function innerResults(eqn: AnyEqn, inner: ParsedInner): (number | null)[] {
  const n = inner.jaxpr.outvars.length;
  // while's cond jaxpr answers whether to go on; it makes none of the eqn's results.
  if ((eqn.primitive === 'while' && inner.param === 'cond_jaxpr') || n !== eqn.outvars.length) {
    return Array.from({ length: n }, () => null);
  }
  return Array.from({ length: n }, (_, i) => i);
}
