/**
 * The one way the page turns event data into a link target (`<a href>`).
 *
 * Events are not trusted: the snippet runs in the worker that writes its run's events, so a run
 * can carry any string where a URL is expected, `javascript:` included (issue 31), and a replayed
 * recording (`jaxscope run --html`, a downloaded run) is shown with no Content-Security-Policy to
 * stop it. `safeHref` keeps a relative reference and an absolute `http:` or `https:` URL and
 * drops everything else (`undefined`: Svelte then renders no `href` at all, so the text is shown
 * but leads nowhere). The scheme is read as the browser reads it, by the WHATWG URL parser
 * (`java\tscript:`, ` JAVASCRIPT:` and `data:` are all caught); an absolute URL is returned as
 * that parser wrote it back, so the browser follows exactly what was checked.
 *
 * `safe-href.test.ts` also checks that no other code in the page builds an `href` from data.
 */

/** The schemes a link built from event data may have. */
export const SAFE_SCHEMES: ReadonlySet<string> = new Set(['http:', 'https:']);

// Resolves a relative reference only to tell it apart from an unparsable one.
const RELATIVE_BASE = 'http://relative.invalid/';

/** `target` when it is a relative reference or an `http(s):` URL (normalised), else undefined. */
export function safeHref(target: string | null | undefined): string | undefined {
  if (typeof target !== 'string' || target.trim() === '') return undefined;
  let absolute: URL | null = null;
  try {
    absolute = new URL(target);
  } catch {
    // No scheme of its own: a relative reference (or not a URL at all, checked below).
  }
  if (absolute !== null) return SAFE_SCHEMES.has(absolute.protocol) ? absolute.href : undefined;
  try {
    new URL(target, RELATIVE_BASE);
  } catch {
    return undefined;
  }
  return target;
}
