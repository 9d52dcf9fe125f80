/**
 * Maps the eqns of a staged jaxpr onto the lines of JAX's own printout of it.
 *
 * `JaxprView.text` is `str(closed_jaxpr)` byte for byte; each `EqnView.text` is JAX's printout of
 * one eqn with the same variable names. An eqn may span several lines of the text: JAX's pretty
 * printer breaks long params (`dot_general[` ... `] a b`) and prints the inner jaxprs of
 * `jit`/`custom_jvp_call`/`scan` eqns in full. This module finds, for every top-level eqn, the
 * range of text lines it occupies, so that the text can be clicked and highlighted per eqn, and
 * the long eqns folded to their first and last line.
 *
 * JAX prints an inner jaxpr that is used more than once, or that has more than 10 eqns, once,
 * BEFORE the top-level jaxpr (`let g = { lambda ... } in`, its eqns at the same indent as the
 * top-level ones), and the eqns that call it as `jit[name=g jaxpr=g]`. The top-level jaxpr is the
 * first line opening with `{ lambda` (as `body_start` in backend/jaxscope/summaries.py); its eqns
 * are looked for only after its `let`, and the lines before it (the named jaxprs) fold as one
 * block. A top-level jaxpr short enough is printed on one line
 * (`{ lambda ; a:f32[3]. let b:f32[] = jit[name=g jaxpr=g] a in (b,) }`): its eqns are all on it.
 */

/** Lines `[start, end)` (0-based indices into the text's lines) printed for eqn `index`. */
export interface EqnSpan {
  index: number;
  start: number;
  end: number;
}

export interface JaxprLayout {
  /** the text split on `\n` */
  lines: string[];
  /** one span per eqn, in eqn order; spans never overlap */
  spans: EqnSpan[];
  /** for each line, the eqn printed on it, or null (header, `in (...)`, blank) */
  lineToEqn: (number | null)[];
  /** the line the top-level jaxpr starts on (`{ lambda ...`): the lines before it are named jaxprs */
  top: number;
  /** the names of the jaxprs printed before it (`let g = { lambda ...`), in JAX's order */
  named: string[];
}

const firstLine = (s: string): string => {
  const nl = s.indexOf('\n');
  return (nl < 0 ? s : s.slice(0, nl)).trim();
};

const indentOf = (s: string): number => s.length - s.trimStart().length;

/** The first line opening with `{ lambda`: the top-level jaxpr (0 when there is none). */
export function findTopLine(lines: readonly string[]): number {
  const top = lines.findIndex((l) => l.startsWith('{ lambda'));
  return top < 0 ? 0 : top;
}

/**
 * The line that starts the jaxpr's outvars (`  in (a, b) }`): the last line at indent 2 opening
 * with `in` after the top-level `{ lambda` (the named jaxprs before it have theirs too); the
 * text's length when there is none (a top-level jaxpr printed on one line).
 */
