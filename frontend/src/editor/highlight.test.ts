import { EditorState } from '@codemirror/state';
import type { DecorationSet } from '@codemirror/view';
import { EditorView } from '@codemirror/view';
import { describe, expect, it } from 'vitest';
import {
  ERROR_LINE_CLASS,
  ERROR_MARK_CLASS,
  SELECTED_LINE_CLASS,
  errorDecorations,
  lineMarkers,
  setErrorLoc,
  setSelectedLines,
} from './highlight';

const DOC = 'import jax\n\ndef f(x):\n    if x > 0:\n        return x\n    return -x\n';

interface Found {
  from: number;
  to: number;
  cls: string;
}

function collect(set: DecorationSet): Found[] {
  const found: Found[] = [];
  set.between(0, Number.MAX_SAFE_INTEGER, (from, to, deco) => {
    const cls = (deco.spec as { class?: string }).class ?? '';
    found.push({ from, to, cls });
  });
  return found;
}

function decorations(state: EditorState): Found[] {
  return state.facet(EditorView.decorations).flatMap((d) => (typeof d === 'function' ? [] : collect(d)));
}

describe('line markers', () => {
  it('marks the error line and its columns (0-based, as SourceLoc)', () => {
    const state = EditorState.create({ doc: DOC });
    const line4 = state.doc.line(4);
    const found = collect(
      errorDecorations(state.doc, { line: 4, column: 7, end_line: 4, end_column: 12, function: 'f', callers: null }),
    );
    expect(found).toEqual([
      { from: line4.from, to: line4.from, cls: ERROR_LINE_CLASS },
      { from: line4.from + 7, to: line4.from + 12, cls: ERROR_MARK_CLASS },
    ]);
    expect(state.doc.sliceString(line4.from + 7, line4.from + 12)).toBe('x > 0');
  });

  it('marks to the end of the line without an end column, and nothing past the document', () => {
    const state = EditorState.create({ doc: DOC });
    const line3 = state.doc.line(3);
    const found = collect(
      errorDecorations(state.doc, { line: 3, column: 4, end_line: null, end_column: null, function: null, callers: null }),
    );
    expect(found[1]).toEqual({ from: line3.from + 4, to: line3.to, cls: ERROR_MARK_CLASS });
    expect(collect(errorDecorations(state.doc, { line: 99, column: null, end_line: null, end_column: null, function: null, callers: null }))).toEqual([]);
    expect(collect(errorDecorations(state.doc, null))).toEqual([]);
    // Python puts a syntax error at the end of a line one past its last character.
    const atEnd = collect(
      errorDecorations(state.doc, { line: 3, column: line3.length, end_line: 3, end_column: line3.length + 1, function: null, callers: null }),
    );
    expect(atEnd[1]).toEqual({ from: line3.to - 1, to: line3.to, cls: ERROR_MARK_CLASS });
  });

  it('highlights the selected lines through effects, skipping lines that do not exist', () => {
    let state = EditorState.create({ doc: DOC, extensions: lineMarkers() });
    state = state.update({ effects: setSelectedLines.of([5, 2, 5, 40]) }).state;
    const selected = decorations(state).filter((d) => d.cls === SELECTED_LINE_CLASS);
    expect(selected.map((d) => state.doc.lineAt(d.from).number)).toEqual([2, 5]);
    state = state.update({
      effects: setErrorLoc.of({ line: 1, column: null, end_line: null, end_column: null, function: null, callers: null }),
    }).state;
    expect(decorations(state).filter((d) => d.cls === ERROR_LINE_CLASS)).toHaveLength(1);
    state = state.update({ effects: [setSelectedLines.of([]), setErrorLoc.of(null)] }).state;
    expect(decorations(state)).toEqual([]);
  });
});
