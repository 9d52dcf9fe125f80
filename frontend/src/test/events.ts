/**
 * Event builders for tests: well-formed protocol events of one run, with every field the wire
 * carries (the generated types require them), so tests read as a stream.
 */
import type { Event, EventOf, RunFailed, StageStarted } from '../protocol';

export function runStarted(runId: string, seq: number): Event {
  return {
    type: 'run_started',
    run_id: runId,
    seq,
    exhibit: 'tracing',
    jax_version: '0.10.2',
    backend: 'cpu',
    devices: ['TFRT_CPU_0'],
    cpu_device_count: 8,
  };
}

export function stageStarted(runId: string, seq: number, stage: StageStarted['stage']): Event {
  return { type: 'stage_started', run_id: runId, seq, stage, call_index: null };
}

export function eqnRecorded(runId: string, seq: number, index: number, line = 3): Event {
  return {
    type: 'eqn_recorded',
    run_id: runId,
    seq,
    index,
    primitive: 'sin',
    params: { accuracy: 'None' },
    in_avals: [{ shape: [3], dtype: 'float32', weak_type: false, short: 'f32[3]' }],
    out_avals: [{ shape: [3], dtype: 'float32', weak_type: false, short: 'f32[3]' }],
    source: { line, column: 11, end_line: line, end_column: 20, function: 'f', callers: null },
  };
}

export function runFinished(runId: string, seq: number): Event {
  return { type: 'run_finished', run_id: runId, seq, duration_ms: 12.5 };
}

export function runFailed(runId: string, seq: number, kind: RunFailed['kind'] = 'tracer_error'): RunFailed {
  return {
    type: 'run_failed',
    run_id: runId,
    seq,
    kind,
    error_class: 'TracerBoolConversionError',
    message: 'Attempted boolean conversion of traced array with shape bool[].',
    source: { line: 4, column: 4, end_line: 4, end_column: 12, function: 'f', callers: null },
    traceback: [{ line: 4, function: 'f', text: 'if x > 0:' }],
    explanation: 'Python `if` needs a concrete bool, but x is a tracer.',
    fix: 'Use jnp.where or lax.cond.',
    stage: 'trace',
    during: null,
  };
}

export function runQueued(
  runId: string,
  position: number,
  waiting: number,
  estimate_s: number | null = null,
  reason: EventOf<'run_queued'>['reason'] = 'pool_full',
): Event {
  return { type: 'run_queued', run_id: runId, seq: 0, position, waiting, estimate_s, reason, worker_kind: null };
}
