/**
 * The prng exhibit's view model: the `random_call_recorded` events as the key tree (each call
 * under the call that made the key it read, depth-first in call order) and the
 * `key_reuse_checked` findings. Pure functions of the events, tested on the golden streams
 * (`view-model.test.ts`); the view only lays them out.
 */
import type { Event, EventOf } from '../../frontend/src/protocol';
import { eventsOf, lastOf } from '../../frontend/src/widgets/events';

export type RandomCall = EventOf<'random_call_recorded'>;
export type ReuseChecked = EventOf<'key_reuse_checked'>;

/** One row of the key tree. */
export interface TreeRow {
  call: RandomCall;
  /** how deep under its root (a seed, or a key from `args`) */
  depth: number;
  /** `jax.random.key_data` of the key read, as text; null for a seed */
  keyIn: string | null;
  /** the keys made, as text */
  keysOut: string[];
  /** this call read a key an earlier call had consumed (a finding's line) */
  reuse: boolean;
}

/** A key's data as JAX prints `key_data`: `[0 42]`. */
export function keyText(data: readonly number[]): string {
  return `[${data.join(' ')}]`;
}

/** The calls recorded so far as a tree: roots in call order, each call's children after it. */
export function keyTree(events: readonly Event[]): TreeRow[] {
  const calls = eventsOf(events, 'random_call_recorded');
  const known = new Set(calls.map((c) => c.index));
  const children = new Map<number | null, RandomCall[]>();
  for (const c of calls) {
    // a parent the stepper has not reached yet cannot happen (parents come first); be safe
    const parent = c.parent !== null && known.has(c.parent) ? c.parent : null;
    children.set(parent, [...(children.get(parent) ?? []), c]);
  }
  const reused = reuseLines(events);
  const rows: TreeRow[] = [];
  const walk = (parent: number | null, depth: number): void => {
    for (const call of children.get(parent) ?? []) {
      rows.push({
        call,
        depth,
        keyIn: call.key_in ? keyText(call.key_in) : null,
        keysOut: call.keys_out.map(keyText),
        reuse: call.consumes && call.line !== null && reused.has(call.line),
      });
      walk(call.index, depth + 1);
    }
  };
  walk(null, 0);
  return rows;
}

/** The lines that reused a key, by any checker. */
function reuseLines(events: readonly Event[]): Set<number> {
  const checked = lastOf(events, 'key_reuse_checked');
  return new Set((checked?.findings ?? []).flatMap((f) => (f.line === null ? [] : [f.line])));
}

/** One key reuse as the view words it. */
export interface Finding {
  line: number | null;
  firstLine: number | null;
  checker: ReuseChecked['findings'][number]['checker'];
  /** the sentence under the finding */
  text: string;
  message: string | null;
  /** randomness that does not advance: what to change (null for a plain reuse) */
  fix: string | null;
}

// Between a not-advancing finding's words and its fix (the probe's events.FIX_MARK).
const FIX_MARK = ' Fix: ';

/** The findings of the reuse check, once the stepper reached it (null before). */
export function findings(events: readonly Event[]): Finding[] | null {
  const checked = lastOf(events, 'key_reuse_checked');
  if (!checked) return null;
  return checked.findings.map((f) => {
    const at = f.message?.indexOf(FIX_MARK) ?? -1;
    if (f.message && at >= 0) {
      // Randomness that does not advance: the same key drew again on a later call.
      const what = f.message.slice(0, at).replace(/\.$/, ''); // the view adds the period
      return {
        line: f.line,
        firstLine: f.first_line,
        checker: f.checker,
        message: null,
        text: what,
        fix: f.message.slice(at + FIX_MARK.length),
      };
    }
    return {
      line: f.line,
      firstLine: f.first_line,
      checker: f.checker,
      message: f.message ?? null,
      text:
        `line ${f.line ?? '?'} consumes a key that line ${f.first_line ?? '?'} already consumed` +
        (f.checker === 'jaxscope' ? ' (a raw uint32 key: found by jaxscope, not by JAX)' : ''),
      fix: null,
    };
  });
}

/** What the checker could see: null when all keys were typed, else the plain warning. */
export function checkerNote(events: readonly Event[]): string | null {
  const checked = lastOf(events, 'key_reuse_checked');
  if (!checked?.raw_keys) return null;
  return (
    'jax.debug_key_reuse tracks only typed keys (jax.random.key). This code uses raw uint32 keys ' +
    '(jax.random.PRNGKey), which the checker cannot see: the raw-key findings here are jaxscope’s ' +
    'own check over the recorded tree (the same key data consumed twice by splits or draws).'
  );
}

/** How many recorded calls the tree leaves out (past the probe's cap); 0 when none. */
export function callsLeftOut(events: readonly Event[]): number {
  return lastOf(events, 'key_reuse_checked')?.calls_left_out ?? 0;
}
