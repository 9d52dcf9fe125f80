/**
 * Two texts side by side, line against line, with what changed marked (the page's "Compare
 * with the previous run", design 0043). The line alignment is jsdiff's (`diffArrays`, Myers'
 * algorithm); nothing here is a diff algorithm of its own.
 *
 * - `textRows`: lines are equal only when their texts are (StableHLO, HLO, keys, outputs, the
 *   snippet), as `jaxscope diff --text` compares them; `unifiedDiff` is that comparison in the unified
 *   format of `jaxscope diff`'s output (Python's `difflib.unified_diff`).
 * - `jaxprRows`: a jaxpr's eqns are matched by position and primitive, not by variable names
 *   (`jaxpr-normalise.ts`). The top-level eqns are aligned by their first line's key (primitive,
 *   params printed inline, outvar types, literals; variables as `•`); an eqn left over on each
 *   side at the same place is paired with its counterpart (the sin that became a cos). Within a
 *   matched or paired eqn its lines are aligned by their keys. Then the variables: the outvars of
 *   aligned lines correspond, position by position, and so do the jaxprs' invars; a line whose
 *   key is the same on both sides is `same` when each operand corresponds to its counterpart's
 *   (only renamed), and `changed` when an operand comes from elsewhere (the eqn reads another
 *   value). A line whose key differs is `changed`; one without a counterpart is `removed` or
 *   `added`. In a `changed` pair the words that differ once the later line is written in the
 *   earlier one's names are marked (`parts`), so a renamed variable is never marked.
 */
import { diffArrays, formatPatch, structuredPatch } from 'diff';
import type { JaxprLine } from './jaxpr-normalise';
import { expandOneLine, readJaxpr, renameVars } from './jaxpr-normalise';

export type RowKind = 'same' | 'changed' | 'removed' | 'added';

/**
 * The longest one alignment may take (jsdiff's `timeout`, ms). Two long texts that differ
 * throughout (10,000 lines: tens of seconds) are then compared line against line by position,
 * and `Approximate.approximate` says so.
 */
export const ALIGN_TIMEOUT_MS = 800;

/** Set when an alignment ran out of time and lines were compared by position instead. */
export interface Approximate {
  approximate: boolean;
}

/** A stretch of a line: `mark` when it differs from the other side. */
export interface Part {
  text: string;
  mark: boolean;
}

/** One row of the side-by-side view: a line of the earlier text (`a`), of the later (`b`), or both. */
export interface Row {
  kind: RowKind;
  /** 0-based line in the earlier text, null on an added row */
  a: number | null;
  /** 0-based line in the later text, null on a removed row */
  b: number | null;
  aText: string;
  bText: string;
  /** the earlier and later line cut into marked and unmarked parts (a `changed` row's) */
  aParts: Part[];
  bParts: Part[];
  /** the lines' texts differ although the row is `same` (variables renamed) */
  renamed: boolean;
}

/** How many rows of each kind (the compare view's header: "2 changed, 1 added"). */
export interface RowCounts {
  same: number;
  changed: number;
  removed: number;
  added: number;
  renamed: number;
}

function whole(text: string): Part[] {
  return [{ text, mark: false }];
}

function marked(text: string): Part[] {
  return [{ text, mark: true }];
}

/**
 * The words of `a` and `b` that differ (jsdiff over their whitespace-separated words), as parts
 * of each. `bCompared` is `b` written in `a`'s variable names (the same words, renamed): the
 * words are compared in it, and `b`'s own words shown with the same marks.
 */
function wordParts(a: string, b: string, bCompared: string = b): [Part[], Part[]] {
  const aWords = a.split(/(\s+)/);
  const bWords = b.split(/(\s+)/);
  const comparedWords = bCompared.split(/(\s+)/);
  // Renaming never adds or drops a word; if it did, the words are compared as they are.
  const against = comparedWords.length === bWords.length ? comparedWords : bWords;
  const aMarks: boolean[] = [];
  const bMarks: boolean[] = [];
  const changes = diffArrays(aWords, against, { timeout: ALIGN_TIMEOUT_MS });
  if (changes === undefined) return [marked(a), marked(b)];
  for (const change of changes) {
    for (let k = 0; k < change.count; k++) {
      if (!change.added) aMarks.push(change.removed);
      if (!change.removed) bMarks.push(change.added);
    }
  }
  return [joinParts(aWords, aMarks), joinParts(bWords, bMarks)];
}

