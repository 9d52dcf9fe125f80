/**
 * "What JAX keyed on" for a model-like call (fixture many_params: 40 parameter leaves, then x
 * grows from f32[3] to f32[4]): the entry that differs comes first, and a long entry equal in
 * both calls (the 593-character input pytree) shows its first characters once, with "same in
 * both: N more characters" that opens it. A review of gpt_stack saw the input pytree row 2,528 px
 * tall, printed twice, and the differing x aval last.
 */
import { describe, expect, it } from 'vitest';
import { fixtureLoader } from '../../frontend/src/test/fixtures';
import { renderView } from '../../frontend/src/test/render-view';
import View from './View.svelte';
import { KEY_PREVIEW_CHARS, cachesModel, keyDiffRows, keyMoreText, keyPreview } from './view-model';

const load = fixtureLoader(import.meta.url);

describe('the key diff of a call with many parameter leaves', () => {
  const events = load('many_params');
  const second = cachesModel(events, events, 1).current!;

  it('lists the differing entry first, then the rest in JAX order', () => {
    expect(second.entries.at(-1)?.name).not.toBe('x aval');
    const rows = keyDiffRows(second);
    expect(rows.length).toBe(second.entries.length);
    expect(rows[0]!.entry.name).toBe('x aval');
    expect(rows[0]!.entry.differs).toBe(true);
    expect(rows[0]!.collapsed).toBe(false);
    expect(rows.slice(1).map((r) => r.entry.name)).toEqual(second.entries.filter((e) => !e.differs).map((e) => e.name));
  });

  it('collapses the long equal input pytree, and opens it on demand', () => {
    const pytree = keyDiffRows(second).find((r) => r.entry.name === 'input pytree')!;
    expect(pytree.entry.now.length).toBe(593);
    expect(pytree.collapsed).toBe(true);
    expect(pytree.preview.length).toBe(KEY_PREVIEW_CHARS + 1);
    expect(keyMoreText(pytree)).toBe(`same in both: ${593 - KEY_PREVIEW_CHARS} more characters`);
    const open = keyDiffRows(second, new Set(['input pytree'])).find((r) => r.entry.name === 'input pytree')!;
    expect(open.collapsed).toBe(false);
    // short equal entries stay as they are
    expect(keyDiffRows(second).filter((r) => r.collapsed).map((r) => r.entry.name)).toEqual(['input pytree']);
  });

  it('collapses many lines to the first three', () => {
    const text = Array.from({ length: 12 }, (_, i) => `line ${i}`).join('\n');
    expect(keyPreview(text)).toEqual({ preview: 'line 0\nline 1\nline 2', moreLines: 9, moreChars: 0 });
    expect(keyPreview('short')).toBeNull();
  });

  it('renders the differing row first and the pytree collapsed', () => {
    const html = renderView(View, events);
    const diff = html.slice(html.indexOf('data-testid="caches-diff"'));
    const firstRow = /<tr[^>]*data-differs="(true|false)"[^>]*>([\s\S]*?)<\/tr>/.exec(diff);
    expect(firstRow?.[1]).toBe('true');
    expect(firstRow?.[2]).toContain('x aval');
    expect(diff).toContain('same in both: 433 more characters');
  });
});
