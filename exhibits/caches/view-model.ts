/**
 * The caches exhibit's view model: pure functions from the run's events to what the view shows.
 *
 * The probe emits `caches_reset` (the clean state it started from), then one `jit_call_observed`
 * per jit call: the layer that answered, hit/miss per layer (`cells`), JAX's counters, the
 * `jax.monitoring` timers, JAX's explain text, and the diff of key entries against the closest
 * earlier call. The timeline is drawn from all the run's calls; the stepper's cursor (or a call
 * the user picked) decides the current call, and calls after the cursor are still "pending".
 * A driver run ends with `driver_run_summary`: JAX's traces and compiles that no call shown
 * accounts for (eager `jax.vmap`/`jax.grad` of a jitted function, jits out of reach), and a note
 * when the timeline is empty or incomplete.
 */
import type { Event, EventOf, JaxprView, RunFailed } from '../../frontend/src/protocol';
import { eventsOf, lastOf } from '../../frontend/src/widgets/events';

export type JitCallObserved = EventOf<'jit_call_observed'>;
export type CachesReset = EventOf<'caches_reset'>;
export type DriverRunSummary = EventOf<'driver_run_summary'>;
export type KeyEntry = JitCallObserved['entries'][number];

/** The cache layers a jit call walks through, top to bottom (the timeline's rows). */
export const LAYERS = ['cpp', 'jaxpr', 'lowering', 'executable', 'persistent'] as const;
export type Layer = (typeof LAYERS)[number];

export const LAYER_LABELS: Record<Layer | 'compile', string> = {
  cpp: 'C++ fast path',
  jaxpr: 'traced-jaxpr cache',
  lowering: 'lowering cache',
  executable: 'compiled-executable cache',
  persistent: 'persistent disk cache',
  compile: 'no cache: XLA compiled',
};

/** What each layer is in JAX (the row headers' tooltips). */
export const LAYER_SOURCES: Record<Layer, string> = {
  cpp: 'the jit object’s C++ cache (jaxlib PjitFunction; jitted._cache_size())',
  jaxpr: 'pjit._infer_params_cached + pe.trace_to_jaxpr: the traced jaxpr, keyed by function, avals, statics, context',
  lowering: 'pjit._pjit_lower: the lowered MeshComputation (its compile memoised), keyed by jaxpr and shardings',
  executable: 'pxla._cached_compilation: the XLA executable of a lowered module',
  persistent: 'jax._src.compilation_cache: the on-disk cache (jax_compilation_cache_dir)',
};

/** The presets the probe knows (`RunOptions.preset`), with what each does to `f` and `args`. */
export const PRESETS: readonly { id: string; label: string }[] = [
  { id: 'same', label: 'the same call twice' },
  { id: 'new_shape', label: 'the same call, then a new shape' },
  { id: 'new_dtype', label: 'a new dtype (float16 / int16)' },
  { id: 'weak_type', label: 'a Python scalar in place of an array' },
  { id: 'static_changed', label: 'a static argument changed and changed back' },
  { id: 'redefined', label: 'f redefined (same line, new object)' },
  { id: 'new_closure', label: 'a new closure each time (three new function objects)' },
  { id: 'numpy', label: 'numpy arrays in place of jax.Arrays' },
  { id: 'committed', label: 'a committed jax.device_put input' },
  { id: 'matmul_precision', label: "inside default_matmul_precision('highest')" },
  { id: 'persistent', label: 'persistent cache on, in-memory caches cleared (a new process)' },
];

export interface CachesModel {
  reset: CachesReset | undefined;
  /** every call of the run (the whole timeline) */
  calls: JitCallObserved[];
  /** the calls reached by the stepper's cursor */
  reached: JitCallObserved[];
  /** the call shown in detail: the picked one, else the last one reached */
  current: JitCallObserved | undefined;
  failure: RunFailed | undefined;
  /** a driver run's summary (undefined in calls mode, or before the run ends) */
  driver: DriverRunSummary | undefined;
}

export function cachesModel(
  events: readonly Event[],
  allEvents: readonly Event[],
  picked?: number | null,
): CachesModel {
  const calls = eventsOf(allEvents, 'jit_call_observed');
  const reached = eventsOf(events, 'jit_call_observed');
  const pick = picked === null || picked === undefined ? undefined : calls.find((c) => c.index === picked);
  return {
    reset: lastOf(allEvents, 'caches_reset'),
    calls,
    reached,
    current: pick ?? reached.at(-1),
    failure: lastOf(allEvents, 'run_failed'),
    driver: lastOf(allEvents, 'driver_run_summary'),
  };
}

