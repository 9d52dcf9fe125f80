/**
 * The pallas exhibit's view model: the `pallas_call_found` events as the grid (one cell per
 * program instance), one picture per operand (its array cut into the blocks the program
 * instances touch, each labelled by the instances that read or write it), the selected
 * instance's element ranges, the `pallas_output_compared` rows, and (option `target` "tpu-v5e")
 * each call's `pallas_mosaic_lowered`: its Mosaic operands and ops linked to the kernel jaxpr's
 * eqns and the user's lines. Pure functions of the
 * events, tested on the golden streams (`view-model.test.ts`); the view only lays them out.
 */
import type { Event, EventOf } from '../../frontend/src/protocol';
import { eventsOf, lastOf } from '../../frontend/src/widgets/events';

export type CallFound = EventOf<'pallas_call_found'>;
export type OutputCompared = EventOf<'pallas_output_compared'>;
export type MosaicLowered = EventOf<'pallas_mosaic_lowered'>;
export type Operand = CallFound['operands'][number];
export type Program = CallFound['programs'][number];

/** The `pallas_call`s found so far, in program order. */
export function calls(events: readonly Event[]): CallFound[] {
  return eventsOf(events, 'pallas_call_found');
}

/** The comparison with the reference, once the stepper reached it. */
export function compared(events: readonly Event[]): OutputCompared | null {
  return lastOf(events, 'pallas_output_compared') ?? null;
}

/** A program id as JAX's `pl.program_id` values read: `(1, 2)`; `(0,)` for a 1-D grid. */
export function pidText(pid: readonly number[]): string {
  return pid.length === 1 ? `(${pid[0]},)` : `(${pid.join(', ')})`;
}

/** An element range per dimension as a numpy slice of the operand: `x[0:4, 8:12]`. */
export function sliceText(name: string, ranges: readonly (readonly number[])[]): string {
  return `${name}[${ranges.map(([a, b]) => (b === (a ?? 0) + 1 ? `${a}` : `${a}:${b}`)).join(', ')}]`;
}

/** The operand's name in the view: the kernel's parameter (`x_ref` shown as `x`), else JAX's. */
export function operandName(op: Operand): string {
  if (op.name) return op.name.replace(/_ref$/, '');
  return op.role === 'input' ? `in${op.index}` : `out${op.index}`;
}

/** The block shape as the BlockSpec wrote it: `(4, 8)`, `None` for a squeezed dimension. */
export function blockShapeText(op: Operand): string {
  const dims = op.block.map((d) => (d.kind === 'squeezed' ? 'None' : d.kind === 'blocked' ? `${d.size}` : d.text));
  return dims.length === 1 ? `(${dims[0]},)` : `(${dims.join(', ')})`;
}

/** One rectangle of an operand's picture: element rows `[y, y+h)`, columns `[x, x+w)`. */
export interface Cell {
  x: number;
  y: number;
  w: number;
  h: number;
  /** indices (into `call.programs`) of the instances whose block covers exactly this rectangle */
  programs: number[];
}

/**
 * One operand drawn as a 2-D array: its last two dimensions (a 1-D array is one row; leading
 * dimensions of a 3-D+ array are left out of the picture, `hidden` says how many).
 */
export interface Picture {
  operand: Operand;
  rows: number;
  cols: number;
  /** the block grid's lines: element offsets where a block starts, per picture axis */
  rowLines: number[];
  colLines: number[];
  /** the rectangles some instance touches, with who touches them */
  cells: Cell[];
  /** rectangles of blocks no instance touches (an output's: never written) */
  untouched: Cell[];
  hidden: number;
  /** the output blocks more than one instance writes (their cells' indices in `cells`) */
  revisited: Set<number>;
}

function drawnDims(ndim: number): [number | null, number | null] {
  if (ndim === 0) return [null, null];
  if (ndim === 1) return [null, 0];
  return [ndim - 2, ndim - 1];
}

function lines(extent: number, dim: Operand['block'][number] | undefined): number[] {
  if (!dim) return [];
  const step = dim.kind === 'blocked' ? dim.size : dim.kind === 'squeezed' ? 1 : 0;
  if (step <= 0) return [];
  const out: number[] = [];
  for (let s = step; s < extent; s += step) out.push(s);
  return out;
}

