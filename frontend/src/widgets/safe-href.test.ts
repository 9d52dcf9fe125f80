import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { safeHref } from './safe-href';

describe('safeHref: only relative, http: and https: targets', () => {
  it('keeps http(s) URLs, as the URL parser writes them', () => {
    expect(safeHref('https://flax.readthedocs.io/en/latest/api_reference/flax.errors.html#flax.errors.ScopeParamShapeError')).toBe(
      'https://flax.readthedocs.io/en/latest/api_reference/flax.errors.html#flax.errors.ScopeParamShapeError',
    );
    expect(safeHref('http://example.org/a b')).toBe('http://example.org/a%20b');
    expect(safeHref('HTTPS://Example.org/x')).toBe('https://example.org/x');
  });

  it('keeps relative references as they are', () => {
    for (const target of ['docs/page.html', '/api/health', '#L12', '?follow=1', '../x', '//example.org/x']) {
      expect(safeHref(target)).toBe(target);
    }
  });

  it('drops every other scheme, however it is spelt', () => {
    const forged = [
      'javascript:alert(document.cookie)',
      'JavaScript:alert(1)',
      ' javascript:alert(1)',
      '\u0000javascript:alert(1)',
      'java\tscript:alert(1)',
      'java\nscript:alert(1)',
      'javascript&colon;alert(1)'.replace('&colon;', ':'),
      'data:text/html,<script>alert(1)</script>',
      'vbscript:msgbox(1)',
      'file:///etc/passwd',
      'blob:http://127.0.0.1:8000/0b5a',
      'ftp://example.org/',
      'mailto:a@example.org',
      'a:b',
    ];
    for (const target of forged) expect(safeHref(target), JSON.stringify(target)).toBeUndefined();
  });

  it('drops what is not a URL at all, and no value', () => {
    for (const target of ['http://[::1', 'https://exa mple.org/', '', '   ', null, undefined]) {
      expect(safeHref(target), JSON.stringify(target)).toBeUndefined();
    }
  });
});

// ---- nothing else builds a link from data ----------------------------------------------------

const REPO = fileURLToPath(new URL('../../../', import.meta.url));

/** The page's source: the shell (not the generated types) and every exhibit's frontend half. */
function pageSources(): string[] {
  const out: string[] = [];
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) {
        if (name !== 'node_modules' && name !== 'gen' && !name.startsWith('_') && name !== 'golden') walk(path);
      } else if (/\.(svelte|ts)$/.test(name) && !/\.test\.ts$/.test(name) && !path.includes('/src/test/')) {
        out.push(path);
      }
    }
  };
  walk(join(REPO, 'frontend/src'));
  walk(join(REPO, 'exhibits'));
  return out;
}

// Where a link's target is set in code, and why each is not event data: the two downloads hand
// the browser a blob: or data: URL the page itself made from a run's text or a picture.
const ALLOWED_SINKS: Record<string, number> = {
  'frontend/src/download.ts': 1, // link.href = URL.createObjectURL(the standalone HTML)
  'frontend/src/widgets/export.ts': 1, // downloadUrl(href): blob/data URLs of Copy/Download/SVG/PNG
};

describe('every href built from data goes through safeHref', () => {
  const sources = pageSources().map((path) => ({ path: relative(REPO, path), text: readFileSync(path, 'utf8') }));

  it('reads the page and the exhibits', () => {
    const paths = sources.map((s) => s.path);
    expect(paths).toContain('exhibits/flax_params/View.svelte');
    expect(paths).toContain('exhibits/lazy_tensor/View.svelte');
    expect(paths).toContain('frontend/src/App.svelte');
    expect(paths.length).toBeGreaterThan(100);
  });

  it('a markup href is a constant or safeHref(...)', () => {
    const bad: string[] = [];
    let links = 0;
    for (const { path, text } of sources.filter((s) => s.path.endsWith('.svelte'))) {
      // href={...}, href="…{…}…", {href} and spreads onto an <a>: anything but a plain constant.
      for (const m of text.matchAll(/\b(?:xlink:)?href\s*=\s*(\{[^]*?\}|"[^"]*"|'[^']*')|\{\s*href\s*\}|<a\b[^>]*\{\s*\.\.\./g)) {
        const value = m[1];
        if (value !== undefined && !value.includes('{')) continue; // href="https://…" as written
        if (value !== undefined && /^\{\s*safeHref\(/.test(value)) {
          links += 1;
          continue;
        }
        bad.push(`${path}: ${m[0].slice(0, 80)}`);
      }
    }
    expect(bad).toEqual([]);
    expect(links).toBeGreaterThanOrEqual(3); // flax_params' docs link, lazy_tensor's two source links
  });

  it('no code sets a link target or navigates, but the two downloads', () => {
    const found: Record<string, number> = {};
    const sink =
      /\.href\s*=(?!=)|setAttribute\(\s*['"](?:xlink:)?href['"]|window\.open\(|location\.(?:assign|replace)\(|location\s*=(?!=)|\.location\.href\s*=(?!=)/g;
    for (const { path, text } of sources) {
      const n = [...text.matchAll(sink)].length;
      if (n > 0) found[path] = n;
    }
    expect(found).toEqual(ALLOWED_SINKS);
  });
});
