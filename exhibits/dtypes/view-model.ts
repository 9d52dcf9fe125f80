/**
 * The dtypes exhibit's view model: the promotion tables (`promotion_tabulated`, x64 off and on)
 * as the grid the view draws, with the snippet's arguments, their result type and the cells
 * that fold them into it highlighted (`result_type_computed`), and why x64 changes the answer
 * where it does. Pure functions of the events; the view only lays them out.
 */
import type { Selection } from '../../frontend/src/exhibit-api';
import type { Event, EventOf } from '../../frontend/src/protocol';
import { eventsOf, lastOf } from '../../frontend/src/widgets/events';

export type Tabulated = EventOf<'promotion_tabulated'>;
export type Computed = EventOf<'result_type_computed'>;
export type ChangesFound = EventOf<'dtype_changes_found'>;
export type Change = ChangesFound['changes'][number];
export type JaxType = Tabulated['types'][number];
export type Answer = Computed['answers'][number];
/** the `jax_enable_x64` setting a table or answer is for */
export type Mode = 'off' | 'on';

export interface DtypesModel {
  tables: Partial<Record<Mode, Tabulated>>;
  computed: Computed | undefined;
  /** the dtype changes JAX made without being asked (undefined: the run did not get there) */
  changes: ChangesFound | undefined;
}

export function dtypesModel(events: readonly Event[]): DtypesModel {
  const tables: Partial<Record<Mode, Tabulated>> = {};
  for (const t of eventsOf(events, 'promotion_tabulated')) tables[t.x64 ? 'on' : 'off'] = t;
  return { tables, computed: lastOf(events, 'result_type_computed'), changes: lastOf(events, 'dtype_changes_found') };
}

export interface ChangeRow {
  kind: Change['kind'];
  /** a finding (a promotion; a demotion that corrupts values; precision lost); false: a note (values
   * only rounded; a promotion whose other operand was made wider on purpose) */
  finding: boolean;
  line: number | null;
  /** the change in one sentence, the words of the CLI's stderr line (artefacts.py `headline`) */
  text: string;
  fix: string;
}

/** How a corrupted value was changed, in words (artefacts.py `CORRUPTIONS`). */
const CORRUPTIONS: Record<NonNullable<Change['corruption']>, string> = {
  overflow: 'overflow to inf',
  underflow: 'underflow to 0 or to float32 subnormals that lose digits',
  whole_number: 'are whole numbers above 2**24 that float32 holds as other whole numbers',
  wrapped: 'lie outside the 32-bit range and wrap around',
  beyond_rounding: "differ from float32 by more than the dtype's rounding",
};

/** How a low-precision result differs from float32's (artefacts.py `LOSSES`). */
function lostHow(c: Change): string {
  if (c.corruption === 'overflow') return 'overflow to inf where float32 is finite';
  if (c.corruption === 'whole_number') return `are whole numbers that ${c.from_dtype} holds as other whole numbers`;
  return `differ from float32 by more than ${c.from_dtype}'s rounding`;
}

/** A bfloat16/float16 result that loses what float32 keeps (artefacts.py `headline`). */
function lostText(c: Change): string {
  const lines = c.count > 1 ? ` (${c.count} eqns at this line)` : '';
  return `${c.from_type} result of ${c.api} (${c.primitive ?? '?'}) loses what float32 keeps: ${c.changed} of ${c.total} values ${lostHow(c)} (${c.example})${lines}`;
}

function demotedText(c: Change): string {
  const head = `${c.api} is ${c.from_type}; with x64 off JAX holds it as ${c.to_type}`;
  if (!c.finding) return `${head}, and rounds ${c.changed} of ${c.total} values to ${c.to_dtype} (${c.example}), as JAX documents`;
  const rest = c.changed !== c.corrupted ? `; ${c.changed} values change in all` : '';
  return `${head}, and ${c.corrupted} of ${c.total} values ${CORRUPTIONS[c.corruption ?? 'wrapped']} (${c.corrupt_example})${rest}`;
}

