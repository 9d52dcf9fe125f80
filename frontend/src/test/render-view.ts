/**
 * Rendering an exhibit view in vitest (Svelte's server renderer) with the props the shell gives a
 * finished run: its events, not running, the default options, no selection, callbacks that do
 * nothing.
 */
import type { Component } from 'svelte';
import { render } from 'svelte/server';
import { EMPTY_SELECTION, type ExhibitViewProps } from '../exhibit-api';
import { defaultRunOptions, type Event } from '../protocol';

/** The HTML of `View` showing `events` (as both `events` and `allEvents`); `extra` adds props
 * (e.g. `rerunLocked`) or replaces some. */
export function renderView(
  View: Component<ExhibitViewProps>,
  events: readonly Event[],
  extra: Partial<ExhibitViewProps> = {},
): string {
  const props: ExhibitViewProps = {
    events,
    allEvents: events,
    running: false,
    options: defaultRunOptions(),
    selection: EMPTY_SELECTION,
    select: () => {},
    rerun: () => {},
    ...extra,
  };
  return render(View, { props }).body;
}
