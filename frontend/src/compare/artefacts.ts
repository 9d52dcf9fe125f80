/**
 * The artefacts of a run that "Compare with the previous run" puts side by side (design 0043),
 * read from the run's events as `jaxscope run --print` reads them (`exhibits/registry.py`'s
 * extractors): the jaxpr (the last `jaxpr_staged`), StableHLO (the last `module_lowered`, or the
 * export exhibit's `stablehlo_exported`), the optimized HLO (the last `executable_compiled`),
 * the persistent cache key (the first `cache_key_computed`: JAX's key and its ingredients'
 * digests), the outputs (the last `program_executed`, as `--print output` writes them), and the
 * snippet itself.
 *
 * An event the page got as a summary (details on demand, design 0023) whose whole event never
 * arrived gives an artefact with `complete` false: the compare view says so.
 */
import type { Event, EventOf } from '../protocol';

export type ArtefactId =
  | 'jaxpr'
  | 'jvp_jaxpr'
  | 'known_jaxpr'
  | 'unknown_jaxpr'
  | 'linear_jaxpr'
  | 'batched_jaxpr'
  | 'kernel_jaxpr'
  | 'stablehlo'
  | 'compiled'
  | 'cache_key'
  | 'output'
  | 'snippet';

/** The tabs' order (the ids are `jaxscope run --print`'s artefact names where there is one). */
export const ARTEFACT_ORDER: readonly ArtefactId[] = [
  'jaxpr',
  'jvp_jaxpr',
  'known_jaxpr',
  'unknown_jaxpr',
  'linear_jaxpr',
  'batched_jaxpr',
  'kernel_jaxpr',
  'stablehlo',
  'compiled',
  'cache_key',
  'output',
  'snippet',
];

export interface Artefact {
  id: ArtefactId;
  /** the tab's label */
  label: string;
  text: string;
  /** compared eqn by eqn (a jaxpr) or line by line */
  structural: boolean;
  /** false when the page holds only the summary of the event it comes from */
  complete: boolean;
}

/** The event types the artefacts come from (the store fetches their details while it can). */
export const ARTEFACT_EVENTS: ReadonlySet<string> = new Set([
  'jaxpr_staged',
  'jvp_jaxpr_staged',
  'jaxpr_split',
  'linear_jaxpr_staged',
  'batched_jaxpr_staged',
  'pallas_call_found',
  'module_lowered',
  'stablehlo_exported',
  'executable_compiled',
  'cache_key_computed',
  'program_executed',
]);

function last<T extends Event['type']>(events: readonly Event[], type: T): EventOf<T> | null {
  for (let i = events.length - 1; i >= 0; i--) {
    const e = events[i]!;
    if (e.type === type) return e as EventOf<T>;
  }
  return null;
}

function first<T extends Event['type']>(events: readonly Event[], type: T): EventOf<T> | null {
  for (const e of events) if (e.type === type) return e as EventOf<T>;
  return null;
}

/** A summary whose whole event has not replaced it (it still carries its `detail_id`). */
function summaryOnly(e: Event): boolean {
  return e.detail_id !== null && e.detail_id !== undefined;
}

/** `--print output`'s text of a `program_executed` (registry.py `_output`). */
export function outputText(e: EventOf<'program_executed'>): string {
  const lines = e.outputs.map((o) => `${o.path || 'output'}: ${o.dtype}[${o.shape.join(', ')}]\n${o.preview}`);
  if (e.zeros_for.length > 0) {
    lines.unshift(`# ran on zeros for ${e.zeros_for.join(', ')} (ShapeDtypeStruct arguments have no values)`);
  }
  return lines.join('\n');
}

/** The persistent cache key and the digest of each of its ingredients, one per line. */
export function cacheKeyText(e: EventOf<'cache_key_computed'>): string {
  return [`key: ${e.jax_key}`, ...e.ingredients.map((i) => `${i.name}: ${i.digest}`)].join('\n');
}

/** The artefacts `events` (and the snippet `code`) hold, in the compare view's tab order. */
export function artefactsOf(events: readonly Event[], code: string): Artefact[] {
  const out: Artefact[] = [];
  const add = (id: ArtefactId, label: string, text: string, structural: boolean, complete = true): void => {
    out.push({ id, label, text, structural, complete });
  };
  /** A jaxpr view is whole unless it is a summary of a program too large to stream (`total_eqns`). */
  const whole = (view: { total_eqns?: number | null }, e: Event): boolean =>
    (view.total_eqns === null || view.total_eqns === undefined) && !summaryOnly(e);
  const jaxpr = last(events, 'jaxpr_staged');
  if (jaxpr) add('jaxpr', 'jaxpr', jaxpr.jaxpr.text, true, whole(jaxpr.jaxpr, jaxpr));
  const jvp = last(events, 'jvp_jaxpr_staged');
  if (jvp) add('jvp_jaxpr', 'JVP jaxpr', jvp.jaxpr.text, true, whole(jvp.jaxpr, jvp));
  const split = last(events, 'jaxpr_split');
  if (split) {
    add('known_jaxpr', 'known jaxpr', split.known.text, true, whole(split.known, split));
    add('unknown_jaxpr', 'unknown jaxpr', split.unknown.text, true, whole(split.unknown, split));
  }
  const linear = last(events, 'linear_jaxpr_staged');
  if (linear) add('linear_jaxpr', 'linear jaxpr', linear.jaxpr.text, true, whole(linear.jaxpr, linear));
  const batched = last(events, 'batched_jaxpr_staged');
  if (batched) add('batched_jaxpr', 'batched jaxpr', batched.jaxpr.text, true, whole(batched.jaxpr, batched));
  const kernels = events.filter((e): e is EventOf<'pallas_call_found'> => e.type === 'pallas_call_found');
  if (kernels.length > 0) {
    // One pallas_call after another, as `--print kernel_jaxpr` joins them.
    const text = kernels.map((k) => k.kernel_jaxpr.text).join('\n\n');
    add('kernel_jaxpr', 'kernel jaxpr', text, true, kernels.every((k) => whole(k.kernel_jaxpr, k)));
  }
  const lowered = last(events, 'module_lowered');
  const exported = last(events, 'stablehlo_exported');
  if (lowered) add('stablehlo', 'StableHLO', lowered.stablehlo, false, !summaryOnly(lowered));
  else if (exported) add('stablehlo', 'StableHLO', exported.text, false, exported.complete && !summaryOnly(exported));
  const compiled = last(events, 'executable_compiled');
  if (compiled) add('compiled', 'optimized HLO', compiled.compiled_text, false, !summaryOnly(compiled));
  const key = first(events, 'cache_key_computed');
  if (key) add('cache_key', 'cache key', cacheKeyText(key), false, !summaryOnly(key));
  const executed = last(events, 'program_executed');
  if (executed) add('output', 'outputs', outputText(executed), false, !summaryOnly(executed));
  add('snippet', 'snippet', code, false);
  return out;
}

/** The indices in `events` of the summaries an artefact comes from (to fetch while the run's capture lives). */
export function artefactSummaries(events: readonly Event[]): number[] {
  const found: number[] = [];
  events.forEach((e, i) => {
    if (ARTEFACT_EVENTS.has(e.type) && summaryOnly(e)) found.push(i);
  });
  return found;
}