/** Words and their marks as parts (whitespace never marked; neighbours of one mark joined). */
function joinParts(words: readonly string[], marks: readonly boolean[]): Part[] {
  const out: Part[] = [];
  words.forEach((w, i) => {
    if (w === '') return;
    const mark = (marks[i] ?? false) && w.trim() !== '';
    const last = out[out.length - 1];
    if (last && last.mark === mark) last.text += w;
    else out.push({ text: w, mark });
  });
  return out;
}

function row(kind: RowKind, a: number | null, b: number | null, aText: string, bText: string): Row {
  const aParts = kind === 'removed' ? marked(aText) : whole(aText);
  const bParts = kind === 'added' ? marked(bText) : whole(bText);
  return { kind, a, b, aText, bText, aParts, bParts, renamed: false };
}

/**
 * The rows of two lists of lines aligned by their keys (jsdiff). Where lines were removed and
 * others added at the same place, they are paired as `changed`: first those whose `loose` keys
 * align (jsdiff again: an eqn with the same outvar types and operands but another primitive,
 * the sin that became a cos), then the rest by position; the lines left over are removed/added.
 */
function alignLines(
  aLines: readonly string[],
  bLines: readonly string[],
  aKeys: readonly string[],
  bKeys: readonly string[],
  aStart: number,
  bStart: number,
  aLoose: readonly string[] | null = null,
  bLoose: readonly string[] | null = null,
  note: Approximate = { approximate: false },
): Row[] {
  const rows: Row[] = [];
  let i = 0;
  let j = 0;
  /** `removed` lines of a and `added` of b from (i, j) paired by position, the rest left over */
  const pairByPosition = (removed: number, added: number): void => {
    const paired = Math.min(removed, added);
    for (let k = 0; k < Math.max(removed, added); k++) {
      if (k < paired) {
        rows.push(row('changed', aStart + i, bStart + j, aLines[i] ?? '', bLines[j] ?? ''));
        i++;
        j++;
      } else if (k < removed) {
        rows.push(row('removed', aStart + i, null, aLines[i] ?? '', ''));
        i++;
      } else {
        rows.push(row('added', null, bStart + j, '', bLines[j] ?? ''));
        j++;
      }
    }
  };
  const changes = diffArrays([...aKeys], [...bKeys], { timeout: ALIGN_TIMEOUT_MS });
  if (changes === undefined) {
    // Out of time: line against line, the same where the keys are.
    note.approximate = true;
    const n = Math.max(aKeys.length, bKeys.length);
    for (let k = 0; k < n; k++) {
      if (k < aKeys.length && k < bKeys.length) {
        const kind = aKeys[k] === bKeys[k] ? 'same' : 'changed';
        rows.push(row(kind, aStart + k, bStart + k, aLines[k] ?? '', bLines[k] ?? ''));
      } else if (k < aKeys.length) rows.push(row('removed', aStart + k, null, aLines[k] ?? '', ''));
      else rows.push(row('added', null, bStart + k, '', bLines[k] ?? ''));
    }
    return rows;
  }
  for (let c = 0; c < changes.length; c++) {
    const change = changes[c]!;
    if (!change.added && !change.removed) {
      for (let k = 0; k < change.count; k++, i++, j++) {
        rows.push(row('same', aStart + i, bStart + j, aLines[i] ?? '', bLines[j] ?? ''));
      }
      continue;
    }
    // A run of removed lines and the added run right after it (or either alone).
    const removed = change.removed ? change.count : 0;
    const next = changes[c + 1];
    const added = change.added ? change.count : next?.added && change.removed ? next.count : 0;
    if (change.removed && next?.added) c++;
    if (aLoose === null || bLoose === null || removed === 0 || added === 0) {
      pairByPosition(removed, added);
      continue;
    }
    // Pair the lines whose loose keys align; between two such pairs, by position.
    let pendingRemoved = 0;
    let pendingAdded = 0;
    const looseChanges = diffArrays(aLoose.slice(i, i + removed), bLoose.slice(j, j + added), {
      timeout: ALIGN_TIMEOUT_MS,
    });
    if (looseChanges === undefined) {
      note.approximate = true;
      pairByPosition(removed, added);
      continue;
    }
    for (const loose of looseChanges) {
      if (loose.removed) pendingRemoved += loose.count;
      else if (loose.added) pendingAdded += loose.count;
      else {
        pairByPosition(pendingRemoved, pendingAdded);
        pendingRemoved = 0;
        pendingAdded = 0;
        for (let k = 0; k < loose.count; k++) {
          rows.push(row('changed', aStart + i, bStart + j, aLines[i] ?? '', bLines[j] ?? ''));
          i++;
          j++;
        }
      }
    }
    pairByPosition(pendingRemoved, pendingAdded);
  }
  return rows;
}

