/**
 * Maps the eqns of a staged jaxpr onto the lines of JAX's own printout of it.
 *
 * `JaxprView.text` is `str(closed_jaxpr)` byte for byte; each `EqnView.text` is JAX's printout of
 * one eqn with the same variable names. An eqn may span several lines of the text: JAX's pretty
 * printer breaks long params (`dot_general[` ... `] a b`) and prints the inner jaxprs of
 * `jit`/`custom_jvp_call`/`scan` eqns in full. This module finds, for every top-level eqn, the
 * range of text lines it occupies, so that the text can be clicked and highlighted per eqn, and
 * the long eqns folded to their first and last line.
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
}

const firstLine = (s: string): string => {
  const nl = s.indexOf('\n');
  return (nl < 0 ? s : s.slice(0, nl)).trim();
};

const indentOf = (s: string): number => s.length - s.trimStart().length;

/** The line that starts the jaxpr's outvars (`  in (a, b) }`): the last line at indent 2 opening with `in`. */
export function findOutLine(lines: readonly string[]): number {
  for (let i = lines.length - 1; i >= 0; i--) {
    const line = lines[i] ?? '';
    if (indentOf(line) === 2 && /^in[\s(]/.test(line.trimStart())) return i;
  }
  return lines.length;
}

/** The first line after the header `{ lambda ... let` (the header can wrap over several lines). */
function findBodyStart(lines: readonly string[]): number {
  for (let i = 0; i < lines.length; i++) {
    if (/\blet\s*$/.test(lines[i] ?? '')) return i + 1;
  }
  return 0;
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
  // A view sent in eqn ranges (design 0045) has its ranges line before `in (...)`: no eqn's.
  const outLine = findOutLine(lines) - (ranged ? 1 : 0);
  const starts: number[] = [];
  let cursor = findBodyStart(lines);
  for (const eqnText of eqnTexts) {
    const want = firstLine(eqnText);
    let found = -1;
    for (let i = cursor; i < outLine; i++) {
      if ((lines[i] ?? '').trim() === want) {
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
  const lineToEqn: (number | null)[] = lines.map(() => null);
  starts.forEach((start, index) => {
    const next = index + 1 < starts.length ? (starts[index + 1] ?? outLine) : outLine;
    const end = Math.min(Math.max(start + 1, next), lines.length);
    spans.push({ index, start, end });
    for (let l = start; l < end && l < lines.length; l++) lineToEqn[l] = index;
  });
  return { lines, spans, lineToEqn };
}

/** One row of the folded text: a text line, or the marker standing for the lines folded away. */
export type TextRow =
  | { kind: 'line'; line: number; eqn: number | null }
  | { kind: 'fold'; eqn: number; hidden: number };

/**
 * The rows to show when the eqns in `folded` are folded: a folded eqn keeps its first and last
 * line (`g:f32[3] = jit[` ... `] f e c`), and one `fold` row stands for the lines in between.
 */
export function visibleRows(layout: JaxprLayout, folded: ReadonlySet<number>): TextRow[] {
  const rows: TextRow[] = [];
  const spanAt = new Map<number, EqnSpan>();
  for (const s of layout.spans) spanAt.set(s.start, s);
  let i = 0;
  while (i < layout.lines.length) {
    const span = spanAt.get(i);
    if (span && folded.has(span.index) && span.end - span.start > 2) {
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
