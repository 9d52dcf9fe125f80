/**
 * The inner jaxprs of a staged jaxpr's eqns, for the dataflow graph to expand an eqn in place:
 * each `EqnView.inner_jaxprs` entry carries the inner jaxpr's structure as the backend read it
 * from JAX's own objects (its binders and `EqnView`s, named as JAX's printout names them), and
 * how an inner jaxpr's binders line up with the eqn's own operands and results (the positions
 * JAX's rules give them: `jit`, `custom_jvp_call`, `custom_vjp_call`, `remat` and `scan` pass
 * the eqn's operands as the inner jaxpr's invars one for one; `cond`'s branches take all but
 * the index; `while`'s `cond_jaxpr` takes its `cond_nconsts` consts and the carry, its
 * `body_jaxpr` the rest).
 */
import type { EqnView, JaxprView, SourceLoc } from '../protocol';
import { avalText } from './format';

type InnerJaxprView = EqnView['inner_jaxprs'][number];
type VarView = EqnView['invars'][number];

/** A variable of an inner jaxpr: as JAX prints it (`b`, `_`, or a literal `2.0:f32[]`), its type. */
export interface InnerVar {
  name: string;
  /** the binder's type (`f32[3,4]`) */
  type: string | null;
  literal: boolean;
}

/** An eqn of an inner jaxpr, with its own inner jaxprs. */
export interface InnerEqn {
  primitive: string;
  /** each param's printed value, inner jaxprs left out (`num_consts` → `0`) */
  params: Record<string, string>;
  invars: InnerVar[];
  outvars: InnerVar[];
  inner: ParsedInner[];
  /** the snippet line of the eqn, when it has one */
  line: number | null;
  /** where the eqn was made (its line and the snippet frames that called it), when in the snippet */
  source: SourceLoc | null;
  /** JAX's name stack of the eqn, relative to the jaxpr that holds it (JAX traces the body of a
   * `jit`, `scan`, `cond`... under a stack of its own): `layer3/attn`, '' for none */
  nameStack: string;
}

/** A jaxpr held in an eqn's params, structured. */
export interface InnerJaxpr {
  constvars: InnerVar[];
  invars: InnerVar[];
  eqns: InnerEqn[];
  outvars: InnerVar[];
}

export interface ParsedInner {
  /** the params key that holds it (`jaxpr`, `branches`, `body_jaxpr`, `call_jaxpr`) */
  param: string;
  /** its position in a tuple of jaxprs (`branches`), else 0 */
  position: number;
  jaxpr: InnerJaxpr;
}

/** What the graph needs of an eqn, top-level or inner (both `EqnView`s on the wire). */
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

// The type as JAX's printout writes it (`f32[]`, weak or not), as the inner jaxpr's text shows.
const varOf = (v: VarView): InnerVar => ({ name: v.name, type: v.aval.short, literal: v.literal });

function eqnOf(eqn: EqnView): InnerEqn {
  const held = new Set(eqn.inner_jaxprs.map((j) => j.param));
  const params: Record<string, string> = {};
  for (const [k, v] of Object.entries(eqn.params)) if (!held.has(k) && v !== undefined) params[k] = v;
  return {
    primitive: eqn.primitive,
    params,
    invars: eqn.invars.map(varOf),
    outvars: eqn.outvars.map(varOf),
    inner: innersOf(eqn.inner_jaxprs) ?? [],
    line: eqn.source?.line ?? null,
    source: eqn.source ?? null,
    nameStack: eqn.name_stack ?? '',
  };
}

/** The structured inner jaxprs, or null when a view lacks its structure (a capture from before
 * the backend sent it): the eqn then stays one node. */
function innersOf(views: readonly InnerJaxprView[]): ParsedInner[] | null {
  const seen = new Map<string, number>();
  const out: ParsedInner[] = [];
  for (const view of views) {
    if (!Array.isArray(view.eqns) || !Array.isArray(view.invars) || !Array.isArray(view.outvars)) return null;
    const position = seen.get(view.param) ?? 0;
    seen.set(view.param, position + 1);
    out.push({
      param: view.param,
      position,
      jaxpr: {
        constvars: (view.constvars ?? []).map(varOf),
        invars: view.invars.map(varOf),
        eqns: view.eqns.map(eqnOf),
        outvars: view.outvars.map(varOf),
      },
    });
  }
  return out;
}

const innerCache = new WeakMap<EqnView, ParsedInner[] | null>();

/** The inner jaxprs of a top-level eqn (cached per eqn); [] for an eqn with none, null when
 * they came without their structure (the eqn then stays one node). */
export function innerOfTop(_jaxpr: JaxprView, eqn: EqnView): ParsedInner[] | null {
  if (eqn.inner_jaxprs.length === 0) return [];
  const hit = innerCache.get(eqn);
  if (hit !== undefined) return hit;
  const out = innersOf(eqn.inner_jaxprs);
  innerCache.set(eqn, out);
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

export function parsedEqn(eqn: InnerEqn): AnyEqn {
  return {
    primitive: eqn.primitive,
    name: eqn.params.name ?? null,
    params: eqn.params,
    invars: eqn.invars,
    outvars: eqn.outvars,
    outTypes: eqn.outvars.map((v: InnerVar) => v.type ?? ''),
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
