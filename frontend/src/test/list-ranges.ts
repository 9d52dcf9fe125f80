/**
 * List ranges for tests (design 0045): split a list of a real event as the backend's
 * `summaries.split_lists` does (its first items stay, its holder's `list_ranges` names the rest
 * in order, the last range stopping at the list's length), returning each range's `items_sent`
 * answer in order.
 */
import type { ItemsSent, ListRange } from '../store/list-ranges';

let ids = 0;

/**
 * Split, in place, the list `holder[field]` (at `path` in the event `seq` of run `runId`) at
 * `cuts`: the head ends at `cuts[0]`, each range at the next cut, the last at the list's end.
 */
export function splitList(
  holder: object,
  field: string,
  path: string,
  cuts: readonly number[],
  seq: number,
  runId: string,
): ItemsSent[] {
  const h = holder as Record<string, unknown> & { list_ranges?: ListRange[] };
  const items = h[field] as unknown[];
  const bounds = [...cuts, items.length];
  const ranges: ListRange[] = [];
  const answers: ItemsSent[] = [];
  for (let k = 0; k + 1 < bounds.length; k++) {
    const [start, stop] = [bounds[k] as number, bounds[k + 1] as number];
    const detail_id = `l${ids++}`;
    ranges.push({ field, start, stop, detail_id });
    answers.push({ type: 'items_sent', run_id: runId, seq, detail_of: detail_id, path, start, items: items.slice(start, stop) });
  }
  h[field] = items.slice(0, cuts[0]);
  h.list_ranges = [...(h.list_ranges ?? []), ...ranges];
  return answers;
}

/**
 * Split, in place, the list or text at the dotted `path` of `event` (nested in a jaxpr view:
 * `jaxpr.eqns.7.inner_jaxprs.0.eqns`, `jaxpr.text`) at `cuts`, as the backend's
 * `summaries._split_nested` does: the ranges are the event's, `field` the whole path; a text's
 * cuts count code points and each answer holds one item, the next characters.
 */
export function splitNested(event: object, path: string, cuts: readonly number[]): ItemsSent[] {
  const e = event as Record<string, unknown> & { list_ranges?: ListRange[]; seq: number; run_id: string };
  const parts = path.split('.');
  let holder = e as unknown as Record<string, unknown>;
  for (const part of parts.slice(0, -1)) holder = holder[part] as Record<string, unknown>;
  const key = parts[parts.length - 1] as string;
  const value = holder[key] as unknown[] | string;
  const items = typeof value === 'string' ? [...value] : value; // a text by code points
  const bounds = [...cuts, items.length];
  const answers: ItemsSent[] = [];
  for (let k = 0; k + 1 < bounds.length; k++) {
    const [start, stop] = [bounds[k] as number, bounds[k + 1] as number];
    const detail_id = `n${ids++}`;
    e.list_ranges = [...(e.list_ranges ?? []), { field: path, start, stop, detail_id }];
    const slice = items.slice(start, stop);
    answers.push({
      type: 'items_sent',
      run_id: e.run_id,
      seq: e.seq,
      detail_of: detail_id,
      path,
      start,
      items: typeof value === 'string' ? [slice.join('')] : slice,
    });
  }
  holder[key] = typeof value === 'string' ? items.slice(0, cuts[0]).join('') : items.slice(0, cuts[0]);
  return answers;
}