/** Each dtype change as the page says it: where, what became what, and how to keep the dtype. */
export function changeRows(model: DtypesModel): ChangeRow[] {
  return (model.changes?.changes ?? []).map((c) => ({
    kind: c.kind,
    finding: c.finding,
    line: c.source?.line ?? null,
    text:
      c.kind === 'precision_lost'
        ? lostText(c)
        : c.kind === 'demoted'
        ? demotedText(c)
        : `${c.from_type} promoted to ${c.to_type} by ${c.api}${c.partner ? ` with ${c.partner}` : ''}${c.finding ? '' : `, which was made ${c.to_dtype} on purpose`}; the wider dtype lasts to f's output` +
          (c.count > 1 ? ` (${c.count} times on this line)` : ''),
    fix:
      c.kind === 'precision_lost'
        ? `Fix: ${(c.fix ?? 'compute it in float32 (preferred_element_type, or an upcast)').replace(/`/g, '')}.`
        : c.kind === 'promoted'
        ? c.finding
          ? "Give the constant or the other operand the value's dtype (a Python scalar is weakly typed and takes it), or convert on purpose with .astype."
          : `Not a finding: the other operand was made ${c.to_dtype} on purpose (an explicit upcast, preferred_element_type or dtype=). Fix: ${(c.fix ?? `upcast this operand, x.astype(jnp.${c.to_dtype})`).replace(/`/g, '')}.`
        : c.finding
          ? 'Turn on jax_enable_x64 to keep 64 bits, or bring the values into what 32 bits hold before JAX takes them (rescale, offset or reduce them in numpy).'
          : 'Not a finding: every value keeps float32 precision. To compute in float64, turn on jax_enable_x64; to say float32 in the code, pass np.asarray(a, np.float32).',
  }));
}

/**
 * What a run's findings select, so the editor marks their lines as it marks a failed run's line:
 * the lines of the rows that are findings (a note's line is shown only when its row's line button
 * is pressed), in order, once each; null when no finding carries a line.
 */
export function findingSelection(rows: readonly ChangeRow[]): Selection | null {
  const lines = [...new Set(rows.flatMap((r) => (r.finding && r.line !== null ? [r.line] : [])))].sort((a, b) => a - b);
  return lines.length === 0 ? null : { origin: 'eqn', lines, eqnIndices: [], opLines: [] };
}

/** The mode to show first: the one the snippet ran with (x64 off unless it turned it on). */
export function defaultMode(model: DtypesModel): Mode {
  return model.computed?.user_x64 ? 'on' : 'off';
}

/** A node's name in words: `int32`, `Python int (weakly typed)`. */
export function typeName(t: JaxType): string {
  if (!t.weak) return t.dtype;
  const kind = t.code === 'i*' ? 'int' : t.code === 'f*' ? 'float' : 'complex';
  return `Python ${kind} (weakly typed)`;
}

export type Hit = 'none' | 'step' | 'answer';

export interface GridCell {
  code: string;
  weak: boolean;
  /** a cell of the fold of the arguments' types ('answer': its last, the result type) */
  hit: Hit;
  /** the other x64 setting joins these two types differently */
  changed: boolean;
  title: string;
}

export interface GridHeader {
  code: string;
  weak: boolean;
  /** one of the arguments' types */
  hit: boolean;
  title: string;
}

export interface Grid {
  mode: Mode;
  headers: GridHeader[];
  rows: { header: GridHeader; cells: GridCell[] }[];
  /** the arguments' types in this mode, in argument order */
  argCodes: string[];
  answer: Answer | undefined;
  /** the cell that holds the answer, as [row code, column code] */
  answerCell: [string, string] | undefined;
}

function answerOf(model: DtypesModel, mode: Mode): Answer | undefined {
  return model.computed?.answers.find((a) => a.x64 === (mode === 'on'));
}

