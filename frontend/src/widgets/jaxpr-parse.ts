/**
 * Reads JAX's printout of a jaxpr (`core.pp_jaxpr`) back into its binders, eqns and inner
 * jaxprs, for the dataflow graph to expand an eqn with an inner jaxpr (`jit`, `scan`'s body,
 * `cond`'s branches, `while`'s cond and body, `custom_jvp_call`, `custom_vjp_call`, `remat`) in
 * place. The wire sends an eqn's inner jaxprs as JAX's text only (`InnerJaxprView.text`), so the
 * graph parses that text; nothing is guessed that the printout does not say.
 *
 * The printout's shape (`jax/_src/core.py`: `pp_jaxpr_skeleton`, `_pp_eqn`, `pp_kv_pair`):
 * `{ lambda consts ; invars . let eqns in ( outvars ) }`, binders as `name:type`, literals as
 * `2.0:f32[]`. JAX's pretty printer lays a jaxpr out either flat on one line (eqns separated by
 * `; `) or broken, one eqn per line at one indentation (params, long binder lists and inner
 * jaxprs wrap deeper); so an eqn ends at a `;` or at a line that starts at or left of the column
 * of the jaxpr's first eqn. A jaxpr used more than once is printed once at the top of the whole
 * printout (`let _where = { lambda ... } in`) and by name where used (`jaxpr=_where`): those
 * names are resolved against `sharedJaxprs` of the top-level text.
 */

export interface ParsedVar {
  /** as JAX prints it: `b`, `_` (a dropped outvar), or a literal with its type `2.0:f32[]` */
  name: string;
  /** the binder's type (`f32[3,4]`); null for a variable read by an eqn (its type is its binder's) */
  type: string | null;
  literal: boolean;
}

export interface ParsedInner {
  /** the params key that holds it (`jaxpr`, `branches`, `body_jaxpr`, `call_jaxpr`) */
  param: string;
  /** its position in a tuple of jaxprs (`branches`), else 0 */
  position: number;
  jaxpr: ParsedJaxpr;
}

export interface ParsedEqn {
  primitive: string;
  /** each param's printed value, inner jaxprs left out (`num_consts` → `0`) */
  params: Record<string, string>;
  invars: ParsedVar[];
  outvars: ParsedVar[];
  inner: ParsedInner[];
}

export interface ParsedJaxpr {
  constvars: ParsedVar[];
  invars: ParsedVar[];
  eqns: ParsedEqn[];
  outvars: ParsedVar[];
}

/** A params key that holds jaxprs (by the names JAX uses: `jaxpr`, `call_jaxpr`, `body_jaxpr`,
 * `cond_jaxpr`, `fun_jaxpr`, `branches`): only these are read as references to shared jaxprs,
 * so that `name=_where` is not taken for the jaxpr `_where`. */
const JAXPR_KEY = /(^|_)jaxpr$|^branches$/;

export class JaxprParseError extends Error {}

class Parser {
  private i = 0;
  private readonly resolving: Set<string>;

  constructor(
    private readonly s: string,
    private readonly shared: ReadonlyMap<string, string>,
    resolving: ReadonlySet<string> = new Set(),
  ) {
    this.resolving = new Set(resolving);
  }

  private fail(what: string): never {
    throw new JaxprParseError(`${what} at ${this.i}: ${JSON.stringify(this.s.slice(this.i, this.i + 40))}`);
  }

  /** Skip whitespace; true when a newline was crossed. */
  private ws(): boolean {
    let nl = false;
    while (this.i < this.s.length) {
      const c = this.s[this.i];
      if (c === '\n') nl = true;
      else if (c !== ' ' && c !== '\t' && c !== '\r') break;
      this.i++;
    }
    return nl;
  }

  private col(): number {
    return this.i - (this.s.lastIndexOf('\n', this.i - 1) + 1);
  }

  private at(re: RegExp): RegExpExecArray | null {
    re.lastIndex = this.i;
    return re.exec(this.s);
  }

  private expect(text: string): void {
    if (!this.s.startsWith(text, this.i)) this.fail(`expected ${JSON.stringify(text)}`);
    this.i += text.length;
  }

  /** A type after `name:`: up to whitespace outside brackets, or a `.`/`;` that ends a binder list. */
  private type(): string {
    const start = this.i;
    let depth = 0;
    while (this.i < this.s.length) {
      const c = this.s[this.i] as string;
      if ('[({<'.includes(c)) depth++;
      else if ('])}>'.includes(c)) {
        if (depth === 0) break;
        depth--;
      } else if (depth === 0 && (/\s/.test(c) || c === ',')) break;
      else if (depth === 0 && (c === '.' || c === ';') && /[\s]|$/.test(this.s[this.i + 1] ?? '')) break;
      this.i++;
    }
    if (this.i === start) this.fail('expected a type');
    return this.s.slice(start, this.i);
  }