/** A call's state in the timeline: the current one, reached before it, or after the cursor. */
export function callState(call: JitCallObserved, model: CachesModel): 'current' | 'reached' | 'pending' {
  if (model.current?.index === call.index) return 'current';
  return model.reached.some((c) => c.index === call.index) ? 'reached' : 'pending';
}

/** Trace + lower + compile time of a call (ms). */
export function workMs(call: JitCallObserved): number {
  const t = call.timers_ms;
  return (t['trace'] ?? 0) + (t['lower'] ?? 0) + (t['compile'] ?? 0);
}

/** The compile-time bar's height in px (0 for a call that compiled nothing; at least 3 px else). */
export function barHeight(call: JitCallObserved, calls: readonly JitCallObserved[], maxPx = 60): number {
  const compile = call.timers_ms['compile'] ?? 0;
  if (compile <= 0) return 0;
  const max = Math.max(...calls.map((c) => c.timers_ms['compile'] ?? 0));
  return Math.max(3, Math.round((compile / max) * maxPx));
}

export function cellOf(call: JitCallObserved, layer: Layer): 'hit' | 'miss' | 'skipped' | 'off' {
  return call.cells[layer] ?? 'skipped';
}

/** One sentence: which layer answered the call, and what JAX did for it. */
export function callSentence(call: JitCallObserved): string {
  const who = `Call ${call.index + 1} (${call.function})`;
  switch (call.layer) {
    case 'cpp':
      return `${who}: the C++ fast path answered; no Python of JAX ran, nothing was traced, lowered or compiled.`;
    case 'jaxpr':
      return `${who}: the C++ cache missed, but the traced-jaxpr cache answered; nothing was traced.`;
    case 'lowering':
      return call.traced
        ? `${who}: ${call.function} was traced again, but the lowering cache answered: nothing was lowered or compiled.`
        : `${who}: the C++ cache missed; the traced-jaxpr cache and then the lowering cache answered (its lowered computation's compile is memoised): nothing was traced, lowered or compiled.`;
    case 'executable':
      return `${who}: lowered again, but the compiled-executable cache answered: nothing was compiled.`;
    case 'persistent':
      return `${who}: the in-memory caches missed; the persistent disk cache answered (no XLA compile).`;
    default:
      return call.traced
        ? `${who}: no cache answered: JAX traced, lowered and compiled ${call.function}.`
        : `${who}: no cache answered for the executable: the traced jaxpr was reused, but JAX lowered and compiled again.`;
  }
}

/** What the persistent disk cache did for this call, in words (undefined when not consulted). */
export function persistentLine(call: JitCallObserved): string | undefined {
  if (!call.persistent_key || !call.persistent_lookup) return undefined;
  const file = `${call.persistent_key}-cache`;
  if (call.persistent_lookup === 'hit') return `hit: JAX read the executable from the file ${file} instead of compiling`;
  if (call.persistent_not_written) {
    return `miss: no file ${file} on disk; JAX compiled it and did not write it: "${call.persistent_not_written}"`;
  }
  return `miss: no file ${file} on disk; JAX compiled and wrote it`;
}

/** JAX's explain text is silent although JAX lowered or compiled again (it covers tracing only). */
export function jaxSilent(call: JitCallObserved): boolean {
  return call.explanation === '' && (call.compiled || (call.timers_ms['lower'] ?? 0) > 0);
}

/** The diff entries that differ from the closest earlier call. */
export function differing(call: JitCallObserved): KeyEntry[] {
  return call.entries.filter((e) => e.differs);
}

/** An equal entry longer than this many lines, or characters, is collapsed in the key diff. */
export const KEY_PREVIEW_LINES = 3;
export const KEY_PREVIEW_CHARS = 160;

/** A row of the key diff: the entry, and for a long entry equal in both calls its first lines
 * (`preview`) and how much is left out (`moreLines`, or `moreChars` for one long line). */
export interface KeyDiffRow {
  entry: KeyEntry;
  /** collapsed: equal in both calls and too long to print twice */
  collapsed: boolean;
  preview: string;
  moreLines: number;
  moreChars: number;
}

/** The first lines (or characters) of a long text, and how much is left out; null when short. */
export function keyPreview(text: string): { preview: string; moreLines: number; moreChars: number } | null {
  const lines = text.split('\n');
  if (lines.length > KEY_PREVIEW_LINES) {
    const preview = lines.slice(0, KEY_PREVIEW_LINES).join('\n');
    if (preview.length <= KEY_PREVIEW_CHARS * KEY_PREVIEW_LINES) {
      return { preview, moreLines: lines.length - KEY_PREVIEW_LINES, moreChars: 0 };
    }
  }
  if (text.length <= KEY_PREVIEW_CHARS) return null;
  return { preview: `${text.slice(0, KEY_PREVIEW_CHARS)}…`, moreLines: 0, moreChars: text.length - KEY_PREVIEW_CHARS };
}