/** Side-by-side rows of two texts compared line by line, as `jaxscope diff --text` compares them. */
export function textRows(a: string, b: string, note: Approximate = { approximate: false }): Row[] {
  const aLines = a.split('\n');
  const bLines = b.split('\n');
  const rows = alignLines(aLines, bLines, aLines, bLines, 0, 0, null, null, note);
  for (const r of rows) {
    if (r.kind === 'changed') [r.aParts, r.bParts] = wordParts(r.aText, r.bText);
  }
  return rows;
}

/** A top-level unit of a jaxpr: its header, one eqn (all its lines), or its `in` line. */
interface Block {
  start: number;
  lines: JaxprLine[];
}

/** The top-level units of a jaxpr text's lines: a line at the outer eqns' depth starts one. */
function blocks(lines: readonly JaxprLine[]): Block[] {
  const out: Block[] = [];
  for (let n = 0; n < lines.length; n++) {
    const line = lines[n]!;
    const last = out[out.length - 1];
    // The header (depth 0), the outer `in` (1) and the outer eqns' first lines (2) start units;
    // an eqn's params, inner jaxprs and closing `] operands` line stay in its unit.
    const starts = last === undefined || (line.indent <= 2 && !line.text.trimStart().startsWith(']'));
    if (starts) out.push({ start: n, lines: [line] });
    else last.lines.push(line);
  }
  return out;
}

/** An eqn's first line without its primitive and inline params (`•:f32[3] = ◦ •`), else its key. */
function looseKey(line: JaxprLine): string {
  // The header and the `in` line pair only with their like: by position, an eqn added at the
  // end was paired with the old `in` line, and the new `in` line was marked added.
  const text = line.text.trimStart();
  if (line.primitive === null && line.indent <= 1) {
    if (text.startsWith('{ lambda')) return '{ lambda ◦';
    if (text.startsWith('in ')) return 'in ◦';
  }
  if (line.primitive === null) return line.key;
  const at = line.key.indexOf(`= ${line.primitive}`);
  if (at < 0) return line.key;
  let rest = line.key.slice(at + 2 + line.primitive.length);
  if (rest.startsWith('[')) {
    // Inline params up to their closing bracket (none on a line that opens params over several).
    let depth = 0;
    let end = rest.length;
    for (let k = 0; k < rest.length; k++) {
      if (rest[k] === '[') depth++;
      else if (rest[k] === ']' && --depth === 0) {
        end = k + 1;
        break;
      }
    }
    rest = rest.slice(end);
  }
  return `${line.key.slice(0, at)}= ◦${rest}`;
}

/** The binders of two changed lines mapped (later -> earlier) where their types align. */
function mapBinders(la: JaxprLine, lb: JaxprLine, toA: Map<string, string>): void {
  const aBinders = la.vars.filter((_v, k) => la.binds[k]);
  const bBinders = lb.vars.filter((_v, k) => lb.binds[k]);
  const aTypes = la.types.filter((_t, k) => la.binds[k]);
  const bTypes = lb.types.filter((_t, k) => lb.binds[k]);
  let i = 0;
  let j = 0;
  for (const change of diffArrays(aTypes, bTypes)) {
    if (!change.added && !change.removed) {
      for (let k = 0; k < change.count; k++, i++, j++) toA.set(bBinders[j]!, aBinders[i]!);
    } else if (change.removed) i += change.count;
    else j += change.count;
  }
}

