/**
 * CodeMirror state for the shell's line markers: the selected lines (the shared
 * `Selection.lines`) and the error marker (the `run_failed` source: its line, and from its
 * column to its end column when known).
 *
 * Lines are 1-based snippet lines, as in the protocol's `SourceLoc`; lines past the end of the
 * document are skipped (the code may have been edited since the run).
 */
import type { Extension, Range, Text } from '@codemirror/state';
import { StateEffect, StateField } from '@codemirror/state';
import type { DecorationSet } from '@codemirror/view';
import { Decoration, EditorView } from '@codemirror/view';
import type { SourceLoc } from '../protocol';

/** CSS class on each selected line (`.cm-line`). */
export const SELECTED_LINE_CLASS = 'cm-js-selected';
/** CSS class on the error line, and on the marked columns within it. */
export const ERROR_LINE_CLASS = 'cm-js-error-line';
export const ERROR_MARK_CLASS = 'cm-js-error-mark';

export const setSelectedLines = StateEffect.define<readonly number[]>();
export const setErrorLoc = StateEffect.define<SourceLoc | null>();

const selectedLine = Decoration.line({ class: SELECTED_LINE_CLASS });
const errorLine = Decoration.line({ class: ERROR_LINE_CLASS });
const errorMark = Decoration.mark({ class: ERROR_MARK_CLASS });

function selectedDecorations(doc: Text, lines: readonly number[]): DecorationSet {
  const valid = [...new Set(lines)].filter((n) => n >= 1 && n <= doc.lines).sort((a, b) => a - b);
  return Decoration.set(valid.map((n) => selectedLine.range(doc.line(n).from)));
}

/** Decorations of the error marker; a column range is marked only within the error's own line. */
export function errorDecorations(doc: Text, loc: SourceLoc | null): DecorationSet {
  if (loc === null || loc.line < 1 || loc.line > doc.lines) return Decoration.none;
  const line = doc.line(loc.line);
  const ranges: Range<Decoration>[] = [errorLine.range(line.from)];
  if (loc.column !== null && line.length > 0) {
    // A syntax error at the end of a line has its column past the last character: mark that one.
    const column = Math.min(loc.column, line.length - 1);
    const start = line.from + column;
    const sameLine = loc.end_line === null || loc.end_line === loc.line;
    const endColumn = sameLine && loc.end_column !== null ? loc.end_column : line.length;
    const end = Math.min(line.from + Math.max(endColumn, column + 1), line.to);
    ranges.push(errorMark.range(start, end));
  }
  return Decoration.set(ranges, true);
}

const selectedField = StateField.define<{ lines: readonly number[]; deco: DecorationSet }>({
  create: () => ({ lines: [], deco: Decoration.none }),
  update(value, tr) {
    let { lines } = value;
    let changed = tr.docChanged;
    for (const effect of tr.effects) {
      if (effect.is(setSelectedLines)) {
        lines = effect.value;
        changed = true;
      }
    }
    return changed ? { lines, deco: selectedDecorations(tr.state.doc, lines) } : value;
  },
  provide: (field) => EditorView.decorations.from(field, (value) => value.deco),
});

const errorField = StateField.define<{ loc: SourceLoc | null; deco: DecorationSet }>({
  create: () => ({ loc: null, deco: Decoration.none }),
  update(value, tr) {
    let { loc } = value;
    let changed = false;
    for (const effect of tr.effects) {
      if (effect.is(setErrorLoc)) {
        loc = effect.value;
        changed = true;
      }
    }
    // After an edit the marker would point at the wrong text: map the decorations along with it.
    if (!changed) return tr.docChanged ? { loc, deco: value.deco.map(tr.changes) } : value;
    return { loc, deco: errorDecorations(tr.state.doc, loc) };
  },
  provide: (field) => EditorView.decorations.from(field, (value) => value.deco),
});

/** The two marker fields; dispatch `setSelectedLines` / `setErrorLoc` effects to change them. */
export function lineMarkers(): Extension {
  return [selectedField, errorField];
}
