/**
 * The link to Flax's page on an error comes from the run's `flax_error_raised.docs`, which the
 * snippet can forge (issue 31): the view links it only through `safeHref`, so a `javascript:` or
 * `data:` target renders no link at all, and Flax's own https page still does.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { Event } from '../../frontend/src/protocol';
import { renderView } from '../../frontend/src/test/render-view';
import View from './View.svelte';

const golden: Event[] = readFileSync(new URL('./golden/branch_error.events.jsonl', import.meta.url), 'utf8')
  .split('\n')
  .filter((l) => l.trim() !== '')
  .map((l) => JSON.parse(l) as Event);

const DOCS = 'https://flax.readthedocs.io/en/latest/api_reference/flax.errors.html#flax.errors.ScopeParamShapeError';

function withDocs(docs: string): Event[] {
  return golden.map((e) => (e.type === 'flax_error_raised' ? { ...e, docs } : e));
}

const links = (html: string): string[] => [...html.matchAll(/<a\b[^>]*>/g)].map((m) => m[0]);

describe("flax_params' link to Flax's page on the error", () => {
  it('links the https page Flax names', () => {
    expect(golden.some((e) => e.type === 'flax_error_raised' && e.docs === DOCS)).toBe(true);
    const html = renderView(View, golden);
    expect(links(html).filter((a) => a.includes(`href="${DOCS}"`))).toHaveLength(1);
    expect(html).toContain("Flax's page on this error");
  });

  it('renders no link for a forged javascript: or data: target', () => {
    for (const forged of ['javascript:alert(document.domain)', ' JaVa\tScRiPt:alert(1)', 'data:text/html,<b>x</b>']) {
      const html = renderView(View, withDocs(forged));
      expect(html).toContain('data-testid="flax-error"');
      expect(html).not.toContain("Flax's page on this error");
      expect(links(html).filter((a) => /href=/.test(a) && !/href="https?:/.test(a))).toEqual([]);
    }
  });
});
