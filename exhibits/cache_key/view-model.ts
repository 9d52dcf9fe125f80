/**
 * The cache_key exhibit's view model: pure functions from the run's events to what the view shows.
 *
 * The probe emits `jaxpr_staged` (f's jaxpr), one `cache_key_computed` for the base key, then,
 * with `options.perturb`, a second one for the perturbed key (its `changed` lists the ingredients
 * whose digest differs), then, with `options.xla_flags`, one `xla_flags_filtered`. The stepper
 * walks: base key, then perturbed key.
 */
import type { Event, EventOf, JaxprStaged, RunFailed } from '../../frontend/src/protocol';
import { eventsOf, lastOf } from '../../frontend/src/widgets/events';

export type CacheKeyComputed = EventOf<'cache_key_computed'>;
export type XlaFlagsFiltered = EventOf<'xla_flags_filtered'>;
export type Ingredient = CacheKeyComputed['ingredients'][number];

/** The perturbations the probe knows (`RunOptions.perturb`), in the view's order. */
export const PERTURBATIONS: readonly { id: string; label: string; expect: string }[] = [
  { id: 'body', label: 'function body', expect: 'computation' },
  { id: 'shapes', label: 'shapes', expect: 'computation' },
  { id: 'donate_argnums', label: 'donate_argnums', expect: 'computation' },
  { id: 'compiler_options', label: 'compiler options', expect: 'compile_options' },
  { id: 'xla_flag', label: 'an XLA flag', expect: 'XLA flags' },
  { id: 'custom_hook', label: 'custom hook', expect: 'custom_hook' },
  { id: 'name', label: "function's name", expect: 'computation' },
  { id: 'line', label: "function's line", expect: 'nothing' },
];

export interface IngredientRow {
  index: number;
  name: string;
  slug: string;
  helper: string;
  detail: string;
  digest: string;
  running: string;
  /** the perturbed key's digest/running digest (undefined without a perturbation) */
  otherDigest: string | undefined;
  otherRunning: string | undefined;
  /** this ingredient's own digest changed */
  changed: boolean;
  /** the running digest changed here (an earlier or this ingredient changed) */
  runningChanged: boolean;
}

export interface CacheKeyModel {
  jaxpr: JaxprStaged | undefined;
  base: CacheKeyComputed | undefined;
  other: CacheKeyComputed | undefined;
  rows: IngredientRow[];
  flags: XlaFlagsFiltered | undefined;
  failure: RunFailed | undefined;
}

/** `"jax_lib version"` -> `"jax_lib-version"`: a test-id-safe name. */
export function slug(name: string): string {
  return name.replace(/[^A-Za-z0-9_]+/g, '-');
}

/** The first 12 hex digits (the view shows the rest on hover). */
export function short(hex: string): string {
  return hex.slice(0, 12);
}

export function ingredientRows(base: CacheKeyComputed, other?: CacheKeyComputed): IngredientRow[] {
  return base.ingredients.map((ing, index) => {
    const o = other?.ingredients[index];
    return {
      index,
      name: ing.name,
      slug: slug(ing.name),
      helper: ing.helper,
      detail: ing.detail,
      digest: ing.digest,
      running: ing.running,
      otherDigest: o?.digest,
      otherRunning: o?.running,
      changed: o !== undefined && o.digest !== ing.digest,
      runningChanged: o !== undefined && o.running !== ing.running,
    };
  });
}

export function cacheKeyModel(events: readonly Event[], allEvents: readonly Event[]): CacheKeyModel {
  const keys = eventsOf(events, 'cache_key_computed');
  const base = keys.find((k) => k.perturbation == null);
  const other = keys.find((k) => k.perturbation != null);
  return {
    jaxpr: lastOf(allEvents, 'jaxpr_staged'),
    base,
    other,
    rows: base ? ingredientRows(base, other) : [],
    flags: lastOf(events, 'xla_flags_filtered'),
    failure: lastOf(events, 'run_failed'),
  };
}

/** The key split at its last dash: module name and hex digest. */
export function splitKey(key: string): { module: string; hex: string } {
  const at = key.lastIndexOf('-');
  return at < 0 ? { module: '', hex: key } : { module: key.slice(0, at), hex: key.slice(at + 1) };
}

/** A one-line account of what changed, for the perturbed key. */
export function changeSummary(other: CacheKeyComputed | undefined): string {
  if (!other) return '';
  if (other.changed.length === 0) return 'no digest changed: the key is the same, the persistent cache hits';
  const n = other.changed.length;
  return `${n} digest${n > 1 ? 's' : ''} changed: ${other.changed.join(', ')}`;
}