  private static readonly BINDER = /([A-Za-z_][A-Za-z0-9_]*):/y;

  /** `name:type` binders up to `stop` (`;` or `.`). */
  private binders(stop: string): ParsedVar[] {
    const out: ParsedVar[] = [];
    for (;;) {
      this.ws();
      if (this.s.startsWith(stop, this.i)) return out;
      const m = this.at(Parser.BINDER);
      if (m === null) this.fail('expected a binder');
      this.i += m[0].length;
      out.push({ name: m[1] as string, type: this.type(), literal: false });
    }
  }

  /** One atom an eqn reads: a variable (`b`) or a literal (`2.0:f32[]`, `(1+2j):c64[]`). */
  private atom(): ParsedVar {
    const start = this.i;
    if (this.s[this.i] === '(') {
      const close = this.s.indexOf(')', this.i);
      if (close < 0) this.fail('unclosed literal');
      this.i = close + 1;
    }
    while (this.i < this.s.length && !/[\s;:,)]/.test(this.s[this.i] as string)) this.i++;
    if (this.s[this.i] === ':') {
      this.i++;
      this.type();
      return { name: this.s.slice(start, this.i), type: this.s.slice(this.s.indexOf(':', start) + 1, this.i), literal: true };
    }
    if (this.i === start) this.fail('expected a variable');
    return { name: this.s.slice(start, this.i), type: null, literal: false };
  }

  /** At the keyword `in` that opens the outvars (`in (a, b) }`), not a variable named `in`. */
  private atIn(): boolean {
    return this.at(/in\s*\(/y) !== null;
  }

  jaxpr(): ParsedJaxpr {
    this.ws();
    this.expect('{');
    this.ws();
    this.expect('lambda');
    const constvars = this.binders(';');
    this.expect(';');
    const invars = this.binders('.');
    this.expect('.');
    this.ws();
    this.expect('let');
    const eqns: ParsedEqn[] = [];
    // Broken layout: the first eqn's column; every later eqn starts on a new line there.
    let eqnCol = Infinity;
    for (;;) {
      const nl = this.ws();
      if (this.s[this.i] === ';') {
        this.i++;
        continue;
      }
      if (this.atIn() && (eqns.length === 0 || !nl || this.col() < eqnCol)) break;
      if (eqns.length === 0 && nl) eqnCol = this.col();
      eqns.push(this.eqn(eqnCol));
    }
    this.expect('in');
    this.ws();
    this.expect('(');
    const outvars: ParsedVar[] = [];
    for (;;) {
      this.ws();
      if (this.s[this.i] === ')') break;
      if (this.s[this.i] === ',') {
        this.i++;
        continue;
      }
      outvars.push(this.atom());
    }
    this.expect(')');
    this.ws();
    this.expect('}');
    return { constvars, invars, eqns, outvars };
  }

  private eqn(eqnCol: number): ParsedEqn {
    const outvars: ParsedVar[] = [];
    // `b:f32[] c:f32[] = prim ...`; an eqn with no outvars starts with its primitive.
    for (;;) {
      const m = this.at(Parser.BINDER);
      if (m === null) break;
      this.i += m[0].length;
      outvars.push({ name: m[1] as string, type: this.type(), literal: false });
      this.ws();
    }
    if (outvars.length > 0) {
      this.expect('=');
      this.ws();
    }
    const prim = this.at(/[A-Za-z_][A-Za-z0-9_.\-]*/y);
    if (prim === null) this.fail('expected a primitive');
    this.i += prim[0].length;
    const params: Record<string, string> = {};
    const inner: ParsedInner[] = [];
    if (this.s[this.i] === '[') this.params(params, inner);
    const invars: ParsedVar[] = [];
    for (;;) {
      const start = this.i;
      const nl = this.ws();
      const c = this.s[this.i];
      if (c === undefined || c === ';' || c === '}' || (nl && this.col() <= eqnCol) || this.atIn()) {
        // Leave the separator (and a newline before the next eqn) to the caller.
        if (nl) this.i = start;
        break;
      }
      invars.push(this.atom());
    }
    return { primitive: prim[0], params, invars, outvars, inner };
  }

  /** `[key=value key=value ...]`, the inner jaxprs parsed, the other values kept as text. */
  private params(params: Record<string, string>, inner: ParsedInner[]): void {
    this.expect('[');
    let last: string | null = null;
    for (;;) {
      this.ws();
      if (this.i >= this.s.length) this.fail('unclosed params');
      if (this.s[this.i] === ']') {
        this.i++;
        return;
      }
      const key = this.at(/([A-Za-z_][A-Za-z0-9_]*)=/y);
      if (key === null) {
        // A value with spaces in it (`<function f at 0x...>`): the rest of the last value.
        const more = this.value();
        if (last !== null) params[last] += ` ${more}`;
        continue;
      }
      this.i += key[0].length;
      last = key[1] as string;
      const jaxprs = this.jaxprsValue(last);
      if (jaxprs !== null) {
        jaxprs.forEach((jaxpr, position) => inner.push({ param: last as string, position, jaxpr }));
        continue;
      }
      params[last] = this.value();
    }
  }

  /** The jaxprs a param holds (`{ lambda ...}`, `( {...} {...} )`, or names of shared ones), or
   * null (and nothing read) when it holds none. */
  private jaxprsValue(key: string): ParsedJaxpr[] | null {
    if (this.at(/\{\s*lambda\b/y)) return [this.jaxpr()];
    const named = this.at(/[A-Za-z_][A-Za-z0-9_]*(?=[\s\]])/y);
    if (named && JAXPR_KEY.test(key) && this.shared.has(named[0])) {
      this.i += named[0].length;
      return [this.resolve(named[0])];
    }
    if (this.s[this.i] !== '(' || !JAXPR_KEY.test(key)) return null;
    // A tuple: every element a jaxpr or a shared jaxpr's name, else not jaxprs at all.
    const start = this.i;
    this.i++;
    const out: ParsedJaxpr[] = [];
    for (;;) {
      this.ws();
      if (this.s[this.i] === ')') {
        this.i++;
        return out;
      }
      if (this.at(/\{\s*lambda\b/y)) {
        out.push(this.jaxpr());
        continue;
      }
      const name = this.at(/[A-Za-z_][A-Za-z0-9_]*/y);
      if (name && this.shared.has(name[0])) {
        this.i += name[0].length;
        out.push(this.resolve(name[0]));
        continue;
      }
      this.i = start;
      return null;
    }
  }

  private resolve(name: string): ParsedJaxpr {
    if (this.resolving.has(name)) this.fail(`${name} refers to itself`);
    return new Parser(this.shared.get(name) as string, this.shared, new Set([...this.resolving, name])).jaxpr();
  }

  /** A param value as text: up to whitespace or the closing `]` outside brackets and quotes. */
  private value(): string {
    const start = this.i;
    let depth = 0;
    while (this.i < this.s.length) {
      const c = this.s[this.i] as string;
      if (c === "'" || c === '"') {
        const close = this.s.indexOf(c, this.i + 1);
        this.i = close < 0 ? this.s.length : close + 1;
        continue;
      }
      if ('([{'.includes(c)) depth++;
      else if (')]}'.includes(c)) {
        if (depth === 0) break;
        depth--;
      } else if (depth === 0 && /\s/.test(c)) break;
      this.i++;
    }
    return this.s.slice(start, this.i);
  }
}

/**
 * The jaxprs printed once at the top of a printout and by name where used (`let tril = {
 * lambda ... } in`), by name: each one's text, to resolve `jaxpr=tril`.
 */
export function sharedJaxprs(text: string): Map<string, string> {
  const out = new Map<string, string>();
  const head = /^let ([A-Za-z_][A-Za-z0-9_]*) = /gm;
  let m: RegExpExecArray | null;
  while ((m = head.exec(text)) !== null) {
    const start = m.index + m[0].length;
    const end = matchingBrace(text, start);
    if (end < 0) break;
    out.set(m[1] as string, text.slice(start, end + 1));
    head.lastIndex = end + 1;
  }
  return out;
}

/** The index of the `}` that closes the `{` at `start`, or -1. */
function matchingBrace(text: string, start: number): number {
  let depth = 0;
  for (let i = start; i < text.length; i++) {
    const c = text[i];
    if (c === '{') depth++;
    else if (c === '}' && --depth === 0) return i;
  }
  return -1;
}

/** Parse JAX's printout of one jaxpr (`InnerJaxprView.text`); `shared` from `sharedJaxprs` of
 * the printout it came from. Throws `JaxprParseError` on text it cannot read. */
export function parseJaxpr(text: string, shared: ReadonlyMap<string, string> = new Map()): ParsedJaxpr {
  return new Parser(text, shared).jaxpr();
}
