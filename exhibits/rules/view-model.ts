/**
 * The rules exhibit's view model: the `rules_tabulated` matrix (one row per primitive, one cell
 * per rule table) searched by name, filtered by platform, by a missing rule and by "in my jaxpr",
 * with counts per column (JAX's table sizes, and how many of the shown rows have the rule).
 */
import type { Event, EventOf } from '../../frontend/src/protocol';
import { lastOf } from '../../frontend/src/widgets/events';

export type RulesTabulated = EventOf<'rules_tabulated'>;
export type RuleRow = RulesTabulated['rows'][number];
export type RuleCell = NonNullable<RuleRow['cells'][string]>;

/** The rule columns (not platforms). */
export const RULE_COLUMNS = ['jvp', 'transpose', 'batching', 'lowering'] as const;

export interface RulesQuery {
  /** substring of the primitive name or its Python global (`sin_p`); case-insensitive */
  search: string;
  /** 'all', or a platform column: show that platform's column and rows that lower there */
  platform: string;
  /** '' (no filter), or a column id: keep rows without that rule (for a platform: neither a
   * platform rule nor the generic lowering, i.e. the primitive cannot be lowered there) */
  missing: string;
  /** keep only the primitives of the snippet's jaxpr */
  onlyUsed: boolean;
}

export const DEFAULT_QUERY: RulesQuery = { search: '', platform: 'all', missing: '', onlyUsed: false };

export function rulesModel(events: readonly Event[]): RulesTabulated | undefined {
  const t = lastOf(events, 'rules_tabulated');
  if (t !== undefined) keyRows(t.rows);
  return t;
}

/** The platform columns of a matrix (every column that is not a rule column). */
export function platformColumns(t: Pick<RulesTabulated, 'columns'>): string[] {
  return t.columns.filter((c) => !(RULE_COLUMNS as readonly string[]).includes(c));
}

/** Whether a column is a platform's lowering column. */
export function isPlatform(column: string): boolean {
  return !(RULE_COLUMNS as readonly string[]).includes(column);
}

/** How `row` lowers on `platform`: its own platform rule, else the generic one, else none. */
export function loweringOn(row: RuleRow, platform: string): 'platform' | 'generic' | 'none' {
  if (row.cells[platform] !== undefined) return 'platform';
  if (row.cells['lowering'] !== undefined) return 'generic';
  return 'none';
}

/** Whether `row` lacks the rule of `column` (platforms: cannot be lowered there at all). */
export function isMissing(row: RuleRow, column: string): boolean {
  if (isPlatform(column)) return loweringOn(row, column) === 'none';
  return row.cells[column] === undefined;
}

/** The columns shown for a query: all, or the rule columns plus the chosen platform. */
export function shownColumns(t: Pick<RulesTabulated, 'columns'>, q: Pick<RulesQuery, 'platform'>): string[] {
  if (q.platform === 'all') return [...t.columns];
  return [...RULE_COLUMNS, q.platform];
}

/** The rows matching the query, in the event's order (sorted by primitive name). */
export function queryRows(rows: readonly RuleRow[], q: RulesQuery): RuleRow[] {
  const needle = q.search.trim().toLowerCase();
  return rows.filter((r) => {
    if (q.onlyUsed && !r.used) return false;
    if (needle && !r.primitive.toLowerCase().includes(needle) && !(r.var ?? '').toLowerCase().includes(needle)) {
      return false;
    }
    if (q.platform !== 'all' && loweringOn(r, q.platform) === 'none' && q.missing !== q.platform) return false;
    if (q.missing && !isMissing(r, q.missing)) return false;
    return true;
  });
}

/** Column -> how many of `rows` have a rule there (platform columns: their own rule only). */
export function columnCounts(rows: readonly RuleRow[], columns: readonly string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const c of columns) out[c] = rows.filter((r) => r.cells[c] !== undefined).length;
  return out;
}

/** `jax/_src/lax/lax.py:4573` for a cell (or the file alone, or ''). */
export function cellLocation(cell: Pick<RuleCell, 'file' | 'line'>): string {
  if (!cell.file) return '';
  return cell.line ? `${cell.file}:${cell.line}` : cell.file;
}

/** The short label shown in a cell: `fancy`/`plain` for transposes, the rule's name else. */
export function cellLabel(column: string, cell: RuleCell): string {
  if (column === 'transpose') return cell.table === 'ad.fancy_transposes' ? 'fancy' : 'plain';
  return 'yes';
}