/** The picture of operand `k` of `call`. */
export function picture(call: CallFound, k: number): Picture {
  const operand = call.operands[k]!;
  const shape = operand.aval.shape;
  const [rd, cd] = drawnDims(shape.length);
  const rows = rd === null ? 1 : shape[rd]!;
  const cols = cd === null ? 1 : shape[cd]!;
  const byRect = new Map<string, Cell>();
  call.programs.forEach((p, i) => {
    const r = p.ranges[k]!;
    const [y0, y1] = rd === null ? [0, 1] : r[rd]!;
    const [x0, x1] = cd === null ? [0, 1] : r[cd]!;
    const key = `${y0},${y1},${x0},${x1}`;
    const cell = byRect.get(key);
    if (cell) cell.programs.push(i);
    else byRect.set(key, { x: x0!, y: y0!, w: x1! - x0!, h: y1! - y0!, programs: [i] });
  });
  const cells = [...byRect.values()];
  const rowLines = rd === null ? [] : lines(rows, operand.block[rd]);
  const colLines = cd === null ? [] : lines(cols, operand.block[cd]);
  const revisited = new Set<number>();
  if (operand.role === 'output') {
    cells.forEach((c, i) => {
      const blocks = new Set(c.programs.map((p) => JSON.stringify(call.programs[p]!.blocks[k])));
      if (c.programs.length > 1 && blocks.size === 1) revisited.add(i);
    });
  }
  return {
    operand,
    rows,
    cols,
    rowLines,
    colLines,
    cells,
    untouched: untouched(rows, cols, [0, ...rowLines], [0, ...colLines], cells),
    hidden: Math.max(shape.length - 2, 0),
    revisited,
  };
}

/** The block-grid tiles (starts `ys` x `xs`) that no touched cell overlaps. */
function untouched(rows: number, cols: number, ys: number[], xs: number[], cells: Cell[]): Cell[] {
  const out: Cell[] = [];
  ys.forEach((y, i) => {
    const h = (ys[i + 1] ?? rows) - y;
    xs.forEach((x, j) => {
      const w = (xs[j + 1] ?? cols) - x;
      const hit = cells.some((c) => c.w > 0 && c.h > 0 && c.x < x + w && x < c.x + c.w && c.y < y + h && y < c.y + c.h);
      if (!hit) out.push({ x, y, w, h, programs: [] });
    });
  });
  return out;
}

/** A cell's label: the instances touching it (`(0, 1)`; `(0, 1) +3` when more). */
export function cellLabel(call: CallFound, cell: Cell): string {
  const first = cell.programs[0];
  if (first === undefined) return '—';
  const text = pidText(call.programs[first]!.program_id);
  return cell.programs.length > 1 ? `${text} +${cell.programs.length - 1}` : text;
}

/** The grid as a two-way table: rows are all axes but the last, columns the last axis. */
export interface GridTable {
  /** the row labels: the leading axes' ids (`i=0`), empty for a 1-D grid */
  rowLabels: string[];
  /** the last axis's ids */
  colLabels: string[];
  /** `cells[r][c]`: the program's index in `call.programs`, or -1 when not sent */
  cells: number[][];
}

/** The grid table of `call` (a 0-d grid is one cell). */
export function gridTable(call: CallFound): GridTable {
  const grid = call.grid ?? [];
  const last = grid.length > 0 ? grid[grid.length - 1]! : 1;
  const lead = grid.slice(0, -1);
  const nRows = lead.reduce((a, b) => a * b, 1);
  const cells = Array.from({ length: nRows }, (_, r) => Array.from({ length: last }, (_, c) => r * last + c));
  const rowLabels = Array.from({ length: nRows }, (_, r) => {
    const ids: number[] = [];
    let rest = r;
    for (let a = lead.length - 1; a >= 0; a--) {
      ids.unshift(rest % lead[a]!);
      rest = Math.floor(rest / lead[a]!);
    }
    return ids.map((v, a) => `axis ${a} = ${v}`).join(', ');
  });
  return {
    rowLabels: lead.length > 0 ? rowLabels : [''],
    colLabels: Array.from({ length: last }, (_, c) => `${c}`),
    cells: cells.map((row) => row.map((i) => (i < call.programs.length ? i : -1))),
  };
}

/** The selected instance's rows: what it reads and writes, as slices of each operand. */
export interface AccessRow {
  operand: Operand;
  verb: 'reads' | 'writes';
  blocks: string;
  slice: string;
}

export function accesses(call: CallFound, program: number): AccessRow[] {
  const p = call.programs[program];
  if (!p) return [];
  return call.operands.map((op, k) => ({
    operand: op,
    verb: op.role === 'input' ? 'reads' : 'writes',
    blocks: pidText(p.blocks[k]!),
    slice: sliceText(operandName(op), p.ranges[k]!),
  }));
}

/** The comparison of one output as the view words it. */
export function verdict(o: OutputCompared['outputs'][number]): string {
  if (o.allclose === null) return 'no reference';
  if (o.allclose) return `allclose: max |f − reference| = ${o.max_abs_diff ?? 0}`;
  const diff = o.max_abs_diff === null ? 'NaN/Inf on one side' : `max |f − reference| = ${o.max_abs_diff}`;
  const where =
    o.first_diff_index !== null && o.first_diff_index !== undefined
      ? `; first at [${o.first_diff_index.join(', ')}]: ${o.first_diff_got} vs ${o.first_diff_want}`
      : '';
  return `not allclose: ${diff}${where}`;
}

