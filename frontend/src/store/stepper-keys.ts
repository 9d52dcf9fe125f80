/**
 * The stepper's keyboard: ←/→ step back and forth, Home/End go to the first and last event.
 *
 * The page listens on the window; a key belongs to the stepper only when focus is not where
 * the key means something else: typing (the CodeMirror editor, an input, a select, a text
 * area, anything contenteditable) or a widget that uses arrows itself (a splitter, a slider, a
 * list box, a tree or grid). A key with a modifier, or one a view already handled
 * (`defaultPrevented`), is left alone.
 */

export type StepperMove = 'first' | 'prev' | 'next' | 'last';

const KEYS: Readonly<Record<string, StepperMove>> = {
  ArrowLeft: 'prev',
  ArrowRight: 'next',
  Home: 'first',
  End: 'last',
};

/** Where a key is not the stepper's: typing, and widgets that use arrows/Home/End themselves. */
export const OWN_KEYS_SELECTOR = [
  'input',
  'textarea',
  'select',
  '[contenteditable=""]',
  '[contenteditable="true"]',
  '.cm-editor',
  '[role="separator"]',
  '[role="slider"]',
  '[role="listbox"]',
  '[role="tree"]',
  '[role="grid"]',
  '[role="tablist"]',
  '[role="menu"]',
].join(',');

/** An event target that can say whether it sits inside something (an Element does). */
interface Closest {
  closest(selector: string): unknown;
}

/** The part of a KeyboardEvent the decision reads (a test passes a plain object). */
export interface KeyLike {
  key: string;
  altKey: boolean;
  ctrlKey: boolean;
  metaKey: boolean;
  shiftKey: boolean;
  defaultPrevented: boolean;
  target: EventTarget | Closest | null;
}

function hasClosest(target: unknown): target is Closest {
  return typeof target === 'object' && target !== null && typeof (target as Partial<Closest>).closest === 'function';
}

/** The stepper move for `event`, or null when the key is not the stepper's. */
export function stepperKey(event: KeyLike): StepperMove | null {
  const move = KEYS[event.key];
  if (move === undefined || event.defaultPrevented) return null;
  if (event.altKey || event.ctrlKey || event.metaKey || event.shiftKey) return null;
  const target = event.target;
  if (hasClosest(target) && target.closest(OWN_KEYS_SELECTOR) !== null) return null;
  return move;
}