export function findOutLine(lines: readonly string[]): number {
  const top = findTopLine(lines);
  for (let i = lines.length - 1; i >= top; i--) {
    const line = lines[i] ?? '';
    if (indentOf(line) === 2 && /^in[\s(]/.test(line.trimStart())) return i;
  }
  return lines.length;
}

/** The first line after the top-level header `{ lambda ... let` (the header can wrap over several lines). */
function findBodyStart(lines: readonly string[], top: number): number {
  for (let i = top; i < lines.length; i++) {
    if (/\blet\s*$/.test(lines[i] ?? '')) return i + 1;
  }
  return top;
}

/** The names of the jaxprs JAX printed before the top-level one (`let g = { lambda ...`). */
function namedJaxprs(lines: readonly string[], top: number): string[] {
  const names: string[] = [];
  for (let i = 0; i < top; i++) {
    const m = /^let (\S+) = \{ lambda/.exec(lines[i] ?? '');
    if (m?.[1] !== undefined) names.push(m[1]);
  }
  return names;
}

/**
 * Locate each eqn in the jaxpr text.
 *
 * Each eqn is found by its first printed line (whitespace-trimmed, since an eqn printed alone is
 * not indented) searched forward from the previous eqn; it extends to the next eqn's first line
 * (or to the `in (...)` line). The eqn's own line count is not used: printed alone it has more
 * room, so JAX's printer may wrap its inner jaxprs differently. When an eqn's first line cannot be
 * found (a printer that wrapped it differently), it falls back to the next line at the eqn
 * indentation (4 spaces) that is not a closing bracket. `ranged`: the line before `in (...)`
 * stands for eqns not sent yet (a view sent in eqn ranges) and belongs to no eqn.
 */
export function mapEqnLines(text: string, eqnTexts: readonly string[], ranged = false): JaxprLayout {
  const lines = text.split('\n');
  const top = findTopLine(lines);
  const named = namedJaxprs(lines, top);
  const lineToEqn: (number | null)[] = lines.map(() => null);
  // A top-level jaxpr printed on one line (`{ lambda ; a. let b = f a in (b,) }`): its eqns are on it.
  if (top === lines.length - 1 && / let /.test(lines[top] ?? '') && !/\blet\s*$/.test(lines[top] ?? '')) {
    if (eqnTexts.length > 0) lineToEqn[top] = 0;
    const spans = eqnTexts.map((_, index) => ({ index, start: top, end: top + 1 }));
    return { lines, spans, lineToEqn, top, named };
  }
  // A view sent in eqn ranges (design 0045) has its ranges line before `in (...)`: no eqn's.
  const outLine = findOutLine(lines) - (ranged ? 1 : 0);
  const starts: number[] = [];
  let cursor = findBodyStart(lines, top);
  for (const eqnText of eqnTexts) {
    const want = firstLine(eqnText);
    let found = -1;
    // Top-level eqns start at indent 4 (an inner jaxpr's eqns printed above are deeper).
    for (let i = cursor; i < outLine; i++) {
      const line = lines[i] ?? '';
      if (indentOf(line) === 4 && line.trim() === want) {
        found = i;
        break;
      }
    }
    if (found < 0) {
      for (let i = cursor; i < outLine; i++) {
        const line = lines[i] ?? '';
        if (indentOf(line) === 4 && !/^[\])}]/.test(line.trimStart())) {
          found = i;
          break;
        }
      }
    }
    if (found < 0) found = Math.min(cursor, outLine);
    starts.push(found);
    cursor = Math.min(found + 1, outLine);
  }
  const spans: EqnSpan[] = [];
  starts.forEach((start, index) => {
    const next = index + 1 < starts.length ? (starts[index + 1] ?? outLine) : outLine;
    const end = Math.min(Math.max(start + 1, next), lines.length);
    spans.push({ index, start, end });
    for (let l = start; l < end && l < lines.length; l++) lineToEqn[l] = index;
  });
  return { lines, spans, lineToEqn, top, named };
}

/**
 * Whether the lines of `span` print an inner jaxpr (`jaxpr={ lambda ...`): an eqn calling a
 * named jaxpr (`jit[name=f jaxpr=f] a b ...`) has none, only its wrapped arguments.
 */
export function printsInnerJaxpr(layout: JaxprLayout, span: EqnSpan): boolean {
  // Lines after the first (a top-level jaxpr on one line has its own `{ lambda` on it).
  for (let l = span.start + 1; l < span.end; l++) if ((layout.lines[l] ?? '').includes('{ lambda')) return true;
  return false;
}

/** One row of the folded text: a text line, or the marker standing for the lines folded away. */
export type TextRow =
  | { kind: 'line'; line: number; eqn: number | null }
  | { kind: 'fold'; eqn: number; hidden: number }
  | { kind: 'named'; eqn: null; hidden: number; names: string[] }
  | { kind: 'invar'; eqn: null; text: string; keypath: string | null; invar: number | null };

/** The top-level header (`{ lambda ; a:f32[8,4] b:f32[4] ... . let`, lines `[start, end)`) with
 * one row per invar, each named by its leaf's keypath (`invar` null: the `{ lambda ;` row). */
