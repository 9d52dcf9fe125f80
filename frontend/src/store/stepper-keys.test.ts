import { describe, expect, it } from 'vitest';
import { OWN_KEYS_SELECTOR, stepperKey, type KeyLike } from './stepper-keys';

/** A target inside the elements matching `inside` (a stand-in for Element.closest). */
function target(inside: string[]): { closest(selector: string): object | null } {
  return {
    closest: (selector: string) => (selector.split(',').some((s) => inside.includes(s)) ? {} : null),
  };
}

function key(k: string, over: Partial<KeyLike> = {}): KeyLike {
  return {
    key: k,
    altKey: false,
    ctrlKey: false,
    metaKey: false,
    shiftKey: false,
    defaultPrevented: false,
    target: target([]),
    ...over,
  };
}

describe('stepper keys', () => {
  it('maps ←/→ to previous/next and Home/End to first/last', () => {
    expect(stepperKey(key('ArrowLeft'))).toBe('prev');
    expect(stepperKey(key('ArrowRight'))).toBe('next');
    expect(stepperKey(key('Home'))).toBe('first');
    expect(stepperKey(key('End'))).toBe('last');
    expect(stepperKey(key('ArrowUp'))).toBeNull();
    expect(stepperKey(key('a'))).toBeNull();
    // On the page's body (no element focused) the keys step too.
    expect(stepperKey(key('End', { target: null }))).toBe('last');
  });

  it('leaves keys with a modifier, and keys a view handled, alone', () => {
    for (const mod of ['altKey', 'ctrlKey', 'metaKey', 'shiftKey'] as const) {
      expect(stepperKey(key('ArrowRight', { [mod]: true }))).toBeNull();
    }
    expect(stepperKey(key('ArrowRight', { defaultPrevented: true }))).toBeNull();
  });

  it('does not step while focus is in the editor, an input or a widget that uses the keys', () => {
    for (const where of ['.cm-editor', 'input', 'textarea', 'select', '[role="separator"]', '[contenteditable="true"]']) {
      expect(OWN_KEYS_SELECTOR.split(',')).toContain(where);
      expect(stepperKey(key('ArrowLeft', { target: target([where]) }))).toBeNull();
      expect(stepperKey(key('End', { target: target([where]) }))).toBeNull();
    }
    // A focused button (a stepper button, a tab) is not typing: the keys step.
    expect(stepperKey(key('ArrowLeft', { target: target(['button']) }))).toBe('prev');
  });
});
