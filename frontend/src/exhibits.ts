/**
 * The exhibit table (frontend side): one line per exhibit, its navigation group and short label.
 *
 * Each exhibit lives in `exhibits/<id>/` (see `exhibits/registry.py`, the backend table); its
 * view (`View.svelte`) and its narrative (`narrative.md`) are found by the folder name, so adding
 * an exhibit is its folder plus one line here (`docs/adding-an-exhibit.md`). Folders whose name
 * starts with `_` (`exhibits/_template/`) are not part of the product: never imported here. An
 * entry whose folder lacks its view or narrative throws when this module loads (the vitest of
 * this table, and the page, fail at once), and a test checks that this table and the backend's
 * list the same ids.
 */
import type { Component } from 'svelte';
import type { ExhibitViewProps } from './exhibit-api';

// Every exhibit folder's view and narrative, by path (`../../exhibits/<id>/View.svelte`); the
// underscore folders (the template) are left out of the build.
const VIEWS = import.meta.glob<Component<ExhibitViewProps>>(['../../exhibits/*/View.svelte', '!../../exhibits/_*/**'], {
  eager: true,
  import: 'default',
});
const NARRATIVES = import.meta.glob<string>(['../../exhibits/*/narrative.md', '!../../exhibits/_*/**'], {
  eager: true,
  query: '?raw',
  import: 'default',
});

/** The frontend half of one exhibit. */
export interface ExhibitEntry {
  /** the exhibit's view; rendered by the shell with the current run's events */
  View: Component<ExhibitViewProps>;
  /** `exhibits/<id>/narrative.md` as markdown source (rendered beside the panels) */
  narrative: string;
  /** the navigation group the tab sits in */
  group: ExhibitGroup;
  /** the tab's short label (the full title comes from the catalogue) */
  label: string;
}

/** Navigation groups, in display order. */
export const EXHIBIT_GROUPS = [
  'Trace & compile',
  'Autodiff',
  'Batching',
  'Pytrees & control flow',
  'Caches',
  'Devices',
  'XLA & export',
  'Debugging',
  'PyTorch/XLA',
] as const;
export type ExhibitGroup = (typeof EXHIBIT_GROUPS)[number];

/** Where each exhibit sits in the navigation: one line per exhibit, in display order. */
const TABLE: Readonly<Record<string, { group: ExhibitGroup; label: string }>> = {
  tracing: { group: 'Trace & compile', label: 'Tracing → jaxpr' },
  stations: { group: 'Trace & compile', label: 'Four stations' },
  jvp: { group: 'Autodiff', label: 'JVP' },
  partial_eval: { group: 'Autodiff', label: 'Partial eval' },
  transpose: { group: 'Autodiff', label: 'Transpose walk' },
  custom_vjp: { group: 'Autodiff', label: 'custom_vjp lab' },
  nan_finder: { group: 'Debugging', label: 'NaN finder' },
  vmap: { group: 'Batching', label: 'vmap axes' },
  transform_order: { group: 'Batching', label: 'Transform order' },
  pytree: { group: 'Pytrees & control flow', label: 'Pytrees' },
  control_flow: { group: 'Pytrees & control flow', label: 'Control flow' },
  caches: { group: 'Caches', label: 'Cache layers' },
  cache_key: { group: 'Caches', label: 'Cache key' },
  recompile_hunt: { group: 'Debugging', label: 'Recompile hunt' },
  config: { group: 'Caches', label: 'Config' },
  sharding: { group: 'Devices', label: 'Sharding' },
  shard_map: { group: 'Devices', label: 'shard_map' },
  rules: { group: 'Devices', label: 'Rule matrix' },
  dtypes: { group: 'Trace & compile', label: 'Type promotion' },
  prng: { group: 'Trace & compile', label: 'PRNG keys' },
  flax_params: { group: 'Pytrees & control flow', label: 'Flax params' },
  lazy_tensor: { group: 'PyTorch/XLA', label: 'Lazy tensors' },
  pjrt_registry: { group: 'PyTorch/XLA', label: 'PJRT_DEVICE branch' },
  seam: { group: 'PyTorch/XLA', label: 'ComputationClient seam' },
  xla_cache: { group: 'PyTorch/XLA', label: 'Compile cache' },
  torch_spmd: { group: 'PyTorch/XLA', label: 'SPMD mesh' },
  dynamo_bridge: { group: 'PyTorch/XLA', label: 'torch.compile bridge' },
  pallas: { group: 'XLA & export', label: 'Pallas blocks' },
  export: { group: 'XLA & export', label: 'jax.export' },
  xla_passes: { group: 'XLA & export', label: 'XLA passes' },
  review: { group: 'Debugging', label: 'Code review' },
  wrapped_fun: { group: 'Trace & compile', label: 'WrappedFun stack' },
};

/** The view and narrative of folder `exhibits/<id>/` (throws when the folder lacks one). */
function entry(id: string, place: { group: ExhibitGroup; label: string }): ExhibitEntry {
  const View = VIEWS[`../../exhibits/${id}/View.svelte`];
  const narrative = NARRATIVES[`../../exhibits/${id}/narrative.md`];
  if (View === undefined || narrative === undefined) {
    throw new Error(`exhibit ${id}: exhibits/${id}/ lacks its View.svelte or narrative.md`);
  }
  return { View, narrative, ...place };
}

export const EXHIBITS: Readonly<Record<string, ExhibitEntry>> = Object.fromEntries(
  Object.entries(TABLE).map(([id, place]) => [id, entry(id, place)]),
);

/** The ids of the exhibits this frontend can show, in table order. */
export const EXHIBIT_IDS: readonly string[] = Object.keys(EXHIBITS);
