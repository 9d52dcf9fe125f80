/**
 * The CodeMirror 6 editor of the shell: Python mode with 4-space indentation, theme colours from
 * the page's CSS variables (so the light/dark toggle restyles it without reconfiguring), the
 * line markers, `Mod-Enter` to run, and a callback when the user puts the cursor on a line.
 */
import { indentUnit, HighlightStyle, syntaxHighlighting } from '@codemirror/language';
import { python } from '@codemirror/lang-python';
import type { Extension } from '@codemirror/state';
import { Prec } from '@codemirror/state';
import { EditorView, keymap } from '@codemirror/view';
import { tags } from '@lezer/highlight';
import { basicSetup } from 'codemirror';
import { lineMarkers } from './highlight';

export interface EditorCallbacks {
  /** the document changed (typing, paste, example load) */
  onChange: (text: string) => void;
  /** the user moved the cursor (click or keys) onto this 1-based line */
  onLineSelected: (line: number) => void;
  /** Ctrl/Cmd+Enter */
  onRun: () => void;
}

const highlightStyle = HighlightStyle.define([
  { tag: [tags.keyword, tags.controlKeyword, tags.definitionKeyword, tags.moduleKeyword], color: 'var(--syn-keyword)' },
  { tag: [tags.string, tags.special(tags.string)], color: 'var(--syn-string)' },
  { tag: [tags.number, tags.bool, tags.null], color: 'var(--syn-number)' },
  { tag: [tags.comment, tags.lineComment], color: 'var(--syn-comment)', fontStyle: 'italic' },
  { tag: [tags.function(tags.definition(tags.variableName)), tags.definition(tags.className)], color: 'var(--syn-def)' },
  { tag: [tags.operator, tags.punctuation], color: 'var(--syn-punct)' },
  { tag: [tags.propertyName], color: 'var(--syn-property)' },
]);

const theme = EditorView.theme({
  '&': { color: 'var(--fg)', backgroundColor: 'var(--editor-bg)', height: '100%' },
  '.cm-content': { caretColor: 'var(--fg)', fontFamily: 'var(--mono)' },
  '.cm-scroller': { fontFamily: 'var(--mono)', lineHeight: '1.5' },
  '.cm-gutters': { backgroundColor: 'var(--editor-gutter)', color: 'var(--muted)', border: 'none' },
  '.cm-activeLine': { backgroundColor: 'var(--editor-active)' },
  '.cm-activeLineGutter': { backgroundColor: 'var(--editor-active)' },
  '&.cm-focused .cm-cursor': { borderLeftColor: 'var(--fg)' },
  '&.cm-focused .cm-selectionBackground, .cm-selectionBackground, ::selection': {
    backgroundColor: 'var(--editor-selection) !important',
  },
  '.cm-line.cm-js-selected': { backgroundColor: 'var(--highlight-bg)', boxShadow: 'inset 3px 0 var(--accent)' },
  '.cm-line.cm-js-error-line': { backgroundColor: 'var(--error-bg)', boxShadow: 'inset 3px 0 var(--error)' },
  '.cm-js-error-mark': { textDecoration: 'underline wavy var(--error)', textUnderlineOffset: '3px' },
  '.cm-tooltip': { backgroundColor: 'var(--panel)', color: 'var(--fg)', border: '1px solid var(--border)' },
});

export function editorExtensions(callbacks: EditorCallbacks): Extension[] {
  return [
    basicSetup,
    // The editor column is narrow; wrapped lines keep the whole snippet visible.
    EditorView.lineWrapping,
    python(),
    indentUnit.of('    '),
    syntaxHighlighting(highlightStyle),
    theme,
    lineMarkers(),
    // Above basicSetup's keymap, so that Mod-Enter runs instead of inserting a blank line.
    Prec.highest(
      keymap.of([
        {
          key: 'Mod-Enter',
          run: () => {
            callbacks.onRun();
            return true;
          },
        },
      ]),
    ),
    EditorView.updateListener.of((update) => {
      if (update.docChanged) callbacks.onChange(update.state.doc.toString());
      const userMoved = update.transactions.some((tr) => tr.isUserEvent('select'));
      if (update.selectionSet && userMoved && !update.docChanged) {
        const head = update.state.selection.main.head;
        callbacks.onLineSelected(update.state.doc.lineAt(head).number);
      }
    }),
    EditorView.contentAttributes.of({ 'aria-label': 'Python snippet editor' }),
  ];
}
