/**
 * A jaxpr's text read line by line for a structural comparison (issue 18, "diff two versions";
 * design 0043): which names on each line are variables, and each line's *key*, the line with
 * every variable replaced by `•`. Two lines with the same key differ at most in their variables'
 * names; lines whose keys differ have a different primitive, type, literal or param.
 *
 * JAX names a jaxpr's variables by position (`a`, `b`, … `z`, `ba`, …, in the order the printer
 * meets them), so one eqn more near the top renames every variable below it. `canonicalNames`
 * renames a text's variables anew by first appearance, and `renameVars` writes a text with
 * another naming (the later run's text in the earlier run's names, `structural-diff.ts`).
 *
 * The text is JAX's own (`str(closed_jaxpr)`), read by its line shapes, not parsed by a grammar:
 * - a jaxpr's header `{ lambda CONSTVARS ; INVARS. let` binds `name:type` pairs;
 * - an eqn's first line `OUTVARS = primitive[params] OPERANDS` binds its `name:type` outvars
 *   (`_:type` is a dropped one) and uses the operands after the primitive and its inline params;
 * - a closing line `] OPERANDS` (after params printed over several lines) uses its operands;
 * - a ref read `OUTVARS <- ref[indexers]` binds its outvars and uses the ref (and any variable
 *   in the indexers); a ref write `ref[indexers] <- value` (or `+=`) uses them all (Pallas);
 * - `in (OUTVARS) }` uses the jaxpr's outvars;
 * - any other line (a param `key=value`, `}`, `)`) has no variables.
 * A literal operand carries its type (`2.0:f32[]`, `-inf:f32[]`) and is no variable.
 */

/** One line of a jaxpr text, read. */
export interface JaxprLine {
  /** the line as JAX printed it */
  text: string;
  /** the line with every variable (binder or operand) replaced by `•` */
  key: string;
  /** the variables on the line, in order (binders and uses together) */
  vars: string[];
  /** which of `vars` this line binds (a header's or an eqn's outvars), by index in `vars` */
  binds: boolean[];
  /** each binder's type as printed (`f32[5,16]`), null for a use; by index in `vars` */
  types: (string | null)[];
  /** the eqn's primitive on an eqn's first line, else null */
  primitive: string | null;
  /** the line's depth: 0 the outer jaxpr's header and `in`, 1 its eqns, 2 an inner jaxpr's header... */
  indent: number;
}

