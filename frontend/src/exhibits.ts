/**
 * The exhibit table (frontend side): each registered exhibit's view, narrative, navigation group
 * and short label.
 *
 * Each exhibit lives in `exhibits/<id>/` and has one entry in `exhibits/registry.py`, the
 * backend's table, which names its group and label; `npm run gen` writes those to
 * `gen/exhibits.ts` (`EXHIBIT_TABLE`, in the registry's order). The view (`View.svelte`) and
 * the narrative (`narrative.md`) are found by the folder name, so adding an exhibit is its
 * folder plus its registry entry (`docs/adding-an-exhibit.md`): nothing here. Folders whose name
 * starts with `_` (`exhibits/_template/`) are not part of the product: never imported here. An
 * entry whose folder lacks its view or narrative throws when this module loads (the vitest of
 * this table, and the page, fail at once).
 */
import type { Component } from 'svelte';
import type { ExhibitViewProps } from './exhibit-api';
import { EXHIBIT_GROUPS, EXHIBIT_TABLE, type ExhibitGroup, type WorkerKind } from './gen/exhibits';

export { EXHIBIT_GROUPS, type ExhibitGroup, type WorkerKind };

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
  /** the kind of worker that runs its snippet (the registry entry's `worker`): "torch" for the
   *  PyTorch/XLA track, "tf" for the TF bridge */
  worker: WorkerKind;
}

/** The view and narrative of folder `exhibits/<id>/` (throws when the folder lacks one). */
function entry(id: string, place: { group: ExhibitGroup; label: string; worker: WorkerKind }): ExhibitEntry {
  const View = VIEWS[`../../exhibits/${id}/View.svelte`];
  const narrative = NARRATIVES[`../../exhibits/${id}/narrative.md`];
  if (View === undefined || narrative === undefined) {
    throw new Error(`exhibit ${id}: exhibits/${id}/ lacks its View.svelte or narrative.md`);
  }
  return { View, narrative, ...place };
}

/** The exhibits by id, in an object without a prototype: an id comes from a URL, localStorage, a
 * room's teacher or the server, and `constructor`, `__proto__` or `toString` must name no exhibit
 * (a plain object's prototype answers them, and the page went blank). Test an id with
 * `isExhibitId`. */
export const EXHIBITS: Readonly<Record<string, ExhibitEntry>> = Object.assign(
  Object.create(null) as Record<string, ExhibitEntry>,
  Object.fromEntries(Object.entries(EXHIBIT_TABLE).map(([id, place]) => [id, entry(id, place)])),
);

/** Whether `id` names an exhibit of this frontend (an own property of `EXHIBITS`, never one of
 * `Object.prototype`'s names). */
export function isExhibitId(id: unknown): id is string {
  return typeof id === 'string' && Object.hasOwn(EXHIBITS, id);
}

/** The ids of the exhibits this frontend can show, in the registry's order. */
export const EXHIBIT_IDS: readonly string[] = Object.keys(EXHIBITS);
