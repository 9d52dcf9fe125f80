/**
 * The exhibit table (frontend side): id -> the exhibit's view component and its narrative.
 *
 * Each exhibit lives in `exhibits/<id>/` (see `exhibits/registry.py`, the backend table). An
 * exhibit missing its `View.svelte` or `narrative.md` fails `tsc`/`vite build` here, and a test
 * checks that this table and the backend's list the same ids.
 */
import type { Component } from 'svelte';
import type { ExhibitViewProps } from './exhibit-api';
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
}

export const EXHIBITS: Readonly<Record<string, ExhibitEntry>> = {
  tracing: { View: TracingView, narrative: tracingNarrative },
  stations: { View: StationsView, narrative: stationsNarrative },
};

/** The ids of the exhibits this frontend can show, in table order. */
export const EXHIBIT_IDS: readonly string[] = Object.keys(EXHIBITS);
