import { describe, expect, it } from 'vitest';
import { splitInlineCode } from './inline-code';

describe('splitInlineCode', () => {
  it('splits backtick spans into code parts', () => {
    expect(splitInlineCode('Use `jnp.where` or `lax.cond`.')).toEqual([
      { text: 'Use ', code: false },
      { text: 'jnp.where', code: true },
      { text: ' or ', code: false },
      { text: 'lax.cond', code: true },
      { text: '.', code: false },
    ]);
  });
  it('leaves text without spans and unmatched backticks alone', () => {
    expect(splitInlineCode('plain')).toEqual([{ text: 'plain', code: false }]);
    expect(splitInlineCode('a ` b')).toEqual([{ text: 'a ` b', code: false }]);
    expect(splitInlineCode('')).toEqual([]);
  });
});
