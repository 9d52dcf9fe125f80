/**
 * The tracing exhibit's view model: pure functions from the run's events (up to the stepper's
 * cursor) to what the view shows — the eqns JAX recorded so far, the staged jaxpr, what the user's
 * code printed while tracing, and the table of jitted calls with a sentence saying whether each
 * one traced again (a cache miss) or hit the cache.
 */
import type {
  CallSpec,
  EqnRecorded,
  Event,
  JaxprStaged,
  JitCalled,
  RunFailed,
  StdoutPrinted,
} from '../../frontend/src/protocol';
import { eventsOf, lastOf } from '../../frontend/src/widgets/events';

/** What a change of the call-again control is called in the UI. */
export const CHANGE_LABEL: Readonly<Record<CallSpec['change'], string>> = {
  same: 'same shapes',
  shape: 'new shape',
  dtype: 'new dtype',
  expr: 'custom args',
};

export interface CallRow {
  call: JitCalled;
  /** e.g. `same shapes → no retrace: the print stays silent` */
  sentence: string;
  /** the jitted call's `cache_size` grew with this call */
  cacheGrew: boolean;
}

/**
 * The sentence for one call: whether JAX traced `f` again and what happened to the cache.
 * `printsWhileTracing` says whether `f` printed while it was first traced (then a cache hit is
 * visible as a silent print).
 */
export function describeCall(call: JitCalled, previous: JitCalled | undefined, printsWhileTracing: boolean): string {
  const what = call.call_index === 0 ? 'first call' : CHANGE_LABEL[call.change];
  const entries = `${call.cache_size} ${call.cache_size === 1 ? 'entry' : 'entries'}`;
  if (!call.traced) {
    const silent = printsWhileTracing ? 'the print stays silent' : "f's Python body does not run";
    return `${what} → no retrace (cache hit): ${silent}; cache size stays ${call.cache_size}`;
  }
  if (previous === undefined) {
    // make_jaxpr fills the tracing cache that jax.jit shares; the probe empties it before call 0
    // so that the first call shows a trace, and a Python print in f then fires a second time.
    const again =
      printsWhileTracing && call.printed.trim() !== ''
        ? ' (jaxscope emptied the tracing cache make_jaxpr had filled, so the print fires again)'
        : '';
    return `${what} → traced: cache now holds ${entries}${again}`;
  }
  if (call.cache_size > previous.cache_size) return `${what} → traced again, cache grew to ${call.cache_size}`;
  return `${what} → traced again (cache size ${call.cache_size})`;
}

export interface TracingModel {
  /** eqns recorded so far, in recording order */
  recorded: EqnRecorded[];
  /** the staged jaxpr, once the trace finished */
  staged: JaxprStaged | undefined;
  /** what the user's code printed while it was traced the first time */
  tracePrints: StdoutPrinted[];
  /** one row per `jit_called`, in call order */
  calls: CallRow[];
  /** the run's failure, if it failed */
  failure: RunFailed | undefined;
  /** the call of the call sequence the run failed in (`run_failed` in stage `call`) */
  failedCall: number | undefined;
}

/** Derive everything the tracing view shows from the events up to the cursor. */
export function tracingModel(events: readonly Event[]): TracingModel {
  const prints = eventsOf(events, 'stdout_printed');
  const tracePrints = prints.filter((p) => p.stage === 'trace');
  const jitCalls = eventsOf(events, 'jit_called').sort((a, b) => a.call_index - b.call_index);
  const printsWhileTracing = tracePrints.some((p) => p.text.trim() !== '') || jitCalls.some((c) => c.traced && c.printed.trim() !== '');
  const calls = jitCalls.map((call, i) => {
    const previous = i > 0 ? jitCalls[i - 1] : undefined;
    return {
      call,
      sentence: describeCall(call, previous, printsWhileTracing),
      cacheGrew: previous !== undefined && call.cache_size > previous.cache_size,
    };
  });
  const failure = lastOf(events, 'run_failed');
  const callStarted = eventsOf(events, 'stage_started').filter((e) => e.stage === 'call');
  const failedCall = failure?.stage === 'call' ? (callStarted.at(-1)?.call_index ?? undefined) : undefined;
  return {
    recorded: eventsOf(events, 'eqn_recorded'),
    staged: lastOf(events, 'jaxpr_staged'),
    tracePrints,
    calls,
    failure,
    failedCall,
  };
}

/** Whether an eqn row is selected (its index is selected) or shares a selected source line. */
export function rowMark(
  index: number,
  line: number | null | undefined,
  selection: { eqnIndices: readonly number[]; lines: readonly number[] },
): 'selected' | 'same-line' | null {
  if (selection.eqnIndices.includes(index)) return 'selected';
  if (line != null && selection.lines.includes(line)) return 'same-line';
  return null;
}

