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
 * A list or text nested deeper in a jaxpr view (an inner jaxpr's eqns, a long text: the
 * backend's `_split_nested`) has its ranges in the event's own `list_ranges`, `field` its whole
 * path (`jaxpr.eqns.7.inner_jaxprs.0.eqns`, `jaxpr.text`); a text's answer is one item, its next
 * characters.
 *
 * While a list is partial its `length` is what the page has loaded, not the program:
 * `listLength` is the whole length (as `eqnCount` is for eqns), `listsPending` says a holder
 * is not complete yet (a widget that pairs items of two lists by index, or draws every variable,
 * waits for it). `textPending` says how much of a nested text is still to come (the page asks
 * for nested ranges only once the run ended: the text widget says so meanwhile).
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
 * while some are still to come, else the list's length (a text's in code points). A sentence or count about the program
 * uses this, never the array's `length` (what the page has loaded).
 */
export function listLength(holder: ListHolder, field: string): number {
  let stop: number | null = null;
  for (const r of rangesOf(holder)) if (r.field === field) stop = r.stop;
  if (stop !== null) return stop;
  let value: unknown = holder;
  for (const part of field.split('.')) value = step(value, part); // a nested one's field is its path
  return Array.isArray(value) ? value.length : typeof value === 'string' ? codePoints(value) : 0;
}

/** Whether some list of `holder` still has ranges to come. */
export function listsPending(holder: ListHolder | null | undefined): boolean {
  return holder != null && rangesOf(holder).length > 0;
}

/** The own property `part` of an object, or item `part` (digits) of an array; undefined else. */
function step(node: unknown, part: string): unknown {
  if (Array.isArray(node)) return /^\d+$/.test(part) ? node[Number(part)] : undefined;
  return isObject(node) && Object.hasOwn(node, part) ? node[part] : undefined;
}

/** The length of `text` in code points (Python's `len`: the backend's character offsets). */
function codePoints(text: string): number {
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0xdc00 || c > 0xdfff) n++; // a low surrogate ends a pair already counted
  }
  return n;
}

/**
 * `node` with the value at `parts[i..]` replaced by `leaf(value)` (objects and arrays copied
 * along the path) and the `list_ranges` of the object at depth `holder` set to `rest` (left
 * off once empty, as the wire leaves it off); null when the path leads nowhere or `leaf` refuses.
 */
function rebuild(
  node: unknown,
  parts: readonly string[],
  i: number,
  holder: number,
  rest: readonly ListRange[],
  leaf: (value: unknown) => unknown,
): unknown {
  let out: unknown;
  if (i === parts.length) out = leaf(node);
  else {
    const part = parts[i] as string;
    const grown = rebuild(step(node, part), parts, i + 1, holder, rest, leaf);
    if (grown === null) return null;
    if (Array.isArray(node)) {
      out = [...node];
      (out as unknown[])[Number(part)] = grown;
    } else out = { ...(node as Obj), [part]: grown };
  }
  if (i === holder && out !== null) {
    if (!isObject(out)) return null;
    if (rest.length > 0) out['list_ranges'] = rest;
    else delete out['list_ranges'];
  }
  return out;
}

/**
 * `event` with the list at `sent.path` extended by `sent` (copies along the path; `event` is
 * not changed), or null when the path names no list or `sent` is not that list's next range.
 *
 * The range is held by the object at the path less its last part (a jaxpr view's
 * `constvars`, the event's own `residuals`), under that last part; or, for a list or text
 * nested deeper in a jaxpr view (`jaxpr.eqns.0.inner_jaxprs.0.eqns`, `jaxpr.text`), by the
 * event, under the whole path. A text's answer is one item, its next characters (`start` and
 * `stop` count code points, as Python does).
 */
