/**
 * List ranges (design 0045, list ranges): in an `on_demand` run a list too long for one event
 * (20,000 residuals: partial_eval's `jaxpr_split.residuals`, transpose's
 * `linear_jaxpr_staged.residuals`, and the `constvars` / `invars` / `outvars` of a jaxpr view
 * that holds them) arrives with its first items only; its holder's `list_ranges` names the rest,
 * in order, the last range of a field ending at the list's whole length. Each `items_sent`
 * answer (`seq` the event holding the list, `path` dotted from that event: `residuals`,
 * `known.outvars`, `jaxpr.constvars`) appends its items to the list when it is that list's next
 * range (the first range of that field in the holder's `list_ranges`, starting at the list's
 * current length) and drops the range. Once every range arrived the event equals the eager one.
 *
 * While a list is partial its `length` is what the page has loaded, not the program:
 * `listLength` is the whole length (as `eqnCount` is for eqns), `listsPending` says a holder
 * is not complete yet (a widget that pairs items of two lists by index, or draws every variable,
 * waits for it).
 */
import type { Event, EventOf, JaxprView } from '../protocol';

export type ItemsSent = EventOf<'items_sent'>;
/** One range of a list still to come (the generated `ListRange`). */
export type ListRange = NonNullable<JaxprView['list_ranges']>[number];

/** Anything that may hold list ranges: an event, a jaxpr view. */
export type ListHolder = object & { list_ranges?: ListRange[] };

type Obj = Record<string, unknown>;

function isObject(value: unknown): value is Obj {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isJaxprView(value: unknown): value is JaxprView {
  return isObject(value) && typeof value['text'] === 'string' && Array.isArray(value['eqns']);
}

/** The ranges of `holder` still to come, in order (none for a complete holder). */
function rangesOf(holder: ListHolder): readonly ListRange[] {
  const ranges = holder.list_ranges;
  return Array.isArray(ranges) ? ranges : [];
}

/** The next range of the list `field` of `holder` (the only one the page asks for), if any. */
export function nextListRange(holder: ListHolder, field: string): ListRange | undefined {
  return rangesOf(holder).find((r) => r.field === field);
}

/**
 * The whole length of the list `field` of `holder`: the `stop` of the last range of that field
 * while some are still to come, else the list's length. A sentence or count about the program
 * uses this, never the array's `length` (what the page has loaded).
 */
export function listLength(holder: ListHolder, field: string): number {
  let stop: number | null = null;
  for (const r of rangesOf(holder)) if (r.field === field) stop = r.stop;
  if (stop !== null) return stop;
  const list = (holder as Obj)[field];
  return Array.isArray(list) ? list.length : 0;
}

/** Whether some list of `holder` still has ranges to come. */
export function listsPending(holder: ListHolder | null | undefined): boolean {
  return holder != null && rangesOf(holder).length > 0;
}

/** `holder` with its list `field` extended by `sent`, or null when `sent` is not that list's next range. */
function extendList(holder: Obj, field: string, sent: ItemsSent): Obj | null {
  const list = Object.hasOwn(holder, field) ? holder[field] : undefined;
  if (!Array.isArray(list)) return null;
  const ranges = rangesOf(holder);
  const at = ranges.findIndex((r) => r.field === field);
  const next = ranges[at];
  if (next === undefined || next.detail_id !== sent.detail_of || !Array.isArray(sent.items)) return null;
  if (next.start !== list.length || sent.start !== next.start || sent.items.length !== next.stop - next.start) return null;
  const rest = ranges.filter((_, i) => i !== at);
  const out: Obj = { ...holder, [field]: [...list, ...sent.items] };
  // Complete: the holder is then the eager one (which has no `list_ranges`: off the wire when empty).
  if (rest.length > 0) out['list_ranges'] = rest;
  else delete out['list_ranges'];
  return out;
}

/**
 * `event` with the list at `sent.path` extended by `sent` (copies along the path; `event` is
 * not changed), or null when the path names no list or `sent` is not that list's next range.
 */
export function applyItemsSent(event: Event, sent: ItemsSent): Event | null {
  const parts = sent.path.split('.');
  if (parts.some((p) => p === '' || p === '__proto__')) return null;
  const along = (obj: Obj, i: number): Obj | null => {
    const part = parts[i] as string;
    if (i === parts.length - 1) return extendList(obj, part, sent);
    const child = Object.hasOwn(obj, part) ? obj[part] : undefined;
    if (!isObject(child)) return null;
    const grown = along(child, i + 1);
    return grown === null ? null : { ...obj, [part]: grown };
  };
  return along(event as unknown as Obj, 0) as Event | null;
}

/** Which holders `nextListRanges` looks at: the jaxpr views only, or the events' own lists too. */
export type ListScope = 'views' | 'all';

function firstOfEachField(holder: ListHolder, out: string[]): void {
  const seen = new Set<string>();
  for (const r of rangesOf(holder)) {
    if (seen.has(r.field)) continue;
    seen.add(r.field);
    out.push(r.detail_id);
  }
}

/** The detail id of the next range of each partial list of `holder` (a widget showing them asks for these). */
export function nextListRangeIds(holder: ListHolder): string[] {
  const out: string[] = [];
  firstOfEachField(holder, out);
  return out;
}

/**
 * The detail id of the next range of every partial list in `events`: of the lists of the jaxpr
 * views that are fields of an event (`'views'`), and of the events' own lists too (`'all'`).
 */
export function nextListRanges(events: readonly Event[], scope: ListScope): string[] {
  const out: string[] = [];
  for (const event of events) {
    if (scope === 'all') firstOfEachField(event, out);
    for (const value of Object.values(event)) if (isJaxprView(value)) firstOfEachField(value, out);
  }
  return out;
}
