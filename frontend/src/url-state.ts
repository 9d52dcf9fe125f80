/**
 * The shareable state in the URL fragment: exhibit, code and options.
 *
 * Format: `#e=<exhibit>&c=<code>&o=<options JSON>`, code and options compressed with lz-string's
 * `compressToEncodedURIComponent` (URL-safe, no further escaping). A copied link reopens the same
 * exhibit, code and options, and the shell runs it. The editor text also survives a reload via
 * localStorage (`saveDraft`/`loadDraft`). Without code the fragment is a place (`#e=<exhibit>`
 * and `&x=<example>`: `encodePlace`), which the exhibit tabs push as history entries.
 */
import { Validator, type Schema } from '@cfworker/json-schema';
import { compressToEncodedURIComponent, decompressFromEncodedURIComponent } from 'lz-string';
import optionsSchema from './gen/run-options.schema.json';
import type { CallSpec, RunOptions } from './protocol';
import { defaultRunOptions } from './protocol';

export interface SharedState {
  exhibit: string;
  code: string;
  options: RunOptions;
}

/** The JSON Schema of one option (a property of the generated `RunOptions` schema). */
type PropertySchema = Record<string, unknown>;

const OPTION_PROPERTIES = optionsSchema.properties as Record<string, PropertySchema>;
const OPTION_DEFS = optionsSchema.$defs as Record<string, unknown>;

function validatorOf(schema: PropertySchema): Validator {
  // An interpreting validator (no `new Function`): the page's Content-Security-Policy forbids eval.
  return new Validator({ ...schema, $defs: OPTION_DEFS } as Schema, '2020-12', true);
}

/** One validator per option of `RunOptions`, from the schema the backend's model generates. */
const OPTION_VALIDATORS: ReadonlyMap<string, Validator> = new Map(
  Object.entries(OPTION_PROPERTIES).map(([key, schema]) => [key, validatorOf(schema)]),
);
const CALLS = OPTION_PROPERTIES['calls'] as { items: PropertySchema; maxItems?: number };
const CALL_VALIDATOR = validatorOf(CALLS.items);

/** The names of every option a run can carry (the backend's `RunOptions` fields). */
export const OPTION_NAMES: readonly string[] = [...OPTION_VALIDATORS.keys()];

/** One option a shared link carries, as the page says it before the run: `spec = P('x', None)`. */
export interface LinkOption {
  name: string;
  text: string;
}

/** How a `calls` entry reads (the tracing exhibit's "call again" buttons). */
const CALL_WORDS: Record<string, string> = { same: 'same shapes', shape: 'new shape', dtype: 'new dtype' };

function optionText(name: string, value: unknown): string {
  if (typeof value === 'string') return value;
  if (name === 'calls' && Array.isArray(value)) {
    return (value as CallSpec[]).map((c) => (c.change === 'expr' ? `args ${c.expr ?? ''}` : (CALL_WORDS[c.change] ?? c.change))).join(', ');
  }
  if (name === 'stack' && Array.isArray(value)) return value.join(' ∘ ');
  return JSON.stringify(value);
}

/**
 * The options of `options` that will run on `exhibit` (those its `x-exhibits` name, from the
 * backend's schema) other than the defaults, in the schema's order: what a page opened from a
 * shared link says before the user presses Run, since a view may show some of them only once a
 * run has reported (the sharding exhibit's spec, the partial_eval flags, the tracing calls).
 */
export function linkOptions(options: RunOptions, exhibit: string): LinkOption[] {
  return exhibitOptions(options, exhibit).map(([name, value]) => ({ name, text: optionText(name, value) }));
}

/**
 * `[name, value]` of each option of `options` that runs on `exhibit` (its `x-exhibits`) and is
 * not a default, in the schema's order (`linkOptions`; the replay's `jaxscope run` flags).
 */
export function exhibitOptions(options: RunOptions, exhibit: string): [string, unknown][] {
  const record = options as unknown as Record<string, unknown>;
  const out: [string, unknown][] = [];
  for (const [name, schema] of Object.entries(OPTION_PROPERTIES)) {
    const readers = schema['x-exhibits'];
    if (!Array.isArray(readers) || !readers.includes(exhibit)) continue;
    const value = record[name];
    if (value === undefined || value === null || (Array.isArray(value) && value.length === 0)) continue;
    out.push([name, value]);
  }
  return out;
}

/**
 * Options from untrusted JSON (a shared link): each option the backend's `RunOptions` defines
 * is kept when it is valid by that model's JSON Schema (`gen/run-options.schema.json`, generated
 * from `backend/jaxscope/protocol.py`), so every option round-trips through a link without a
 * hand-kept copy; unknown or malformed parts are dropped (a call of `calls` one by one).
 */
export function parseOptions(value: unknown): RunOptions {
  const options = defaultRunOptions();
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return options;
  const record = value as Record<string, unknown>;
  const out = options as unknown as Record<string, unknown>;
  for (const [key, validator] of OPTION_VALIDATORS) {
    const raw = record[key];
    if (raw === undefined) continue;
    if (key === 'calls') {
      if (!Array.isArray(raw)) continue;
      options.calls = raw
        .filter((call) => CALL_VALIDATOR.validate(call).valid)
        .slice(0, CALLS.maxItems ?? raw.length)
        .map((call: CallSpec) => ({ change: call.change ?? 'same', expr: call.expr ?? null }));
      continue;
    }
    if (validator.validate(raw).valid) out[key] = raw;
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
  let options: RunOptions = defaultRunOptions();
  const optionsRaw = fields.get('o');
  if (optionsRaw !== undefined) {
    const json = decompressFromEncodedURIComponent(optionsRaw);
    try {
      options = parseOptions(json ? JSON.parse(json) : null);
    } catch {
      options = defaultRunOptions();
    }
  }
  return { exhibit, code, options };
}

/**
 * Where the page is: the exhibit on screen and the example in the editor (null: the user's own
 * code). Every exhibit tab writes it as a history entry (`#e=transpose&x=mlp_loss`), so that the
 * address bar, a reload, a pasted link and Back/Forward land on that exhibit (design 0084). A
 * shared link (`encodeFragment`) names its exhibit the same way, with the code besides.
 */
export interface Place {
  exhibit: string;
  example: string | null;
}

/** The fragment (with its leading `#`) of `place`: `#e=<exhibit>`, `&x=<example>` when one. */
export function encodePlace(place: Place): string {
  const params = new URLSearchParams();
  params.set('e', place.exhibit);
  if (place.example !== null && place.example !== '') params.set('x', place.example);
  return `#${params.toString()}`;
}

/**
 * The place a fragment names (a place's or a shared link's), or null when it names no exhibit.
 * Whether the exhibit and the example exist is the caller's to check (the catalogue knows).
 */
export function decodePlace(fragment: string): Place | null {
  const body = fragment.startsWith('#') ? fragment.slice(1) : fragment;
  // URLSearchParams never throws: a malformed escape (`%%`) stays as it is.
  const params = new URLSearchParams(body);
  // A name given twice: the last, as decodeFragment reads a shared link (a Back onto one shows
  // the exhibit its reload shows).
  const exhibit = params.getAll('e').at(-1) ?? null;
  if (exhibit === null || exhibit === '') return null;
  const example = params.getAll('x').at(-1) ?? null;
  return { exhibit, example: example === null || example === '' ? null : example };
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