export function applyItemsSent(event: Event, sent: ItemsSent): Event | null {
  const parts = sent.path.split('.');
  if (parts.some((p) => p === '' || p === '__proto__') || !Array.isArray(sent.items)) return null;
  const byEvent = parts.length > 1 && rangesOf(event).some((r) => r.field === sent.path);
  const depth = byEvent ? 0 : parts.length - 1;
  const key = byEvent ? sent.path : (parts[depth] as string);
  let holder: unknown = event;
  for (const part of parts.slice(0, depth)) holder = step(holder, part);
  if (!isObject(holder)) return null;
  const ranges = rangesOf(holder);
  const at = ranges.findIndex((r) => r.field === key);
  const next = ranges[at];
  if (next === undefined || next.detail_id !== sent.detail_of || sent.start !== next.start) return null;
  const count = next.stop - next.start;
  const leaf = (value: unknown): unknown => {
    if (Array.isArray(value))
      return value.length === next.start && sent.items.length === count ? [...value, ...sent.items] : null;
    const [chunk] = sent.items;
    if (typeof value !== 'string' || typeof chunk !== 'string' || sent.items.length !== 1) return null;
    return codePoints(value) === next.start && codePoints(chunk) === count ? value + chunk : null;
  };
  const rest = ranges.filter((_, i) => i !== at);
  return rebuild(event, parts, 0, depth, rest, leaf) as Event | null;
}

/** Which holders `nextListRanges` looks at: the jaxpr views only, or the events' own lists too. */
export type ListScope = 'views' | 'all';

function firstOfEachField(holder: ListHolder, out: string[], keep: (r: ListRange) => boolean = () => true): void {
  const seen = new Set<string>();
  for (const r of rangesOf(holder)) {
    if (seen.has(r.field) || !keep(r)) continue;
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
 * views that are fields of an event, and of the lists and texts nested deeper in them, whose
 * ranges the event holds under their path (`'views'`); of the events' own lists too (`'all'`).
 */
export function nextListRanges(events: readonly Event[], scope: ListScope): string[] {
  const out: string[] = [];
  for (const event of events) {
    const inView = (r: ListRange): boolean => {
      const dot = r.field.indexOf('.');
      return dot > 0 && isJaxprView((event as unknown as Obj)[r.field.slice(0, dot)]);
    };
    firstOfEachField(event, out, scope === 'all' ? undefined : inView);
    for (const value of Object.values(event)) if (isJaxprView(value)) firstOfEachField(value, out);
  }
  return out;
}

/** What is still to come of a nested text: its characters (code points) and ranges. */
export interface TextPending {
  chars: number;
  ranges: number;
  /** The run ended and some of its details could not be had (gone with its worker): these never come. */
  gone?: boolean;
}

/**
 * How much of the text at `field` of `event` (a nested text: `jaxpr.text`,
 * `jaxpr.eqns.0.text`, whose ranges the event holds under that path) is still to come; null
 * when it is whole (no range of it left: all merged, or it was never split).
 */
export function textPending(event: ListHolder, field: string): TextPending | null {
  let chars = 0;
  let ranges = 0;
  for (const r of rangesOf(event)) {
    if (r.field !== field) continue;
    chars += r.stop - r.start;
    ranges += 1;
  }
  return ranges === 0 ? null : { chars, ranges };
}

/** Per event list: each jaxpr view whose text has ranges to come, with its event and the text's path. */
const holders = new WeakMap<readonly Event[], Map<object, { event: Event; field: string }>>();

/**
 * How much of the text of `view` is still to come (`textPending`), where `view` is a jaxpr
 * view (a `JaxprView`, an inner one) of one of `events` whose text has ranges there (a field of the event, `known.text`, or
 * one nested in it, `jvp.eqns.0.inner_jaxprs.0.text`); null when its text is whole or it is no
 * such view. The views are found from the events' ranges, once per `events`.
 */
export function viewTextPending(events: readonly Event[], view: object): TextPending | null {
  let index = holders.get(events);
  if (index === undefined) {
    index = new Map();
    for (const event of events) {
      for (const r of rangesOf(event)) {
        if (!r.field.endsWith('.text')) continue;
        let node: unknown = event;
        for (const part of r.field.split('.').slice(0, -1)) node = step(node, part);
        if (isJaxprView(node)) index.set(node, { event, field: r.field });
      }
    }
    holders.set(events, index);
  }
  const at = index.get(view);
  return at === undefined ? null : textPending(at.event, at.field);
}
