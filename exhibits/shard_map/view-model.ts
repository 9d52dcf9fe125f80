/**
 * The shard_map exhibit's view model: pure functions from the run's events to what the view shows.
 *
 * The probe emits `shard_map_body_traced` (when JAX reached the body: per-device avals and varying
 * axes, the body jaxpr, its collectives), `shard_map_checked` (each of JAX's checks, the specs,
 * the verdict of `jax.jit(jax.shard_map(...))(*args)`), then, when it ran,
 * `shard_map_outputs_assembled` (every output's device blocks and the reference comparison).
 * The stepper walks these three steps.
 */
import type { Event, EventOf, RunFailed, RunOptions } from '../../frontend/src/protocol';
import { lastOf } from '../../frontend/src/widgets/events';

export type ShardMapBodyTraced = EventOf<'shard_map_body_traced'>;
export type ShardMapChecked = EventOf<'shard_map_checked'>;
export type ShardMapOutputsAssembled = EventOf<'shard_map_outputs_assembled'>;
export type ShardMapCheck = ShardMapChecked['checks'][number];
export type ShardMapFault = ShardMapCheck['faults'][number];
export type ShardMapSpecView = ShardMapChecked['specs'][number];
export type ShardMapOutput = ShardMapOutputsAssembled['outputs'][number];
export type ShardMapValueView = ShardMapBodyTraced['inputs'][number];
export type ShardMapCollective = ShardMapBodyTraced['collectives'][number];

export interface ShardMapModel {
  body: ShardMapBodyTraced | undefined;
  checked: ShardMapChecked | undefined;
  outputs: ShardMapOutputsAssembled | undefined;
  failure: RunFailed | undefined;
}

/** Derive the model from the events up to the stepper's cursor. */
export function shardMapModel(events: readonly Event[]): ShardMapModel {
  return {
    body: lastOf(events, 'shard_map_body_traced'),
    checked: lastOf(events, 'shard_map_checked'),
    outputs: lastOf(events, 'shard_map_outputs_assembled'),
    failure: lastOf(events, 'run_failed'),
  };
}

/** The first failed check, if any. */
export function failedCheck(checked: ShardMapChecked | undefined): ShardMapCheck | undefined {
  return checked?.checks.find((c) => c.status === 'failed');
}

/** One entry of a spec as a chip: its text and whether the failed check points at it. */
export interface EntryCell {
  text: string;
  fault: boolean;
}

/** One `P(...)` of in_specs/out_specs, as the view draws it. */
export interface SpecRow {
  /** `in_specs[0]`, `out_specs` */
  label: string;
  specs: ShardMapSpecView['specs'];
  path: string;
  spec: string;
  isSpec: boolean;
  cells: EntryCell[];
  /** the whole spec (or its tree) is at fault: no single entry is */
  whole: boolean;
  /** mesh axes involved in the fault (unknown name, non-dividing axis, unmentioned varying axis) */
  axes: string[];
}

/** The spec rows of a run, each entry marked when the failed check's faults name it. */
export function specRows(checked: ShardMapChecked | undefined): SpecRow[] {
  if (!checked) return [];
  const faults = failedCheck(checked)?.faults ?? [];
  const rows: SpecRow[] = checked.specs.map((s) => {
    const mine = faults.filter((f) => f.specs === s.specs && f.path === s.path);
    const entries = new Set(mine.flatMap((f) => f.entries));
    return {
      label: `${s.specs}${s.path}`,
      specs: s.specs,
      path: s.path,
      spec: s.spec,
      isSpec: s.is_spec,
      cells: s.entries.map((text, i) => ({ text, fault: entries.has(i) })),
      whole: mine.length > 0 && entries.size === 0,
      axes: [...new Set(mine.flatMap((f) => f.axes))],
    };
  });
  // A fault on a whole tree (path "" where the tree is a tuple: arity) marks every row of it.
  for (const f of faults) {
    if (f.path === '' && !checked.specs.some((s) => s.specs === f.specs && s.path === '')) {
      for (const r of rows) if (r.specs === f.specs) r.whole = true;
    }
  }
  return rows;
}

/** The varying manual axes as JAX prints them in a type: `{V:(x,y)}`, `{V:x}`, or `` (invariant). */
export function vmaText(vma: readonly string[]): string {
  if (vma.length === 0) return '';
  return vma.length === 1 ? `{V:${vma[0]}}` : `{V:(${vma.join(',')})}`;
}

/** A plain sentence for a value's varying axes. */
export function vmaSentence(vma: readonly string[], meshAxes: readonly string[]): string {
  const same = meshAxes.filter((a) => !vma.includes(a));
  if (vma.length === 0) return 'the same on every device (invariant)';
  const differs = `differs across ${vma.map((a) => `'${a}'`).join(' and ')}`;
  return same.length ? `${differs}; the same across ${same.map((a) => `'${a}'`).join(' and ')}` : differs;
}

export const STATUS_MARK: Record<ShardMapCheck['status'], string> = {
  passed: '✓',
  failed: '✗',
  not_reached: '·',
  off: '–',
};

export const STATUS_TEXT: Record<ShardMapCheck['status'], string> = {
  passed: 'passed',
  failed: 'failed',
  not_reached: 'not reached',
  off: 'off (check_vma=False)',
};

/** One sentence for the verdict. */
export function verdictSentence(checked: ShardMapChecked): string {
  if (checked.ok) {
    const passed = checked.checks.filter((c) => c.status === 'passed').length;
    return `jax.shard_map accepted the specs and ran: ${passed} of ${checked.checks.length} checks passed${
      checked.checks.some((c) => c.status === 'off') ? ' (the replication check is off)' : ''
    }.`;
  }
  const failed = failedCheck(checked);
  if (checked.check === 'body') return `The body itself raised ${checked.error_class ?? 'an error'}.`;
  if (failed) return `jax.shard_map raised ${checked.error_class ?? 'an error'}: check ${failed.name} failed (${failed.title}).`;
  return `jax.shard_map raised ${checked.error_class ?? 'an error'}.`;
}

