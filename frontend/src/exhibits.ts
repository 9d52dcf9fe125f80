/**
 * The exhibit table (frontend side): id -> the exhibit's view component and its narrative.
 *
 * Each exhibit lives in `exhibits/<id>/` (see `exhibits/registry.py`, the backend table). An
 * exhibit missing its `View.svelte` or `narrative.md` fails `tsc`/`vite build` here, and a test
 * checks that this table and the backend's list the same ids.
 */
import type { Component } from 'svelte';
import type { ExhibitViewProps } from './exhibit-api';
import JvpView from '../../exhibits/jvp/View.svelte';
import jvpNarrative from '../../exhibits/jvp/narrative.md?raw';
import PartialEvalView from '../../exhibits/partial_eval/View.svelte';
import partialEvalNarrative from '../../exhibits/partial_eval/narrative.md?raw';
import TransposeView from '../../exhibits/transpose/View.svelte';
import transposeNarrative from '../../exhibits/transpose/narrative.md?raw';
import CustomVjpView from '../../exhibits/custom_vjp/View.svelte';
import customVjpNarrative from '../../exhibits/custom_vjp/narrative.md?raw';
import NanFinderView from '../../exhibits/nan_finder/View.svelte';
import nanFinderNarrative from '../../exhibits/nan_finder/narrative.md?raw';
import VmapView from '../../exhibits/vmap/View.svelte';
import vmapNarrative from '../../exhibits/vmap/narrative.md?raw';
import TransformOrderView from '../../exhibits/transform_order/View.svelte';
import transformOrderNarrative from '../../exhibits/transform_order/narrative.md?raw';
import PytreeView from '../../exhibits/pytree/View.svelte';
import pytreeNarrative from '../../exhibits/pytree/narrative.md?raw';
import ControlFlowView from '../../exhibits/control_flow/View.svelte';
import controlFlowNarrative from '../../exhibits/control_flow/narrative.md?raw';
import CachesView from '../../exhibits/caches/View.svelte';
import cachesNarrative from '../../exhibits/caches/narrative.md?raw';
import CacheKeyView from '../../exhibits/cache_key/View.svelte';
import cacheKeyNarrative from '../../exhibits/cache_key/narrative.md?raw';
import RecompileHuntView from '../../exhibits/recompile_hunt/View.svelte';
import recompileHuntNarrative from '../../exhibits/recompile_hunt/narrative.md?raw';
import ConfigView from '../../exhibits/config/View.svelte';
import configNarrative from '../../exhibits/config/narrative.md?raw';
import ShardingView from '../../exhibits/sharding/View.svelte';
import shardingNarrative from '../../exhibits/sharding/narrative.md?raw';
import ShardMapView from '../../exhibits/shard_map/View.svelte';
import shardMapNarrative from '../../exhibits/shard_map/narrative.md?raw';
import RulesView from '../../exhibits/rules/View.svelte';
import rulesNarrative from '../../exhibits/rules/narrative.md?raw';
import StationsView from '../../exhibits/stations/View.svelte';
import stationsNarrative from '../../exhibits/stations/narrative.md?raw';
import TracingView from '../../exhibits/tracing/View.svelte';
import tracingNarrative from '../../exhibits/tracing/narrative.md?raw';

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
export const EXHIBIT_GROUPS = ['Trace & compile', 'Autodiff', 'Batching', 'Pytrees & control flow', 'Caches', 'Devices'] as const;
export type ExhibitGroup = (typeof EXHIBIT_GROUPS)[number];

export const EXHIBITS: Readonly<Record<string, ExhibitEntry>> = {
  tracing: { View: TracingView, narrative: tracingNarrative, group: 'Trace & compile', label: 'Tracing → jaxpr' },
  stations: { View: StationsView, narrative: stationsNarrative, group: 'Trace & compile', label: 'Four stations' },
  jvp: { View: JvpView, narrative: jvpNarrative, group: 'Autodiff', label: 'JVP' },
  partial_eval: { View: PartialEvalView, narrative: partialEvalNarrative, group: 'Autodiff', label: 'Partial eval' },
  transpose: { View: TransposeView, narrative: transposeNarrative, group: 'Autodiff', label: 'Transpose walk' },
  custom_vjp: { View: CustomVjpView, narrative: customVjpNarrative, group: 'Autodiff', label: 'custom_vjp lab' },
  nan_finder: { View: NanFinderView, narrative: nanFinderNarrative, group: 'Autodiff', label: 'NaN finder' },
  vmap: { View: VmapView, narrative: vmapNarrative, group: 'Batching', label: 'vmap axes' },
  transform_order: { View: TransformOrderView, narrative: transformOrderNarrative, group: 'Batching', label: 'Transform order' },
  pytree: { View: PytreeView, narrative: pytreeNarrative, group: 'Pytrees & control flow', label: 'Pytrees' },
  control_flow: { View: ControlFlowView, narrative: controlFlowNarrative, group: 'Pytrees & control flow', label: 'Control flow' },
  caches: { View: CachesView, narrative: cachesNarrative, group: 'Caches', label: 'Cache layers' },
  cache_key: { View: CacheKeyView, narrative: cacheKeyNarrative, group: 'Caches', label: 'Cache key' },
  recompile_hunt: { View: RecompileHuntView, narrative: recompileHuntNarrative, group: 'Caches', label: 'Recompile hunt' },
  config: { View: ConfigView, narrative: configNarrative, group: 'Caches', label: 'Config' },
  sharding: { View: ShardingView, narrative: shardingNarrative, group: 'Devices', label: 'Sharding' },
  shard_map: { View: ShardMapView, narrative: shardMapNarrative, group: 'Devices', label: 'shard_map' },
  rules: { View: RulesView, narrative: rulesNarrative, group: 'Devices', label: 'Rule matrix' },
};

/** The ids of the exhibits this frontend can show, in table order. */
export const EXHIBIT_IDS: readonly string[] = Object.keys(EXHIBITS);
