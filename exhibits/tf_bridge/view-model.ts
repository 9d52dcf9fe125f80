/**
 * The tf_bridge view model: the run's events as the cards the view shows, JAX to TensorFlow
 * (the concrete function's ops, the XlaCallModule op, outputs and gradients, the SavedModel)
 * and TensorFlow to JAX (the jaxpr eqn by eqn beside the ops). Pure functions of the events,
 * tested on the golden event stream (`view-model.test.ts`).
 */
import type { Event, EventOf } from '../../frontend/src/protocol';
import { lastOf } from '../../frontend/src/widgets/events';

export type GraphTraced = EventOf<'tf_graph_traced'>;
export type CallModule = EventOf<'xla_call_module_read'>;
export type Compared = EventOf<'jax2tf_outputs_compared'>['outputs'][number];

/** One row of a comparison table: a leaf, both sides' values, and their largest difference. */
export interface DiffRow {
  path: string;
  shape: string;
  tf: string;
  jax: string;
  diff: string;
}

/** One row of the attribute table of the XlaCallModule op. */
export interface AttrRow {
  key: string;
  value: string;
}

/** An eqn of tf2jax's jaxpr beside the TensorFlow op it came from. */
export interface EqnRow {
  eqn: number;
  primitive: string;
  op: string;
  line: number | null;
}

export function diffRows(rows: readonly Compared[]): DiffRow[] {
  return rows.map((r) => ({
    path: r.path,
    shape: `${r.dtype}[${r.shape.join(',')}]`,
    tf: r.tf_value,
    jax: r.jax_value,
    diff: r.max_abs_diff.toExponential(2),
  }));
}

/** The XlaCallModule op's attributes as TensorFlow holds them, one row each. */
export function attrRows(m: CallModule): AttrRow[] {
  const list = (xs: readonly string[]) => (xs.length > 0 ? xs.join(', ') : '(none)');
  return [
    { key: 'version', value: String(m.version) },
    { key: 'platforms', value: list(m.platforms) },
    { key: 'Tin', value: list(m.tin) },
    { key: 'Tout', value: list(m.tout) },
    { key: 'Sout', value: m.sout.map((s) => `[${s.join(', ')}]`).join(', ') },
    { key: 'dim_args_spec', value: list(m.dim_args_spec) },
    { key: 'disabled_checks', value: list(m.disabled_checks) },
    { key: 'has_token_input_output', value: String(m.has_token_input_output) },
    { key: 'use_shardy_partitioner', value: String(m.use_shardy_partitioner) },
    { key: 'function_list', value: list(m.function_list) },
    { key: 'module', value: `${m.module_bytes} bytes, sha256 ${m.module_sha256.slice(0, 16)}…` },
  ];
}

/** Whether the module bytes are jax.export's, and JAX's symbolic shapes beside TensorFlow's. */
export function sameModule(m: CallModule): { same: boolean; text: string } {
  return {
    same: m.same_as_export,
    text: m.same_as_export
      ? `byte for byte the module jax.export makes of jax.jit(f) (sha256 ${m.export_sha256.slice(0, 16)}…)`
      : `not the module jax.export makes (sha256 ${m.export_sha256.slice(0, 16)}…)`,
  };
}

/** tf2jax's eqns beside the ops they came from, each with the snippet line that made the op. */
export function eqnRows(e: EventOf<'tf2jax_converted'>): EqnRow[] {
  const lines = new Map(e.tf_ops.map((op) => [op.name, op.source?.line ?? null]));
  return e.eqns.map((row) => ({
    eqn: row.eqn,
    primitive: row.primitive,
    op: row.tf_op ? `${row.tf_type} ${row.tf_op}` : '',
    line: lines.get(row.tf_op) ?? null,
  }));
}

/** What the view shows up to the stepper's cursor. */
export function bridgeModel(events: readonly Event[]) {
  return {
    graph: lastOf(events, 'tf_graph_traced'),
    module: lastOf(events, 'xla_call_module_read'),
    outputs: lastOf(events, 'jax2tf_outputs_compared'),
    saved: lastOf(events, 'saved_model_loaded'),
    tf2jax: lastOf(events, 'tf2jax_converted'),
  };
}
