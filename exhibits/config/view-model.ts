/**
 * The config exhibit's view model: the `config_options_listed` table (searched, filtered, sorted)
 * and the `config_retrace_checked` experiments (one event per flipped option: the stepper walks
 * them).
 */
import type { Event, EventOf, RunFailed } from '../../frontend/src/protocol';
import { eventsOf, lastOf } from '../../frontend/src/widgets/events';

export type ConfigOptionsListed = EventOf<'config_options_listed'>;
export type ConfigOption = ConfigOptionsListed['options'][number];
export type RetraceChecked = EventOf<'config_retrace_checked'>;

export type SortKey = 'name' | 'value' | 'scoped' | 'trace_context';

export interface TableQuery {
  search: string;
  onlyTraceContext: boolean;
  onlyScoped: boolean;
  sort: SortKey;
  descending: boolean;
}

export const DEFAULT_QUERY: TableQuery = {
  search: '',
  onlyTraceContext: false,
  onlyScoped: false,
  sort: 'name',
  descending: false,
};

export interface ConfigModel {
  listed: ConfigOptionsListed | undefined;
  checks: RetraceChecked[];
  failure: RunFailed | undefined;
}

export function configModel(events: readonly Event[]): ConfigModel {
  return {
    listed: lastOf(events, 'config_options_listed'),
    checks: eventsOf(events, 'config_retrace_checked'),
    failure: lastOf(events, 'run_failed'),
  };
}

function sortValue(o: ConfigOption, key: SortKey): string {
  if (key === 'scoped' || key === 'trace_context') return o[key] ? '0' : '1';
  return o[key].toLowerCase();
}

/** The options matching the query (search over name, value and help; case-insensitive),
 * sorted by the chosen column, then by name. */
export function queryOptions(options: readonly ConfigOption[], q: TableQuery): ConfigOption[] {
  const words = q.search.toLowerCase().split(/\s+/).filter(Boolean);
  const kept = options.filter((o) => {
    if (q.onlyTraceContext && !o.trace_context) return false;
    if (q.onlyScoped && !o.scoped) return false;
    const hay = `${o.name} ${o.value} ${o.help}`.toLowerCase();
    return words.every((w) => hay.includes(w));
  });
  const sign = q.descending ? -1 : 1;
  return kept.sort((a, b) => {
    const c = sortValue(a, q.sort).localeCompare(sortValue(b, q.sort));
    return c !== 0 ? sign * c : a.name.localeCompare(b.name);
  });
}

/** Clicking a column header: sort by it, or flip the direction when it is already the key. */
export function toggleSort(q: TableQuery, key: SortKey): TableQuery {
  return q.sort === key ? { ...q, descending: !q.descending } : { ...q, sort: key, descending: false };
}

/** Counts for the header line. */
export function counts(options: readonly ConfigOption[]): { total: number; scoped: number; traced: number } {
  return {
    total: options.length,
    scoped: options.filter((o) => o.scoped).length,
    traced: options.filter((o) => o.trace_context).length,
  };
}

/** The experiment shown when none is picked: the first flip that retraced (x64's changed jaxpr
 * in the default example), else the latest. */
export function defaultCheck(checks: readonly RetraceChecked[]): RetraceChecked | undefined {
  return checks.find((c) => c.retraced) ?? checks[checks.length - 1];
}

export interface HelpPart {
  text: string;
  code: boolean;
}

/** JAX's help text (RST) split into plain text and code spans: ``literal`` (RST) and
 * `name` (single backticks, as some of JAX's help texts write code), the backticks dropped. An
 * RST link (`text <url>`_) and an unmatched backtick stay plain text. */
export function helpParts(help: string): HelpPart[] {
  const parts: HelpPart[] = [];
  const re = /``(.+?)``|`([^`]+?)`(?!_)/g;
  let last = 0;
  for (const m of help.matchAll(re)) {
    const at = m.index ?? 0;
    if (at > last) parts.push({ text: help.slice(last, at), code: false });
    parts.push({ text: m[1] ?? m[2] ?? '', code: true });
    last = at + m[0].length;
  }
  if (last < help.length) parts.push({ text: help.slice(last), code: false });
  return parts;
}

/** Longer words than this get break opportunities (`breakable`). */
const LONG_WORD = 24;

/** `text` cut into pieces between which a line may wrap: after `/ . _ # ? & = :` inside a word
 * longer than 24 characters (JAX's help has URLs, its values enum reprs and paths, none with a
 * space). The view puts a `<wbr>` between the pieces, so the table's columns are not as wide as
 * the longest URL and the text reads the same (`textContent` is unchanged). Short words, and
 * prose, stay whole. */
export function breakable(text: string): string[] {
  const pieces: string[] = [];
  let run = '';
  for (const word of text.split(/(\s+)/)) {
    if (word.length <= LONG_WORD) {
      run += word;
      continue;
    }
    const cut = word.split(/(?<=[/._#?&=:])/);
    pieces.push(run + (cut[0] ?? ''), ...cut.slice(1, -1));
    run = cut.length > 1 ? (cut[cut.length - 1] ?? '') : '';
  }
  if (run !== '' || pieces.length === 0) pieces.push(run);
  return pieces;
}