/** The table of `mode`, with the arguments' types, the fold's cells and the answer marked. */
export function grid(model: DtypesModel, mode: Mode): Grid | undefined {
  const table = model.tables[mode];
  if (!table) return undefined;
  const other = model.tables[mode === 'on' ? 'off' : 'on'];
  const answer = answerOf(model, mode);
  const argCodes = (model.computed?.args ?? []).map((a) => (mode === 'on' ? a.x64_on : a.x64_off).code);
  const steps = answer?.steps ?? [];
  const last = steps[steps.length - 1];
  // One argument: its type joined with itself (the diagonal) is the answer.
  const answerCell: [string, string] | undefined =
    answer === undefined
      ? undefined
      : last !== undefined
        ? last.join === answer.code
          ? [last.row, last.col]
          : undefined
        : argCodes[0] === answer.code
          ? [answer.code, answer.code]
          : undefined;
  const stepCells = new Set(steps.map((s) => `${s.row}|${s.col}`));
  const args = new Set(argCodes);
  const header = (t: JaxType): GridHeader => ({ code: t.code, weak: t.weak, hit: args.has(t.code), title: typeName(t) });
  const headers = table.types.map(header);
  const rows = table.types.map((rowType, i) => ({
    header: header(rowType),
    cells: table.types.map((colType, j): GridCell => {
      const cell = table.cells[i]?.[j];
      const join = cell?.join;
      const otherJoin = other?.cells[i]?.[j]?.join;
      const key = `${rowType.code}|${colType.code}`;
      const hit: Hit =
        answerCell && answerCell[0] === rowType.code && answerCell[1] === colType.code ? 'answer' : stepCells.has(key) ? 'step' : 'none';
      let title = join ? `jnp.promote_types(${typeName(rowType)}, ${typeName(colType)}) = ${typeName(join)}` : '';
      if (cell && join?.weak) title += `; an array of it is a weakly typed ${cell.result}`;
      else if (cell && join && cell.result !== join.dtype) {
        title += `; an array of it is ${cell.result} with x64 off (64-bit types are canonicalized to 32 bits)`;
      }
      if (otherJoin && join && otherJoin.code !== join.code) title += `; with x64 ${mode === 'on' ? 'off' : 'on'}: ${typeName(otherJoin)}`;
      return { code: join?.code ?? '?', weak: join?.weak ?? false, hit, changed: !!otherJoin && !!join && otherJoin.code !== join.code, title };
    }),
  }));
  return { mode, headers, rows, argCodes, answer, answerCell };
}

export interface ArgRow {
  path: string;
  pythonType: string;
  off: string;
  on: string;
  /** x64 changes how JAX takes this argument (a numpy 64-bit value is canonicalized) */
  differs: boolean;
}

export function argRows(model: DtypesModel): ArgRow[] {
  return (model.computed?.args ?? []).map((a) => ({
    path: a.path,
    pythonType: a.python_type,
    off: a.x64_off.code,
    on: a.x64_on.code,
    differs: a.x64_off.code !== a.x64_on.code,
  }));
}

/** Whether x64 changes the result type, and why (null when it does not). */
export function x64Note(model: DtypesModel): string | null {
  const off = answerOf(model, 'off');
  const on = answerOf(model, 'on');
  if (!off || !on || (off.dtype === on.dtype && off.weak === on.weak)) return null;
  const head = `x64 changes the answer: ${off.dtype} with x64 off, ${on.dtype} with x64 on.`;
  const canonicalized = argRows(model).filter((a) => a.differs);
  if (canonicalized.length > 0) {
    const which = canonicalized.map((a) => `${a.path} (${a.on} with x64 on)`).join(', ');
    return `${head} With x64 off JAX takes ${which} as ${canonicalized.map((a) => a.off).join(', ')}: it canonicalizes 64-bit types to 32 bits.`;
  }
  return `${head} The arguments' types are the same; the table is not: with x64 off, JAX joins uint32 with a signed integer into int32, so that two 32-bit inputs never make a 64-bit type (with x64 on, int64).`;
}

/** The first sentence of JAX's error message (its advice follows). */
export function firstSentence(message: string): string {
  const end = message.indexOf('. ');
  return end < 0 ? message : message.slice(0, end + 1);
}
