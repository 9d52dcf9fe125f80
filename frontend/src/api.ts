/**
 * Where the server is: the websocket and REST URLs on the page's own origin, carrying the
 * `?token=` the page was opened with (required when `jaxscope serve` binds a non-loopback host),
 * and the catalogue fetch.
 */
import type { Catalogue } from './protocol';

/** The part of `window.location` these functions read. */
export interface PageLocation {
  protocol: string;
  host: string;
  search: string;
}

/** The `token` query parameter of the page URL, or null. */
export function pageToken(location: PageLocation): string | null {
  return new URLSearchParams(location.search).get('token');
}

function withToken(path: string, location: PageLocation): string {
  const token = pageToken(location);
  return token === null ? path : `${path}?token=${encodeURIComponent(token)}`;
}

/** `ws(s)://<host>/api/ws[?token=...]` for the page at `location`. */
export function wsUrl(location: PageLocation): string {
  const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
  return `${scheme}//${location.host}${withToken('/api/ws', location)}`;
}

/** A same-origin REST path with the page's token, e.g. `/api/exhibits?token=...`. */
export function apiPath(path: string, location: PageLocation): string {
  return withToken(path, location);
}

/** `GET /api/exhibits`: the exhibit catalogue and the example sources. Throws on HTTP errors. */
export async function fetchCatalogue(location: PageLocation): Promise<Catalogue> {
  const response = await fetch(apiPath('/api/exhibits', location));
  if (!response.ok) throw new Error(`GET /api/exhibits: HTTP ${response.status}`);
  return (await response.json()) as Catalogue;
}