/** JAX's errors for a tracer asked for a concrete value (a Python `if`, `int()`, `np.asarray`). */
const CONCRETIZATION = new Set([
  'ConcretizationTypeError',
  'TracerBoolConversionError',
  'TracerIntegerConversionError',
  'TracerArrayConversionError',
]);

/** Which account the banner above the eqns gives of a failed run: by JAX's error class. */
export type FailureFamily = 'concretization' | 'leak' | 'other';

export function failureFamily(errorClass: string | null | undefined): FailureFamily {
  if (errorClass != null && CONCRETIZATION.has(errorClass)) return 'concretization';
  if (errorClass === 'UnexpectedTracerError') return 'leak';
  return 'other';
}

export interface FailureBanner {
  family: FailureFamily;
  /** the banner's text; `code` spans between backticks */
  text: string;
}

/** JAX's words naming the function whose trace a leaked tracer came from (jax 0.10.2,
 * `_unexpected_tracer_error`): `The function being traced when the value leaked was scale at
 * <snippet>:10 traced for jit.` */
const LEAKED_IN = /The function being traced when the value leaked was (\S+) at <snippet>:(\d+)/;

/**
 * The banner above the eqns of a run that failed with one of JAX's tracer errors, chosen by the
 * error's class: a concretization error (the trace stopped where Python needed a value), a leak
 * (`UnexpectedTracerError`: a tracer kept past the end of its trace and used later), or another
 * error (a neutral account). A line is claimed only when a snippet frame gave it (`traceback`
 * not empty): with no frame, `source` is only the line of `f`'s `def`, said as "near".
 * `staged`: the staged jaxpr of `f`, when tracing `f` finished before the failure.
 */
export function failureBanner(failure: RunFailed | undefined, staged: JaxprStaged | undefined): FailureBanner | null {
  if (failure?.kind !== 'tracer_error') return null;
  const family = failureFamily(failure.error_class);
  const line = failure.source?.line;
  const framed = line != null && failure.traceback.length > 0;
  if (family === 'concretization') {
    return {
      family,
      text:
        `Tracing stopped${line != null ? ` at line ${line}` : ''}: while JAX traces \`f\`, arguments are abstract ` +
        'tracers (a shape and a dtype, no value), so Python cannot branch on them or turn them into numbers. ' +
        'The eqns below are those JAX recorded before it stopped.',
    };
  }
  const when =
    failure.stage === 'call' ? 'when `jax.jit(f)` was called' : failure.stage === 'trace' ? 'while JAX traced `f`' : '';
  const after = staged
    ? 'Tracing `f` itself finished: the eqns and the staged jaxpr below are complete.'
    : 'The eqns below are those JAX recorded before the error.';
  if (family === 'leak') {
    const m = LEAKED_IN.exec(failure.message);
    const from = m ? `the trace of \`${m[1]}\` (line ${m[2]})` : 'a trace';
    const used = framed ? `, at line ${line}` : '';
    const held = (staged?.jaxpr.constvars ?? []).filter((c) => /Tracer\b/.test(c.value_preview));
    const inJaxpr =
      held.length > 0
        ? ` The leaked value sits in the staged jaxpr as constvar ${held.map((c) => `\`${c.var.name}\``).join(', ')}` +
          ` (${held.map((c) => c.value_preview).join(', ')}), a tracer where a constant should be.`
        : '';
    return {
      family,
      text:
        `A tracer escaped its trace: a value from ${from} was kept outside it (in a global, a list or an ` +
        `attribute) and used after that trace had ended${used}. JAX raised \`UnexpectedTracerError\`` +
        `${when ? ` ${when}` : ''}. ${after}${inJaxpr}`,
    };
  }
  const at = line == null ? '' : framed ? ` at line ${line}` : ` near line ${line}`;
  return {
    family,
    text: `JAX raised \`${failure.error_class ?? 'an error'}\`${when ? ` ${when}` : ''}${at}: the error below says why. ${after}`,
  };
}

/** `text` cut at its backticks: odd pieces are code. */
export function codeSpans(text: string): { code: boolean; text: string }[] {
  return text.split('`').map((t, i) => ({ code: i % 2 === 1, text: t }));
}

/** How many avals an eqn row shows before "+N more" (a jitted model's one call eqn has 150). */
export const ROW_AVALS = 8;

/** The first `max` of `avals` and how many more there are (the rest are in the row's title). */
export function rowAvals<T>(avals: readonly T[], max = ROW_AVALS): { shown: readonly T[]; more: number } {
  return avals.length <= max ? { shown: avals, more: 0 } : { shown: avals.slice(0, max), more: avals.length - max };
}
