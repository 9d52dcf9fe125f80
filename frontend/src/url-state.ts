/**
 * The shareable state in the URL fragment: exhibit, code and options.
 *
 * Format: `#e=<exhibit>&c=<code>&o=<options JSON>`, code and options compressed with lz-string's
 * `compressToEncodedURIComponent` (URL-safe, no further escaping). A copied link reopens the same
 * exhibit, code and options, and the shell runs it. The editor text also survives a reload via
 * localStorage (`saveDraft`/`loadDraft`).
 */
import { compressToEncodedURIComponent, decompressFromEncodedURIComponent } from 'lz-string';
import type { CallSpec, RunOptions } from './protocol';

export interface SharedState {
  exhibit: string;
  code: string;
  options: RunOptions;
}

const CHANGES: ReadonlySet<string> = new Set(['same', 'shape', 'dtype', 'expr']);

function parseCall(value: unknown): CallSpec | null {
  if (typeof value !== 'object' || value === null) return null;
  const record = value as Record<string, unknown>;
  const change = record['change'];
  const expr = record['expr'];
  if (typeof change !== 'string' || !CHANGES.has(change)) return null;
  if (expr !== null && expr !== undefined && typeof expr !== 'string') return null;
  return { change: change as CallSpec['change'], expr: typeof expr === 'string' ? expr : null };
}

// The transform_order exhibit's chips (protocol `TransformName`).
const TRANSFORMS = new Set(['jit', 'grad', 'value_and_grad', 'vmap', 'jacfwd', 'jacrev', 'hessian', 'jvp', 'vjp']);

/** Options from untrusted JSON; unknown or malformed parts are dropped. */
export function parseOptions(value: unknown): RunOptions {
  if (typeof value !== 'object' || value === null) return { calls: [], known: null };
  const record = value as Record<string, unknown>;
  const calls = record['calls'];
  const known = record['known'];
  const options: RunOptions = {
    calls: Array.isArray(calls) ? calls.map(parseCall).filter((c): c is CallSpec => c !== null) : [],
    known: Array.isArray(known) && known.every((k) => typeof k === 'boolean') ? (known as boolean[]) : null,
  };
  for (const key of ['in_axes', 'out_axes'] as const) {
    const value = record[key];
    if (typeof value === 'string') options[key] = value;
  }
  const stack = record['stack'];
  if (Array.isArray(stack) && stack.every((t) => typeof t === 'string' && TRANSFORMS.has(t))) {
    options.stack = stack as NonNullable<RunOptions['stack']>;
  }
  return options;
}

/** The fragment (with its leading `#`) that encodes `state`. */
export function encodeFragment(state: SharedState): string {
  const params = new URLSearchParams();
  params.set('e', state.exhibit);
  const fragment = [
    params.toString(),
    `c=${compressToEncodedURIComponent(state.code)}`,
    `o=${compressToEncodedURIComponent(JSON.stringify(state.options))}`,
  ];
  return `#${fragment.join('&')}`;
}

/** The state a fragment encodes, or null when it holds no exhibit and code. */
export function decodeFragment(fragment: string): SharedState | null {
  const body = fragment.startsWith('#') ? fragment.slice(1) : fragment;
  const fields = new Map<string, string>();
  for (const part of body.split('&')) {
    const eq = part.indexOf('=');
    if (eq > 0) fields.set(part.slice(0, eq), part.slice(eq + 1));
  }
  const exhibitRaw = fields.get('e');
  const codeRaw = fields.get('c');
  if (exhibitRaw === undefined || codeRaw === undefined) return null;
  let exhibit: string;
  try {
    exhibit = decodeURIComponent(exhibitRaw.replace(/\+/g, ' '));
  } catch {
    return null;
  }
  const code = decompressFromEncodedURIComponent(codeRaw);
  // lz-string returns '' or null for input that is not its own output.
  if (code === null || (code === '' && codeRaw !== compressToEncodedURIComponent(''))) return null;
  let options: RunOptions = { calls: [], known: null };
  const optionsRaw = fields.get('o');
  if (optionsRaw !== undefined) {
    const json = decompressFromEncodedURIComponent(optionsRaw);
    try {
      options = parseOptions(json ? JSON.parse(json) : null);
    } catch {
      options = { calls: [], known: null };
    }
  }
  return { exhibit, code, options };
}

/** Storage key of the editor draft in `slot` (the shell keeps one draft, slot `editor`). */
export function draftKey(slot: string): string {
  return `jaxscope:draft:${slot}`;
}

/** The subset of `Storage` used here (a test passes a Map-backed fake). */
export interface DraftStorage {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
}

/** Save the editor text in `slot`; storage errors (quota, private mode) are ignored. */
export function saveDraft(storage: DraftStorage, slot: string, code: string): void {
  try {
    storage.setItem(draftKey(slot), code);
  } catch {
    // Losing a draft is better than breaking the editor.
  }
}

export function loadDraft(storage: DraftStorage, slot: string): string | null {
  try {
    return storage.getItem(draftKey(slot));
  } catch {
    return null;
  }
}
