/**
 * The tracing exhibit's view model: pure functions from the run's events (up to the stepper's
 * cursor) to what the view shows — the eqns JAX recorded so far, the staged jaxpr, what the user's
 * code printed while tracing, and the table of jitted calls with a sentence saying whether each
 * one traced again (a cache miss) or hit the cache.
 */
import type {
  AvalView,
  CallSpec,
  EqnRecorded,
  Event,
  JaxprStaged,
  JitCalled,
  RunFailed,
  StdoutPrinted,
} from '../../frontend/src/protocol';
import { eventsOf, lastOf } from '../../frontend/src/widgets/events';
import { avalText } from '../../frontend/src/widgets/format';

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
  /** its argument leaves, each marked where it differs from the previous call's */
  args: ArgsDiff;
  /** the arguments in words (`1 of 27 leaves changed since call #1: tokens: i32[4] → i32[5]`) */
  argsNote: string;
}

/** One leaf of a call's flattened arguments. */
export interface ArgLeaf {
  /** its keypath as JAX names it (`params['layers'][3]['w']`), or `leaf 3` when unnamed */
  path: string;
  aval: AvalView;
  /** the same leaf's aval in the previous call, when it differs from `aval` */
  before: AvalView | undefined;
}

/** A call's argument leaves against the previous call's. */
export interface ArgsDiff {
  leaves: ArgLeaf[];
  /** the leaves whose aval differs from the previous call's, in leaf order */
  changed: ArgLeaf[];
  /** the previous call had another number of leaves (a typed args tuple of another structure):
   * leaves are not compared one by one then */
  structureChanged: boolean;
  /** the previous call's index, if any */
  previous: number | undefined;
  /** how many leaves the previous call had */
  previousLeaves: number | undefined;
}

/** Whether two avals are the same in what the event carries (shape, dtype, weak type), each of
 * which JAX's cache key tells apart. */
function sameAval(a: AvalView, b: AvalView): boolean {
  return (
    a.dtype === b.dtype &&
    a.weak_type === b.weak_type &&
    a.shape.length === b.shape.length &&
    a.shape.every((d, i) => d === b.shape[i])
  );
}

/**
 * `call`'s argument leaves, each compared with the same leaf of `previous`, so that a row can say
 * why a call traced again (a model's call has ~150 leaves, one of which grew). `names`: the
 * staged jaxpr's `arg_names`, the keypath of each leaf of the arguments `f` was traced with; the
 * calls flatten their arguments in the same order (dynamic positional, then keyword), so they
 * name a call's leaves when the count matches. A typed args tuple with the same count but
 * another structure would be misnamed; JAX's own explanation of the miss names its keypaths.
 */
export function argsDiff(
  call: JitCalled,
  previous: JitCalled | undefined,
  names: readonly string[] | null | undefined,
): ArgsDiff {
  const named = names != null && names.length === call.arg_avals.length;
  const structureChanged = previous !== undefined && previous.arg_avals.length !== call.arg_avals.length;
  const leaves = call.arg_avals.map((aval, i): ArgLeaf => {
    const old = structureChanged ? undefined : previous?.arg_avals[i];
    const path = named ? (names[i] ?? `leaf ${i}`) : `leaf ${i}`;
    return { path, aval, before: old && !sameAval(old, aval) ? old : undefined };
  });
  const changed = leaves.filter((l) => l.before !== undefined);
  return { leaves, changed, structureChanged, previous: previous?.call_index, previousLeaves: previous?.arg_avals.length };
}

/** `1 leaf`, `150 leaves` */
export function leavesOf(n: number): string {
  return `${n.toLocaleString('en-US')} ${n === 1 ? 'leaf' : 'leaves'}`;
}

/** `path: f32[3] → f32[4]` */
export function leafChange(leaf: ArgLeaf): string {
  return leaf.before ? `${leaf.path}: ${avalText(leaf.before)} → ${avalText(leaf.aval)}` : `${leaf.path}: ${avalText(leaf.aval)}`;
}

/** How many changed leaves a row's note names before "+N more" (all are in its full list). */
export const NOTE_CHANGES = 3;

/**
 * A call's arguments in a few words: how many leaves, and what differs from the previous call
 * (the changed leaves' keypaths with old → new avals, the first `max` of them; `same avals as
 * call #0`; or a structure change). A row of a model's call shows this instead of 150 avals.
 */
export function argsNote(diff: ArgsDiff, max = NOTE_CHANGES): string {
  const leaves = leavesOf(diff.leaves.length);
  if (diff.previous === undefined) return leaves;
  const since = `call #${diff.previous}`;
  if (diff.structureChanged) {
    return `the arguments' structure changed: ${leaves} where ${since} had ${diff.previousLeaves ?? '?'}`;
  }
  if (diff.changed.length === 0) return `${leaves}, same avals as ${since}`;
  const named = diff.changed.slice(0, max).map(leafChange).join('; ');
  const more = diff.changed.length > max ? `; +${diff.changed.length - max} more` : '';
  return `${diff.changed.length} of ${leaves} changed since ${since}: ${named}${more}`;
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
  const staged = lastOf(events, 'jaxpr_staged');
  const calls = jitCalls.map((call, i): CallRow => {
    const previous = i > 0 ? jitCalls[i - 1] : undefined;
    const args = argsDiff(call, previous, staged?.jaxpr.arg_names);
    return {
      call,
      sentence: describeCall(call, previous, printsWhileTracing),
      cacheGrew: previous !== undefined && call.cache_size > previous.cache_size,
      args,
      argsNote: argsNote(args),
    };
  });
  const failure = lastOf(events, 'run_failed');
  const callStarted = eventsOf(events, 'stage_started').filter((e) => e.stage === 'call');
  const failedCall = failure?.stage === 'call' ? (callStarted.at(-1)?.call_index ?? undefined) : undefined;
  return {
    recorded: eventsOf(events, 'eqn_recorded'),
    staged,
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
