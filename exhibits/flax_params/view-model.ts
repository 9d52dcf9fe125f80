/**
 * The flax_params exhibit's view model: the `param_created` events as the rows of the parameter
 * table and the params tree as it grows (up to the stepper's cursor), `params_initialized` as
 * the finished tree with the init figures, `params_applied` as what apply read, the error Flax
 * raised, and `nnx_state_split`. Pure functions of the events, tested on the golden streams
 * (`view-model.test.ts`); the view only lays them out.
 */
import type { Event, EventOf } from '../../frontend/src/protocol';
import { eventsOf, lastOf } from '../../frontend/src/widgets/events';

export type ParamCreated = EventOf<'param_created'>;
export type ParamsInitialized = EventOf<'params_initialized'>;
export type ParamsApplied = EventOf<'params_applied'>;

/** A key's data as JAX prints `key_data`: `[0 42]`. */
export function keyText(data: readonly number[] | null | undefined): string {
  return data ? `[${data.join(' ')}]` : '—';
}

/** A folded static datum as Python writes it: strings quoted, ints bare. */
function datum(x: string | number): string {
  return typeof x === 'string' ? `'${x}'` : String(x);
}

/**
 * How the parameter's key was made, in the code's words. linen:
 * `fold_in(key [0 0], 2998342421)` with `2998342421 = sha1('Dense_0', 1)[:4]`; nnx:
 * `fold_in(default key [0 0], count 0)`.
 */
export function derivation(p: {
  api: 'linen' | 'nnx';
  root_key: number[] | null;
  stream: string;
  fold_in_data: (string | number)[];
  folded: number | null;
}): { call: string; why: string } {
  const root = `${p.stream} key ${keyText(p.root_key)}`;
  if (p.api === 'nnx') {
    return {
      call: `fold_in(${root}, ${p.folded ?? '?'})`,
      why: `the ${p.stream} stream's count: its draw number ${p.folded ?? '?'}`,
    };
  }
  if (p.fold_in_data.length === 0) return { call: root, why: 'the root key itself' };
  const hashed = `sha1(${p.fold_in_data.map(datum).join(', ')})[:4]`;
  return {
    call: `fold_in(${root}, ${p.folded ?? hashed})`,
    why: p.folded === null ? `${hashed} (traced: no concrete value)` : `${p.folded} = ${hashed}`,
  };
}

/** One row of the parameter table. */
export interface ParamRow {
  event: ParamCreated;
  /** `Dense_0/kernel` */
  name: string;
  key: string;
  derivation: { call: string; why: string };
  /** the newest row (the stepper's step) */
  latest: boolean;
  /** apply never reads it (once apply ran) */
  unused: boolean;
}

/** An initializer without the `jax.nn.initializers.` prefix the table's heading names once. */
export function initializerShort(name: string | null | undefined): string {
  return name ? name.replace(/^jax\.nn\.initializers\./, '') : 'not known';
}

export function pathName(path: readonly string[]): string {
  return path.join('/');
}

/** The parameters created so far, in call order. */
export function paramRows(events: readonly Event[]): ParamRow[] {
  const created = eventsOf(events, 'param_created');
  const unused = new Set((lastOf(events, 'params_applied')?.unused ?? []).map(pathName));
  const lastIsParam = events.at(-1)?.type === 'param_created';
  return created.map((event, i) => ({
    event,
    name: pathName(event.path),
    key: keyText(event.key),
    derivation: derivation(event),
    latest: lastIsParam && i === created.length - 1,
    unused: unused.has(pathName(event.path)),
  }));
}

/** One line of the params tree: a dict key (a node) or a leaf with its aval. */
export interface TreeLine {
  depth: number;
  name: string;
  /** `f32[4,16]` for a leaf */
  aval: string | null;
  /** the creating event's index for a leaf (null: a node, or a leaf no self.param made) */
  created: number | null;
  /** the leaf's position in JAX's flattening order (known once init returned) */
  flat: number | null;
  latest: boolean;
}

/**
 * The params tree as nested dict keys, one line per node and leaf. Before init returned, built
 * from the created parameters (under `params` for linen), the newest marked; after, from the
 * leaves of `params_initialized` with the dict's keys in JAX's (sorted) order.
 */
export function treeLines(events: readonly Event[]): TreeLine[] {
  const init = lastOf(events, 'params_initialized');
  const rows = paramRows(events);
  type Leaf = { path: string[]; aval: string; created: number | null; flat: number | null };
  const leaves: Leaf[] = init
    ? init.leaves.map((l, i) => ({ path: l.path, aval: l.aval.short, created: l.created_index ?? null, flat: i }))
    : rows.map((r) => ({
        path: r.event.api === 'linen' ? ['params', ...r.event.path] : r.event.path,
        aval: r.event.aval.short,
        created: r.event.index,
        flat: null,
      }));
  const latest = rows.find((r) => r.latest)?.event.index ?? null;
  const out: TreeLine[] = [];
  const seen = new Set<string>();
  for (const leaf of leaves) {
    leaf.path.forEach((name, depth) => {
      const prefix = leaf.path.slice(0, depth + 1).join('\u0000');
      const isLeaf = depth === leaf.path.length - 1;
      if (!isLeaf && seen.has(prefix)) return;
      seen.add(prefix);
      out.push({
        depth,
        name,
        aval: isLeaf ? leaf.aval : null,
        created: isLeaf ? leaf.created : null,
        flat: isLeaf ? leaf.flat : null,
        latest: isLeaf && leaf.created !== null && leaf.created === latest,
      });
    });
  }
  return out;
}

