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