/** What a collapsed row says about what it leaves out: `same in both: 12 more lines`. */
export function keyMoreText(row: KeyDiffRow): string {
  const n = row.moreLines > 0 ? row.moreLines : row.moreChars;
  const unit = row.moreLines > 0 ? 'line' : 'character';
  return `same in both: ${n.toLocaleString('en-US')} more ${unit}${n === 1 ? '' : 's'}`;
}

/**
 * The key diff's rows, the entries that differ from the closest earlier call first (a model's
 * call keys on hundreds of parameter leaves, and the one that changed came last), then the
 * others in JAX's order. An entry equal in both calls and long (a model's input pytree) is
 * collapsed to its first lines unless its name is in `expanded`.
 */
export function keyDiffRows(call: JitCallObserved, expanded: ReadonlySet<string> = new Set()): KeyDiffRow[] {
  const ordered = [...call.entries.filter((e) => e.differs), ...call.entries.filter((e) => !e.differs)];
  return ordered.map((entry) => {
    const equal = !entry.differs && entry.before !== null && entry.before === entry.now;
    const short = equal && !expanded.has(entry.name) ? keyPreview(entry.now) : null;
    return short
      ? { entry, collapsed: true, ...short }
      : { entry, collapsed: false, preview: entry.now, moreLines: 0, moreChars: 0 };
  });
}

/** "same line, new function object": the function entry differs, but the definition line is the same. */
export function sameLineNewObject(call: JitCallObserved, calls: readonly JitCallObserved[]): boolean {
  if (call.closest === null || call.closest === undefined) return false;
  const before = calls.find((c) => c.index === call.closest);
  return (
    before !== undefined &&
    before.function_object !== call.function_object &&
    before.defined_line !== null &&
    before.defined_line === call.defined_line
  );
}

export interface CounterRow {
  name: string;
  source: string;
  hits: string;
  misses: string;
  moved: boolean;
}

/** JAX's counters as `before → after (+delta)`. */
export function counterRows(call: JitCallObserved): CounterRow[] {
  const fmt = (a: number, b: number): string => (a === b ? `${a}` : `${a} → ${b} (+${b - a})`);
  return call.counters.map((c) => ({
    name: c.name,
    source: c.source,
    hits: fmt(c.hits_before, c.hits_after),
    misses: fmt(c.misses_before, c.misses_after),
    moved: c.hits_after !== c.hits_before || c.misses_after !== c.misses_before,
  }));
}

/** The jaxpr to show for a call: its own (it traced), else the latest earlier one of the same
 *  function object, else the latest of any. */
export function jaxprFor(call: JitCallObserved | undefined, calls: readonly JitCallObserved[]): JaxprView | undefined {
  if (call === undefined) return undefined;
  if (call.jaxpr) return call.jaxpr;
  const earlier = calls.filter((c) => c.index < call.index && c.jaxpr);
  const same = earlier.filter((c) => c.function_object === call.function_object);
  return (same.at(-1) ?? earlier.at(-1) ?? calls.find((c) => c.jaxpr))?.jaxpr ?? undefined;
}

export interface Summary {
  calls: number;
  traces: number;
  compiles: number;
  byLayer: Record<string, number>;
}

/**
 * The timeline header's totals over the calls the cursor has reached (a column after the cursor
 * is still faded, so it is not counted yet), and `of N` while some are pending:
 * `1 of 2 calls · 1 traced · 1 compiled`, then `2 calls · 2 traced · 1 compiled` at the end.
 */
export function summaryText(model: CachesModel): string {
  const seen = summary(model.reached);
  const total = model.calls.length;
  const calls =
    seen.calls < total ? `${seen.calls} of ${total} calls` : `${total} call${total === 1 ? '' : 's'}`;
  const text = `${calls} · ${seen.traces} traced · ${seen.compiles} compiled`;
  const outside = outsideCompiles(model.driver);
  // JAX's work outside the columns is counted once the whole timeline is reached
  if (outside === 0 || seen.calls < total) return text;
  return `${text} · ${outside} more compile${outside === 1 ? '' : 's'} outside these calls`;
}

/** JAX's compiles that no call of the timeline accounts for (a driver run's summary). */
export function outsideCompiles(driver: DriverRunSummary | undefined): number {
  return (driver?.outside ?? []).reduce((n, w) => n + w.compiles, 0);
}

export function summary(calls: readonly JitCallObserved[]): Summary {
  const byLayer: Record<string, number> = {};
  for (const c of calls) byLayer[c.layer] = (byLayer[c.layer] ?? 0) + 1;
  return {
    calls: calls.length,
    traces: calls.filter((c) => c.traced).length,
    compiles: calls.filter((c) => c.compiled).length,
    byLayer,
  };
}