/** Pixels per element of a picture: the array fits in 320 x 200 px, at most 28 px an element. */
export function pictureUnit(p: Picture): number {
  return Math.min(28, 320 / Math.max(p.cols, 1), 200 / Math.max(p.rows, 1));
}

/** The program a click on `cell` selects: the next of its instances after `current`. */
export function nextInCell(cell: Cell, current: number): number {
  const at = cell.programs.indexOf(current);
  return cell.programs[(at + 1) % cell.programs.length] ?? current;
}

/** Each call's Mosaic lowering (option `target` "tpu-v5e"), by the call's `index`. */
export function mosaicByCall(events: readonly Event[]): Map<number, MosaicLowered> {
  return new Map(eventsOf(events, 'pallas_mosaic_lowered').map((e) => [e.index, e]));
}

/** One operand of the Mosaic kernel as the view lists it. */
export interface WindowRow {
  /** the kernel's parameter (`x`) when the windows are the call's operands one for one, else `arg 2` */
  name: string;
  role: string;
  /** the block Mosaic copies per grid step: `(128, 512)`; `whole array` when left in place */
  block: string;
  memorySpace: string;
  memref: string;
}

/**
 * The Mosaic kernel's operands. Mosaic's order is scalar prefetch, inputs, outputs, scratch; when
 * there are as many windows as the call has operands (no prefetch, no scratch) they are the
 * operands in order, and are named so.
 */
export function windowRows(call: CallFound | undefined, low: MosaicLowered): WindowRow[] {
  const named = call !== undefined && call.operands.length === low.windows.length;
  return low.windows.map((w, i) => {
    const op = named ? call.operands[i] : undefined;
    return {
      name: op ? operandName(op) : `arg ${i}`,
      role: op ? op.role : '',
      block: w.block === null ? 'whole array' : w.block.length === 1 ? `(${w.block[0]},)` : `(${w.block.join(', ')})`,
      memorySpace: w.memory_space,
      memref: w.memref,
    };
  });
}

/** One op of the Mosaic kernel's body with what it links to. */
export interface OpRow {
  /** its position in the body */
  index: number;
  name: string;
  primitive: string | null;
  line: number | null;
  /**
   * the kernel jaxpr's eqns it was lowered from: those of its primitive on its line (an op's
   * location names only these two, so two `get`s on one line both stand for each of their ops)
   */
  eqns: number[];
  /** the line of the module text it is on (0-based), or -1 when not found */
  textLine: number;
}

/** The Mosaic kernel's ops, each linked to kernel jaxpr eqns and its line in the module text. */
export function opRows(call: CallFound | undefined, low: MosaicLowered): OpRow[] {
  const eqns = call?.kernel_jaxpr.eqns ?? [];
  const lines = low.mosaic.split('\n');
  // the kernel function's body: from its `func.func @<kernel>` to the next `func.func`
  const start = lines.findIndex((l) => low.kernel !== null && l.includes(`func.func @${low.kernel}(`));
  let at = start;
  return low.ops.map((op, index) => {
    const linked =
      op.primitive === null
        ? []
        : eqns.filter((e) => e.primitive === op.primitive && e.source?.line === op.line).map((e) => e.index);
    let textLine = -1;
    if (start >= 0) {
      const word = op.name === 'func.return' ? 'return' : op.name;
      const pattern = new RegExp(`^\\s+(?:%\\S+(?:, %\\S+)* = )?${word.replace('.', '\\.')}\\b`);
      for (let i = at + 1; i < lines.length && !lines[i]!.includes('func.func @'); i++) {
        if (pattern.test(lines[i]!)) {
          textLine = i;
          at = i;
          break;
        }
      }
    }
    return { index, name: op.name, primitive: op.primitive, line: op.line, eqns: linked, textLine };
  });
}

/** The ops (their indices) that stand for kernel eqn `eqn` or sit on user line `line`. */
export function opsOf(rows: readonly OpRow[], pick: { eqn?: number; line?: number }): Set<number> {
  return new Set(
    rows
      .filter((r) => (pick.eqn !== undefined && r.eqns.includes(pick.eqn)) || (pick.line !== undefined && r.line === pick.line))
      .map((r) => r.index),
  );
}

/** The Mosaic lowering's heading: `matmul_kernel, grid (2, 3), arbitrary × 2`. */
export function mosaicSummary(low: MosaicLowered): string {
  if (low.error !== null && low.error !== undefined) return `failed to ${low.error_stage === 'compile' ? 'compile' : 'lower'}`;
  const grid = low.grid.length === 0 ? 'no grid' : `grid (${low.grid.join(', ')})`;
  const sem = low.dimension_semantics.length > 0 ? `, ${low.dimension_semantics.join(', ')}` : '';
  return `${low.kernel ?? 'kernel'}: ${grid}${sem}`;
}
