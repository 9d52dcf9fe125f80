/**
 * The export exhibit's view model: the `jax.export` events (the specifications, the Exported's
 * fields, the StableHLO module, the solved dimension variables, the round trip) as what the view
 * shows. Pure functions of the events, tested on the golden streams (`view-model.test.ts`).
 */
import type { Event, EventOf } from '../../frontend/src/protocol';
import { eventsOf } from '../../frontend/src/widgets/events';

export type SpecsBuilt = EventOf<'export_specs_built'>;
export type FunctionExported = EventOf<'function_exported'>;
export type ModuleText = EventOf<'stablehlo_exported'>;
export type DimsSolved = EventOf<'dims_solved'>;
export type RoundTripped = EventOf<'export_round_tripped'>;

function last<T>(list: readonly T[]): T | null {
  return list.length > 0 ? (list[list.length - 1] ?? null) : null;
}

export type RunFailed = EventOf<'run_failed'>;

export interface ExportModel {
  /** the run's failure, when JAX refused to export `f` (a dimension that is not polymorphic) */
  failure: RunFailed | null;
  specs: SpecsBuilt | null;
  exported: FunctionExported | null;
  module: ModuleText | null;
  dims: DimsSolved | null;
  roundTrip: RoundTripped | null;
}

/** The events read so far (up to the stepper's cursor). */
export function exportModel(events: readonly Event[]): ExportModel {
  return {
    failure: last(eventsOf(events, 'run_failed')),
    specs: last(eventsOf(events, 'export_specs_built')),
    exported: last(eventsOf(events, 'function_exported')),
    module: last(eventsOf(events, 'stablehlo_exported')),
    dims: last(eventsOf(events, 'dims_solved')),
    roundTrip: last(eventsOf(events, 'export_round_tripped')),
  };
}

/** `1 constraint`, `3 constraints`. */
export function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

/** `1,234 bytes`, `12.3 KiB`, `4.5 MiB`. */
export function formatBytes(n: number): string {
  if (n < 10 * 1024) return `${n.toLocaleString('en-US')} bytes`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

/** The Exported's other fields as label/value rows (JAX's field names). */
export function fieldRows(e: FunctionExported): { field: string; value: string }[] {
  const list = (xs: readonly (string | number | null)[]): string =>
    `(${xs.map((x) => (x === null ? 'None' : String(x))).join(', ')}${xs.length === 1 ? ',' : ''})`;
  return [
    { field: 'fun_name', value: e.fun_name },
    { field: 'platforms', value: list(e.platforms.map((p) => `'${p}'`)) },
    { field: 'calling_convention_version', value: String(e.calling_convention_version) },
    { field: 'nr_devices', value: String(e.nr_devices) },
    { field: 'module_kept_var_idx', value: list(e.module_kept_var_idx) },
    { field: 'uses_global_constants', value: e.uses_global_constants ? 'True' : 'False' },
    { field: 'disabled_safety_checks', value: list(e.disabled_safety_checks) },
    { field: 'ordered_effects', value: list(e.ordered_effects) },
    { field: 'unordered_effects', value: list(e.unordered_effects) },
    { field: 'in_shardings_hlo', value: list(e.in_shardings_hlo) },
    { field: 'out_shardings_hlo', value: list(e.out_shardings_hlo) },
  ];
}

/** 0-based lines of the module text worth pointing at: the shape assertions of a polymorphic
 * export and the platform index argument of a multi-platform one. */
export function markedLines(text: string): Set<number> {
  const marked = new Set<number>();
  text.split('\n').forEach((line, i) => {
    if (line.includes('@shape_assertion(') || line.includes('"_platform_index"')) marked.add(i);
  });
  return marked;
}

/** A constraint's message with its inputs filled in by name (`{0}` -> `args[1].shape[0]`). */
export function readableMessage(message: string, inputs: readonly string[]): string {
  return message.replace(/\{(\d+)\}/g, (whole, i: string) => inputs[Number(i)] ?? whole);
}

/** The shapes a round-trip call passed for the arguments with a symbolic dimension (the
 * others are the same in every call), or all of them when none is symbolic. */
export function symbolicShapes(shapes: readonly string[], exported: FunctionExported | null): string[] {
  const symbolic = exported?.in_avals.map((a) => a.aval.shape.includes(-1)) ?? [];
  if (!symbolic.some(Boolean) || symbolic.length !== shapes.length) return [...shapes];
  return shapes.filter((_, i) => symbolic[i]);
}

/** The headline of the round trip: whether every call of the deserialized export equalled
 * `jax.jit(f)`, and the largest difference (the constraint check, refused by design, apart). */
export function roundTripVerdict(rt: RoundTripped): { ok: boolean; text: string } {
  if (!rt.callable_here) return { ok: true, text: 'not called on this platform' };
  const compared = rt.calls.filter((c) => !c.constraint_check);
  const refused = compared.filter((c) => c.error !== null);
  if (refused.length > 0) {
    const what = refused.map((c) => c.label).join(', ');
    return { ok: false, text: `JAX refused the call at ${what}: see its row` };
  }
  const failed = compared.filter((c) => !c.equal);
  const diffs = compared.map((c) => c.max_abs_diff).filter((d): d is number => d !== null);
  const max = diffs.length > 0 ? Math.max(...diffs) : null;
  const diff = max === null ? '' : `, max |Δ| ${max === 0 ? '0' : max.toExponential(1)}`;
  const n = compared.length;
  if (failed.length === 0) return { ok: true, text: `${n} of ${n} calls equal jit(f)${diff}` };
  return { ok: false, text: `${failed.length} of ${n} calls differ from jit(f)${diff}` };
}