export interface NamedHeader {
  start: number;
  end: number;
  rows: { text: string; keypath: string | null; invar: number | null }[];
}

/** A keypath into a container (`params['layers'][3]['w']`, `state.w`), not a bare argument. */
const KEYPATH = /[[.]/;

/**
 * The header of the top-level jaxpr with its invars named by keypath: JAX prints the binders of
 * the inputs in a row (`{ lambda ; a:f32[8,4] b:f32[4] c:f32[4,4] ...`, wrapped over lines: a
 * real model opens on 150 of them), and `argNames` (`JaxprView.arg_names`, JAX's
 * `debug_info.arg_names`: one keypath per invar) says which leaf of `f`'s arguments each is.
 * Null when there is nothing to name (no `arg_names`, or none of them a keypath into a
 * container: `f(x, y)`'s header stays as JAX prints it) or the header does not read as one
 * binder per name (a header on one line with its eqns, another printer).
 */
export function namedHeader(layout: JaxprLayout, argNames: readonly string[] | null | undefined): NamedHeader | null {
  if (!argNames || argNames.length === 0 || !argNames.some((n) => KEYPATH.test(n))) return null;
  const start = layout.top;
  const end = findBodyStart(layout.lines, start);
  if (end <= start) return null;
  const text = layout.lines.slice(start, end).join('\n');
  const head = /^\{ lambda ([^;]*);([\s\S]*?)\.\s*let\s*$/.exec(text);
  if (head === null) return null;
  const binders = (head[2] ?? '').split(/\s+/).filter((t) => t !== '');
  if (binders.length !== argNames.length || !binders.every((b) => /^[^\s:]+:\S+$/.test(b))) return null;
  const width = Math.min(
    binders.reduce((most, b) => Math.max(most, b.length), 0),
    24,
  );
  const consts = (head[1] ?? '').replace(/\s+/g, ' ').trim();
  const rows: NamedHeader['rows'] = [{ text: consts === '' ? '{ lambda ;' : `{ lambda ${consts};`, keypath: null, invar: null }];
  binders.forEach((binder, i) => {
    const own = i === binders.length - 1 ? `${binder}. let` : binder;
    rows.push({ text: `    ${own.padEnd(width + 1)}`, keypath: argNames[i] ?? null, invar: i });
  });
  return { start, end, rows };
}

/**
 * The rows to show when the eqns in `folded` are folded: a folded eqn keeps its first and last
 * line (`g:f32[3] = jit[` ... `] f e c`), and one `fold` row stands for the lines in between.
 * `foldNamed`: one `named` row stands for the named jaxprs printed before the top-level jaxpr.
 * `header` (`namedHeader`): the top-level header's lines are shown as its rows, one per invar.
 */
export function visibleRows(
  layout: JaxprLayout,
  folded: ReadonlySet<number>,
  foldNamed = false,
  header: NamedHeader | null = null,
): TextRow[] {
  const rows: TextRow[] = [];
  const spanAt = new Map<number, EqnSpan>();
  for (const s of layout.spans) if (!spanAt.has(s.start)) spanAt.set(s.start, s);
  let i = 0;
  if (foldNamed && layout.top > 0) {
    rows.push({ kind: 'named', eqn: null, hidden: layout.top, names: layout.named });
    i = layout.top;
  }
  while (i < layout.lines.length) {
    if (header !== null && i === header.start) {
      for (const row of header.rows) rows.push({ kind: 'invar', eqn: null, ...row });
      i = header.end;
      continue;
    }
    const span = spanAt.get(i);
    if (span && folded.has(span.index) && span.end - span.start > 2 && printsInnerJaxpr(layout, span)) {
      rows.push({ kind: 'line', line: span.start, eqn: span.index });
      rows.push({ kind: 'fold', eqn: span.index, hidden: span.end - span.start - 2 });
      rows.push({ kind: 'line', line: span.end - 1, eqn: span.index });
      i = span.end;
      continue;
    }
    rows.push({ kind: 'line', line: i, eqn: layout.lineToEqn[i] ?? null });
    i += 1;
  }
  return rows;
}