/** The Python type of what init returned (`dict`; nnx: `State`), once it returned. */
export function container(events: readonly Event[]): string | null {
  return lastOf(events, 'params_initialized')?.container ?? null;
}

/** The init figures as a sentence, once init returned. */
export function initFigures(events: readonly Event[]): string | null {
  const init = lastOf(events, 'params_initialized');
  if (!init) return null;
  const what = init.api === 'linen' ? 'init' : 'Building the model';
  const size = `${init.leaves.length} leaves, ${init.total_size} numbers (${init.total_bytes} bytes)`;
  const compiles =
    init.compiles > 0
      ? `${init.compiles} XLA compiles took ${init.compile_seconds.toFixed(2)} s of it: run eagerly, ` +
        `each new primitive compiles a small program the first time, so a second ${init.api === 'linen' ? 'init' : 'build'} ` +
        'takes milliseconds'
      : 'no XLA compile was needed (the programs were already compiled)';
  return `${size}. ${what} took ${init.init_seconds.toFixed(2)} s; ${compiles}.`;
}

/** What apply did, once it ran. */
export interface Applied {
  event: ParamsApplied;
  /** the created parameters apply read, by name, in read order */
  reads: { name: string; sameObject: boolean }[];
  unused: string[];
  /** how many of the created parameters apply read */
  readCount: number;
}

export function applied(events: readonly Event[]): Applied | null {
  const event = lastOf(events, 'params_applied');
  if (!event) return null;
  return {
    event,
    reads: event.reads.map((r) => ({ name: pathName(r.path), sameObject: r.same_object })),
    unused: event.unused.map(pathName),
    readCount: event.reads.length,
  };
}

/** The error Flax raised, worded for the page. */
export interface FlaxError {
  phase: 'init' | 'apply';
  errorClass: string;
  /** the message's first line, then the rest */
  headline: string;
  rest: string;
  line: number | null;
  docs: string | null;
}

export function flaxError(events: readonly Event[]): FlaxError | null {
  const e = lastOf(events, 'flax_error_raised');
  if (!e) return null;
  const [first = '', ...rest] = e.message.split('\n');
  // the page links Flax's docs itself: the message's own "(https://...)" is left out
  const headline = e.docs ? first.replace(` (${e.docs})`, '') : first;
  return {
    phase: e.phase,
    errorClass: e.error_class,
    headline,
    rest: rest.join('\n').trim(),
    line: e.line ?? null,
    docs: e.docs ?? null,
  };
}

/** The nnx split, once it ran: nodes by kind and the state's leaves. */
export function nnxSplit(events: readonly Event[]): EventOf<'nnx_state_split'> | null {
  return lastOf(events, 'nnx_state_split') ?? null;
}

/** The keys no parameter got (a Dropout's stream in nnx), as text rows. */
export function otherKeys(events: readonly Event[]): { stream: string; call: string; key: string }[] {
  const init = lastOf(events, 'params_initialized');
  if (!init) return [];
  return (init.other_keys ?? []).map((k) => ({
    stream: k.stream,
    call: `fold_in(${k.stream} key, ${k.folded ?? '?'})`,
    key: keyText(k.key),
  }));
}

/** The apply jaxpr (`jaxpr_staged`), once traced. */
export function applyJaxpr(events: readonly Event[]): EventOf<'jaxpr_staged'> | null {
  return lastOf(events, 'jaxpr_staged') ?? null;
}

/**
 * Which jaxpr invar is which parameter: each invar's name in JAX's printout with its key path
 * (`jaxpr.arg_names`: `variables['params']['Dense_0']['bias']`, shown from `['params']` on),
 * and whether apply never reads it.
 */
export function invarNames(events: readonly Event[]): { name: string; path: string; unused: boolean }[] {
  const staged = applyJaxpr(events);
  const names = staged?.jaxpr.arg_names;
  if (!staged || !names) return [];
  const unused = new Set((lastOf(events, 'params_applied')?.unused ?? []).map((p) => p.map((k) => `['${k}']`).join('')));
  return staged.jaxpr.invars.map((v, i) => {
    const path = (names[i] ?? '').replace(/^[A-Za-z_]\w*/, '');
    return { name: v.name, path, unused: [...unused].some((u) => path.endsWith(u)) };
  });
}