const VAR = /^[a-z]+$/;
/** an eqn's first line: indentation, outvars `name:type ...`, `=`, the rest */
const EQN = /^(\s*)((?:(?:[a-z]+|_):\S+\s+)+)=\s+(.*)$/;
/** a ref read (Pallas, state): `OUTVARS <- ref[indexers]` */
const REF_GET = /^(\s*)((?:(?:[a-z]+|_):\S+\s+)+)<-\s+(.*)$/;
/** a ref write: `ref[indexers] <- value` or `ref[indexers] += value` */
const REF_SET = /^(\s*)([a-z]+\[.*\])\s+(<-|\+=)\s+(.*)$/;
/** a primitive's name at the start of an eqn's right-hand side */
const PRIMITIVE = /^([A-Za-z_][\w.]*)/;
/** a jaxpr's header: `{ lambda CONSTVARS ; INVARS. let`, which JAX wraps when long (no `. let` yet) */
const HEADER = /^(.*\{\s*lambda\s+)(.*?)(\.\s+let\b.*)?$/;
/** a wrapped header's next line: more binders, up to `. let` */
const HEADER_MORE = /^(\s*)(.*?)(\.\s+let\b.*)?$/;
const IN = /^(\s*)(in\s+\(.*)$/;

function indentOf(line: string): number {
  return line.length - line.trimStart().length;
}

/** `name:type` binders separated by spaces (a header's or an eqn's lhs): the names and the key. */
function readBinders(text: string, vars: string[], binds: boolean[], types: (string | null)[]): string {
  return text.replace(/(^|\s)([a-z]+|_):(\S*)/g, (_m, before: string, name: string, type: string) => {
    if (name === '_') return `${before}_:${type}`;
    vars.push(name);
    binds.push(true);
    types.push(type);
    return `${before}•:${type}`;
  });
}

/** Space-separated operands (after a primitive or a `]`): variables are bare names. */
function readOperands(text: string, vars: string[], binds: boolean[], types: (string | null)[]): string {
  return text.replace(/(^|\s)([a-z]+)(?=\s|$)/g, (m, before: string, name: string) => {
    if (!VAR.test(name)) return m;
    vars.push(name);
    binds.push(false);
    types.push(null);
    return `${before}•`;
  });
}

/** Bare names in a ref expression (`a[...]`, `a[b, :]`, a value): each a variable, used. */
function readRefUses(text: string, vars: string[], binds: boolean[], types: (string | null)[]): string {
  return text.replace(/(^|[\s[,(])([a-z]+)(?=[\s[\],)]|$)/g, (_m, before: string, name: string) => {
    vars.push(name);
    binds.push(false);
    types.push(null);
    return `${before}•`;
  });
}

/** The index just after the `]` that closes the `[` at `open`, or -1 when the line ends first. */
function closingBracket(text: string, open: number): number {
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    const c = text[i];
    if (c === '[') depth++;
    else if (c === ']') {
      depth--;
      if (depth === 0) return i + 1;
    }
  }
  return -1;
}

/** The end of a header line: `. let`, and on a jaxpr without eqns its `in (OUTVARS) }` too. */
function readLet(text: string, vars: string[], binds: boolean[], types: (string | null)[]): string {
  const at = text.search(/\bin\s+\(/);
  if (at < 0) return text;
  return text.slice(0, at) + readIn(text.slice(at), vars, binds, types);
}

/** `in (OUTVARS)...`: the jaxpr's outvars, used. */
function readIn(text: string, vars: string[], binds: boolean[], types: (string | null)[]): string {
  const outs = /^(in\s+\()(.*)(\).*)$/.exec(text);
  if (!outs) return text;
  const names = (outs[2] ?? '').replace(/(^|[\s,])([a-z]+)(?=[\s,]|$)/g, (_m, before: string, name: string) => {
    vars.push(name);
    binds.push(false);
    types.push(null);
    return `${before}•`;
  });
  return `${outs[1]}${names}${outs[3]}`;
}

/**
 * Read one line of a jaxpr text (see the module's comment). `inHeader`: the line continues a
 * header JAX wrapped (the line before opened `{ lambda` without reaching `. let`).
 */
export function readLine(text: string, inHeader = false): JaxprLine {
  const vars: string[] = [];
  const binds: boolean[] = [];
  const types: (string | null)[] = [];
  const indent = Math.floor(indentOf(text) / 2);
  const header = inHeader ? HEADER_MORE.exec(text) : HEADER.exec(text);
  if (header) {
    const binders = readBinders(header[2] ?? '', vars, binds, types);
    const key = `${header[1]}${binders}${readLet(header[3] ?? '', vars, binds, types)}`;
    return { text, key, vars, binds, types, primitive: null, indent };
  }
  const get = REF_GET.exec(text);
  if (get) {
    const lhs = readBinders(get[2] ?? '', vars, binds, types);
    const key = `${get[1]}${lhs}<- ${readRefUses(get[3] ?? '', vars, binds, types)}`;
    return { text, key, vars, binds, types, primitive: 'get', indent };
  }
  const set = REF_SET.exec(text);
  if (set) {
    const ref = readRefUses(set[2] ?? '', vars, binds, types);
    const key = `${set[1]}${ref} ${set[3]} ${readRefUses(set[4] ?? '', vars, binds, types)}`;
    return { text, key, vars, binds, types, primitive: set[3] === '+=' ? 'addupdate' : 'swap', indent };
  }
  const eqn = EQN.exec(text);
  if (eqn) {
    const lhs = readBinders(eqn[2] ?? '', vars, binds, types);
    const rhs = eqn[3] ?? '';
    const primitive = PRIMITIVE.exec(rhs)?.[1] ?? null;
    let head = primitive ?? '';
    let rest = rhs.slice(head.length);
    if (rest.startsWith('[')) {
      const close = closingBracket(rest, 0);
      // Params printed over several lines: the operands come on the closing `]` line.
      if (close < 0) return { text, key: `${eqn[1]}${lhs}= ${rhs}`, vars, binds, types, primitive, indent };
      head += rest.slice(0, close);
      rest = rest.slice(close);
    }
    const key = `${eqn[1]}${lhs}= ${head}${readOperands(rest, vars, binds, types)}`;
    return { text, key, vars, binds, types, primitive, indent };
  }
  const outs = IN.exec(text);
  if (outs) {
    const key = `${outs[1]}${readIn(outs[2] ?? '', vars, binds, types)}`;
    return { text, key, vars, binds, types, primitive: null, indent };
  }
  const close = /^(\s*\])(.*)$/.exec(text);
  if (close) {
    const key = `${close[1]}${readOperands(close[2] ?? '', vars, binds, types)}`;
    return { text, key, vars, binds, types, primitive: null, indent };
  }
  return { text, key: text, vars, binds, types, primitive: null, indent };
}

/** `text` split at each `; ` outside brackets, braces and parentheses. */
function splitTopLevel(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '[' || c === '{' || c === '(') depth++;
    else if (c === ']' || c === '}' || c === ')') depth--;
    else if (c === ';' && depth === 0 && text[i + 1] === ' ') {
      parts.push(text.slice(start, i));
      start = i + 2;
    }
  }
  parts.push(text.slice(start));
  return parts;
}