/** Side-by-side rows of two jaxpr texts, eqns matched by position and primitive (module comment). */
export function jaxprRows(a: string, b: string, note: Approximate = { approximate: false }): Row[] {
  // A short jaxpr JAX printed on one line is compared eqn by eqn too (`expandOneLine`).
  const aLines = readJaxpr(expandOneLine(a));
  const bLines = readJaxpr(expandOneLine(b));
  const aBlocks = blocks(aLines);
  const bBlocks = blocks(bLines);
  const blockRows = alignLines(
    aBlocks.map((x) => x.lines[0]!.text),
    bBlocks.map((x) => x.lines[0]!.text),
    aBlocks.map((x) => x.lines[0]!.key),
    bBlocks.map((x) => x.lines[0]!.key),
    0,
    0,
    aBlocks.map((x) => looseKey(x.lines[0]!)),
    bBlocks.map((x) => looseKey(x.lines[0]!)),
    note,
  );
  // Each aligned pair of blocks: its lines aligned by key; unpaired blocks line by line.
  const rows: Row[] = [];
  for (const br of blockRows) {
    const ab = br.a === null ? null : aBlocks[br.a]!;
    const bb = br.b === null ? null : bBlocks[br.b]!;
    if (ab && bb) {
      rows.push(
        ...alignLines(
          ab.lines.map((l) => l.text),
          bb.lines.map((l) => l.text),
          ab.lines.map((l) => l.key),
          bb.lines.map((l) => l.key),
          ab.start,
          bb.start,
          null,
          null,
          note,
        ),
      );
      // The eqns were paired although their first lines differ: that row is changed.
      if (br.kind === 'changed') {
        const first = rows.find((r) => r.a === ab.start && r.b === bb.start);
        if (first) first.kind = 'changed';
      }
    } else if (ab) {
      ab.lines.forEach((l, k) => rows.push(row('removed', ab.start + k, null, l.text, '')));
    } else if (bb) {
      bb.lines.forEach((l, k) => rows.push(row('added', null, bb.start + k, '', l.text)));
    }
  }
  // The variables: outvars of aligned lines correspond; each operand must map to its counterpart.
  const toA = new Map<string, string>();
  for (const r of rows) {
    if (r.a === null || r.b === null) continue;
    const la = aLines[r.a]!;
    const lb = bLines[r.b]!;
    if (r.kind === 'same') {
      // The same key: the same variables' places. Binders correspond; each use must.
      let rewired = false;
      la.vars.forEach((va, k) => {
        const vb = lb.vars[k]!;
        if (la.binds[k]) toA.set(vb, va);
        else if (toA.get(vb) !== va) rewired = true;
      });
      if (rewired) r.kind = 'changed';
    } else {
      // A changed line: its binders correspond where their types line up (jsdiff over the types).
      mapBinders(la, lb, toA);
    }
  }
  for (const r of rows) {
    if (r.a === null || r.b === null) continue;
    const lb = bLines[r.b]!;
    const inA = renameVars(lb, (v) => toA.get(v) ?? `${v}′`);
    if (r.kind === 'same') {
      r.renamed = r.aText !== r.bText;
      if (inA !== r.aText && !r.renamed) r.kind = 'changed';
    }
    if (r.kind === 'changed') [r.aParts, r.bParts] = wordParts(r.aText, r.bText, inA);
  }
  return rows;
}

/** How many rows of each kind. */
export function countRows(rows: readonly Row[]): RowCounts {
  const counts: RowCounts = { same: 0, changed: 0, removed: 0, added: 0, renamed: 0 };
  for (const r of rows) {
    counts[r.kind]++;
    if (r.renamed) counts.renamed++;
  }
  return counts;
}

/**
 * The unified diff of two texts (three lines of context), headed by the two names, `""` when
 * they are equal: the format of `jaxscope diff`'s output (`difflib.unified_diff` with every
 * line ended by a newline).
 */
export function unifiedDiff(a: string, b: string, aName: string, bName: string): string {
  if (a === b) return '';
  const ended = (t: string): string => (t === '' || t.endsWith('\n') ? t : `${t}\n`);
  const patch = structuredPatch(aName, bName, ended(a), ended(b), undefined, undefined, { context: 3 });
  const text = formatPatch(patch, { includeIndex: false, includeUnderline: false, includeFileHeaders: true });
  // jsdiff ends a header name with a tab when its header is empty, and writes a one-line range
  // as `1,1`; difflib writes the name alone and the range as `1`.
  return text
    .replace(/^(---|\+\+\+) (.*?)\t$/gm, '$1 $2')
    .replace(/^@@ -(\d+)(,\d+)? \+(\d+)(,\d+)? @@$/gm, (_m, a: string, al: string | undefined, b: string, bl: string | undefined) => {
      const range = (start: string, len: string | undefined): string => (len === ',1' ? start : `${start}${len ?? ''}`);
      return `@@ -${range(a, al)} +${range(b, bl)} @@`;
    });
}