/** The file's base name without `.py`, and the line (`lax:4573`), for narrow cells. */
export function shortLocation(cell: Pick<RuleCell, 'file' | 'line'>): string {
  const loc = cellLocation(cell);
  const slash = loc.lastIndexOf('/');
  return (slash >= 0 ? loc.slice(slash + 1) : loc).replace(/\.py(:|$)/, '$1');
}

/**
 * A name or location cut into the pieces a narrow matrix column may wrap between: after each
 * `_`, `:` and `.` (`fused_attention_stablehlo:1139` -> `fused_`, `attention_`, `stablehlo:`,
 * `1139`), so a column is as narrow as its longest piece, never broken inside a word.
 */
export function breakParts(text: string): string[] {
  return text.split(/(?<=[_:.])/);
}

/** Keys of JAX's rows that share their name with an earlier JAX row (`keyRows`). */
const sharedNameKeys = new WeakMap<RuleRow, string>();

/**
 * Give each of JAX's rows whose name an earlier JAX row has a key of its own: Pallas's kernel
 * primitives reuse core names (`gather`, `swap`, `load` in `pallas/mosaic/sc_primitives.py`), so
 * the second `gather` is `gather (jax/_src/pallas/mosaic/sc_primitives.py)`. The first keeps the
 * bare name (rows come sorted by name, JAX's core table first).
 */
export function keyRows(rows: readonly RuleRow[]): void {
  const seen = new Set<string>();
  for (const r of rows) {
    if (r.own) continue;
    if (seen.has(r.primitive)) sharedNameKeys.set(r, `${r.primitive} (${r.file ?? r.var ?? 'another module'})`);
    seen.add(r.primitive);
  }
}

/** A row's name as shown and its key: the primitive's name, `add (your Primitive)` for the
 * snippet's own Primitive object (a row of its own beside JAX's `add`), and the defining file
 * for a second JAX primitive of the same name (`keyRows`). */
export function rowKey(r: RuleRow): string {
  return r.own ? `${r.primitive} (your Primitive)` : (sharedNameKeys.get(r) ?? r.primitive);
}

/** The row for a key (`rowKey`) or a primitive name; for a name two rows share (the snippet's
 * `Primitive("add")` and JAX's `add`), the one in the jaxpr, else JAX's (a click on JAX's row
 * picks it by key: `rowKey` of JAX's row is the bare name, the snippet's carries its suffix). */
export function rowOf(rows: readonly RuleRow[], key: string): RuleRow | undefined {
  const named = rows.filter((r) => r.primitive === key);
  if (named.length > 0) return named.find((r) => r.used) ?? named.find((r) => !r.own) ?? named[0];
  return rows.find((r) => rowKey(r) === key);
}

const COLUMN_LABELS: Readonly<Record<string, string>> = {
  jvp: 'JVP',
  transpose: 'transpose',
  batching: 'batching',
  lowering: 'lowering (generic)',
};

/** A column's header: the rule columns by what they hold, a platform by its name. */
export function columnLabel(column: string): string {
  return COLUMN_LABELS[column] ?? column;
}

/** The registering statement with its line numbers (`4573  mlir.register_lowering(...)`). */
export function numbered(first: number, text: string): string {
  return text
    .split('\n')
    .map((t, i) => `${String(first + i).padStart(4, ' ')}  ${t}`)
    .join('\n');
}

/**
 * The row the detail panel shows: the row clicked (`pickedRow`, kept apart from a row of the same
 * name: JAX's `add` and the snippet's), else the primitive picked by name (an eqn, a name in the
 * note), else the jaxpr's first primitive.
 */
export function detailRow(
  t: Pick<RulesTabulated, 'rows' | 'jaxpr_primitives'>,
  picked: string | null,
  pickedRow: RuleRow | null,
): RuleRow | undefined {
  if (pickedRow !== null && picked === rowKey(pickedRow)) {
    const key = rowKey(pickedRow);
    const same = t.rows.find((r) => rowKey(r) === key && r.own === pickedRow.own);
    if (same) return same;
  }
  const name = picked ?? t.jaxpr_primitives[0] ?? null;
  return name === null ? undefined : rowOf(t.rows, name);
}

/**
 * What the probe imported, for the sentence above the counts: `jax`, how many of JAX's modules
 * (`jax` and its submodules: the probe imports every one, so that the count is the same in any
 * run), and `others`, the other libraries' modules (`flax`, `flax.linen`, `flax.nnx`).
 */
export function importedSummary(imported: readonly string[]): { jax: number; others: string[] } {
  const isJax = (m: string): boolean => m === 'jax' || m.startsWith('jax.');
  return { jax: new Set(imported.filter(isJax)).size, others: [...new Set(imported.filter((m) => !isJax(m)))] };
}