/**
 * A jaxpr JAX printed on one line (it does when the whole jaxpr fits:
 * `{ lambda ; a:f32[3]. let b:f32[3] = sin a; c:f32[3] = mul b 2.0:f32[] in (c,) }`) in the
 * form it prints a longer one: the header to `. let`, one eqn a line (indented 4), `in (...) }`
 * (indented 2). Any other text is returned as it is. Without this the structural comparison
 * would see one row for the whole jaxpr of a short snippet.
 */
export function expandOneLine(text: string): string {
  const trimmed = text.trim();
  if (trimmed.includes('\n')) return text;
  const header = /^\{\s*lambda\s+.*?\.\s+let(?=\s)/.exec(trimmed);
  // the outer jaxpr's `in (...) }` is its last: an inner jaxpr's (in a param) comes before it
  const outs = trimmed.lastIndexOf(' in (');
  if (!header || outs < header[0].length || !trimmed.endsWith('}')) return text;
  const body = trimmed.slice(header[0].length, outs).trim();
  // the header's `;` (constvars ; invars) is not in the body; the body's `; ` separate its eqns
  const eqns = body === '' ? [] : splitTopLevel(body);
  return [header[0], ...eqns.map((e) => `    ${e.trim()}`), `  ${trimmed.slice(outs + 1)}`].join('\n');
}

/** Every line of a jaxpr text, read. */
export function readJaxpr(text: string): JaxprLine[] {
  let inHeader = false;
  return text.split('\n').map((line) => {
    const read = readLine(line, inHeader);
    // A header line without its `. let` goes on on the next line.
    const isHeader = inHeader || HEADER.test(line);
    inHeader = isHeader && !/\.\s+let\b/.test(line);
    return read;
  });
}

/** A name in JAX's alphabetic scheme: 0 `a`, 25 `z`, 26 `ba`, 27 `bb`… (`core._encode_digits_alphabetic`). */
export function alphabeticName(n: number): string {
  if (n === 0) return 'a';
  let s = '';
  while (n > 0) {
    s = String.fromCharCode(97 + (n % 26)) + s;
    n = Math.floor(n / 26);
  }
  return s;
}

/** Each variable of `lines` to a canonical name, by the order of its first appearance. */
export function canonicalNames(lines: readonly JaxprLine[]): Map<string, string> {
  const names = new Map<string, string>();
  for (const line of lines) {
    for (const v of line.vars) if (!names.has(v)) names.set(v, alphabeticName(names.size));
  }
  return names;
}

/** `line`'s text with its variables renamed by `rename` (a name it lacks stays as it is). */
export function renameVars(line: JaxprLine, rename: (name: string, at: number) => string): string {
  let at = 0;
  const parts = line.key.split('•');
  let out = parts[0] ?? '';
  for (let i = 1; i < parts.length; i++) {
    const name = line.vars[at] ?? '•';
    out += rename(name, at) + (parts[i] ?? '');
    at++;
  }
  return out;
}

/** The text of `text` with its variables renamed canonically (first appearance: `a`, `b`, …). */
export function canonicalText(text: string): string {
  const lines = readJaxpr(text);
  const names = canonicalNames(lines);
  return lines.map((l) => renameVars(l, (v) => names.get(v) ?? v)).join('\n');
}