/** A short note beside a spec at fault, naming the mesh axes involved. */
export function faultNote(check: string, axes: readonly string[]): string {
  const names = axes.map((a) => `'${a}'`).join(', ');
  switch (check) {
    case 'unknown_axis':
      return `not a mesh axis: ${names}`;
    case 'divisibility':
      return `the size of mesh axis ${names} does not divide this array axis`;
    case 'replication':
      return `the output still varies over ${names}, which this spec leaves out`;
    case 'duplicate_axis':
      return `mesh axis ${names} is named at more than one position`;
    default:
      return `mesh axis ${names}`;
  }
}

/** Eqn indices of the body's collectives (highlighted in the body jaxpr). */
export function collectiveEqns(body: ShardMapBodyTraced | undefined): Set<number> {
  return new Set(body?.collectives.map((c) => c.eqn_index) ?? []);
}

/** Why a body collective's primitive is not the name the user called. */
export interface CollectiveNote {
  /** the public function the snippet's line calls (`jax.lax.psum`), or what binds the primitive */
  api: string;
  /** the user's call on the eqn's source line, when that line calls `api` */
  call: string | null;
  /** the sentence shown beside the row */
  text: string;
  /** where JAX does it (file and function in the installed JAX) */
  where: string;
}

/**
 * The note beside a body collective whose primitive is not the public function's name:
 * `jax.lax.psum` (and `pmean`, a psum then a divide) binds `psum_invariant` under
 * `jax.shard_map(..., check_vma=True)`: `jax/_src/lax/parallel.py` `_psum` calls
 * `bind_psum_invariant` when `config._check_vma` is on (shard_map turns it on from its
 * `check_vma`), and plain `psum_p` when it is off. `call` is set when the eqn's source line
 * (`source_text`) calls `psum`/`pmean`. `null` for primitives named as called.
 */
export function collectiveNote(c: ShardMapCollective): CollectiveNote | null {
  const axes = c.axes.map((a) => `'${a}'`).join(', ');
  const called = /\b(?:lax\.)?(psum|pmean)\s*\(/.exec(c.source_text ?? '');
  const fn = called?.[1] ?? 'psum';
  const api = `jax.lax.${fn}`;
  const mean = fn === 'pmean' ? ' (pmean is a psum, then a divide)' : '';
  const call = called ? (c.source_text ?? null) : null;
  if (c.primitive === 'psum_invariant') {
    return {
      api,
      call,
      where: 'jax/_src/lax/parallel.py: _psum → bind_psum_invariant → psum_invariant_p',
      text:
        `psum_invariant is JAX's name for ${api} inside shard_map with check_vma=True${mean}: ` +
        `the same all-reduce sum, named for its result, which is invariant over ${axes} ` +
        `(the sum drops ${axes} from the value's {V:…}).`,
    };
  }
  if (c.primitive === 'psum' && called) {
    return {
      api,
      call,
      where: 'jax/_src/lax/parallel.py: _psum → psum_p',
      text: `with check_vma=False, ${api}${mean} binds plain psum: no varying-axes types to update.`,
    };
  }
  return null;
}

/** `x: 4 × y: 2` */
export function meshText(checked: ShardMapChecked): string {
  return checked.mesh_axes.map((a, i) => `${a}: ${checked.mesh_shape[i]}`).join(' × ');
}

/** `[0:2, 4:8]` */
export function indexText(index: readonly (readonly number[])[]): string {
  return `[${index.map(([a, b]) => `${a}:${b}`).join(', ')}]`;
}

/**
 * The device blocks of an output grouped by block: one row per distinct index range, with the
 * devices that hold it (more than one: replicated copies).
 */
export interface BlockRow {
  index: string;
  shape: number[];
  devices: string[];
}

export function blockRows(output: ShardMapOutput): BlockRow[] {
  const rows = new Map<string, BlockRow>();
  for (const s of output.shards) {
    const key = indexText(s.index);
    const row = rows.get(key);
    if (row) row.devices.push(s.device);
    else rows.set(key, { index: key, shape: [...s.shape], devices: [s.device] });
  }
  return [...rows.values()];
}

/** Options for a rerun with another in_specs expression (empty: the snippet's own). */
export function specOptions(options: RunOptions, inSpecs: string): RunOptions {
  const text = inSpecs.trim();
  return { ...options, spec: text === '' ? null : text };
}

/**
 * Real code (a snippet with no `in_specs`): where the checked `shard_map` call is in `f`, and the
 * other calls found there. `null` for the snippet form.
 */
export function foundText(checked: ShardMapChecked): string | null {
  const found = checked.found;
  if (!found) return null;
  const where = (s: { line?: number | null; within?: string[] }): string =>
    `${s.line != null ? `line ${s.line}` : 'a line outside your snippet'}${s.within?.length ? ` (inside ${s.within.join(' → ')})` : ''}`;
  const shown = found.sites[found.shown];
  if (!shown) return null;
  const others = found.sites.filter((_, i) => i !== found.shown);
  const rest = others.length
    ? ` f makes ${others.length} other shard_map call${others.length === 1 ? '' : 's'}: ${others
        .map((s) => `${where(s)}${s.reachable === false ? ', in a loop or a branch: not checked' : ''}`)
        .join('; ')}.`
    : '';
  return `Your f calls jax.shard_map itself: this is the call at ${where(shown)}, checked with the arrays f passed it at your args; its mesh, specs and body are the ones JAX staged for it.${rest}`;
}
