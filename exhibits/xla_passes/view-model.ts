/**
 * The xla_passes exhibit's view model: the `hlo_pass_ran` snapshots as the stops of a slider
 * (the passes that changed the module, or every pass), the pass shown and where its text comes
 * from (details on demand: a summary carries no text), its diff as lines, and the fusions and
 * LLVM IR kernels of `xla_dump_read`/`llvm_ir_dumped`. Pure functions of the events, tested on
 * the golden event streams (`view-model.test.ts`); the view only lays them out.
 */
import type { Event, EventOf } from '../../frontend/src/protocol';
import { eventsOf } from '../../frontend/src/widgets/events';

export type HloPassRan = EventOf<'hlo_pass_ran'>;
export type XlaDumpRead = EventOf<'xla_dump_read'>;
export type LlvmIrDumped = EventOf<'llvm_ir_dumped'>;

/** Every snapshot received, in the dump's order (summaries included). */
export function passes(events: readonly Event[]): HloPassRan[] {
  return eventsOf(events, 'hlo_pass_ran');
}

/** The dump's totals, fusions and check (the run's last exhibit event), or null before it. */
export function dumpRead(events: readonly Event[]): XlaDumpRead | null {
  return eventsOf(events, 'xla_dump_read')[0] ?? null;
}

export function kernels(events: readonly Event[]): LlvmIrDumped[] {
  return eventsOf(events, 'llvm_ir_dumped');
}

/**
 * The snapshots the slider stops at: those whose text changed (and the first, which shows the
 * module as the passes found it), or every one when `all`.
 */
export function stops(all: readonly HloPassRan[], every: boolean): HloPassRan[] {
  return every ? [...all] : all.filter((p) => p.changed || p.index === 0);
}

/**
 * Whether a pass added, removed or rewrote an instruction. A changed text need not: the
 * scheduling pipeline's `pipeline-start` only adds `is_scheduled=true` to the header and
 * reorders lines ("+0 −0").
 */
export function changedInstructions(p: HloPassRan): boolean {
  return p.appeared_count + p.vanished_count + p.rewritten_count > 0;
}

/**
 * The pass shown: the one picked, else the last of `stopsShown` the stepper's cursor reached that
 * added, removed or rewrote an instruction (an unchanged pass, or one that only reordered the
 * text, is not worth opening on), else the last such stop, else the last reached.
 */
export function shownPass(
  all: readonly HloPassRan[],
  reached: readonly Event[],
  picked: number | null,
  stopsShown: readonly HloPassRan[] = all,
): HloPassRan | null {
  if (picked !== null && all[picked]) return all[picked];
  const upTo = passes(reached);
  const last = upTo[upTo.length - 1];
  if (!last) return null;
  const reachedStops = stopsShown.filter((p) => p.index <= last.index);
  return reachedStops.filter(changedInstructions).pop() ?? reachedStops.pop() ?? last;
}

/**
 * A name cut into pieces after each `_` and `.` (`wrapped_broadcast.1` -> `wrapped_`,
 * `broadcast.`, `1`): the view puts a line break opportunity (`<wbr>`) between pieces, so a
 * long name wraps at its own boundaries and never mid-word.
 */
export function nameBreaks(name: string): string[] {
  return name.split(/(?<=[_.])/);
}

/**
 * The snapshot whose whole event holds the text after `pass`: the pass itself when it changed the
 * module (or is the first), else the last such snapshot before it (an unchanged pass leaves the
 * text as it was).
 */
export function textSource(all: readonly HloPassRan[], pass: HloPassRan): HloPassRan {
  for (let i = pass.index; i >= 0; i--) {
    const p = all[i];
    if (p && (p.changed || p.index === 0)) return p;
  }
  return pass;
}

/** `pipeline-start` is the snapshot a pipeline takes before its first pass. */
export function passLabel(p: HloPassRan): string {
  const run = p.occurrence > 1 ? ` #${p.occurrence}` : '';
  return `${p.pass_name}${run}`;
}

/** The CLI's name of a snapshot (`--print pass:NAME#k`). */
export function cliName(p: HloPassRan): string {
  return p.occurrence > 1 ? `${p.pass_name}#${p.occurrence}` : p.pass_name;
}

/** "+3 −14 ~2": the instructions the pass added, removed and rewrote. */
export function changeCounts(p: HloPassRan): string {
  if (!p.changed) return 'unchanged';
  const parts = [`+${p.appeared_count}`, `−${p.vanished_count}`];
  if (p.rewritten_count) parts.push(`~${p.rewritten_count}`);
  return parts.join(' ');
}

export type DiffKind = 'add' | 'del' | 'hunk' | 'context';

/** The kind of each line of a pass's unified diff. */
export function diffKinds(lines: readonly string[]): DiffKind[] {
  return lines.map((l) => (l.startsWith('@@') ? 'hunk' : l.startsWith('+') ? 'add' : l.startsWith('-') ? 'del' : 'context'));
}

/** An instruction a pass's diff names: its name (without `%`) and opcode. */
export interface DiffInstruction {
  name: string;
  opcode: string;
}

/** `%name = <shape> opcode(`: an instruction's line (the shape may hold spaces and parentheses). */
const INSTRUCTION = /^\s+(?:ROOT\s+)?%([\w.-]+)\s+=\s+.*?\s([a-z][\w-]*)\(/;

/**
 * The instructions a pass's unified diff adds and removes, by name: `appeared` (only on `+`
 * lines), `vanished` (only on `-` lines), `rewritten` (on both, with another line). An HLO
 * instruction's name is unique in its module, so these are the instructions the pass created,
 * deleted and changed (the event's counts, checked against difflib in the pytest).
 */
export function diffInstructions(lines: readonly string[]): {
  appeared: DiffInstruction[];
  vanished: DiffInstruction[];
  rewritten: DiffInstruction[];
} {
  const side = (mark: string): Map<string, { opcode: string; line: string }> => {
    const out = new Map<string, { opcode: string; line: string }>();
    for (const l of lines) {
      if (!l.startsWith(mark) || l.startsWith(mark.repeat(3))) continue;
      const m = INSTRUCTION.exec(l.slice(1));
      if (m) out.set(m[1] ?? '', { opcode: m[2] ?? '', line: l.slice(1).trim() });
    }
    return out;
  };
  const plus = side('+');
  const minus = side('-');
  const pick = (from: Map<string, { opcode: string }>, keep: (name: string) => boolean): DiffInstruction[] =>
    [...from].filter(([name]) => keep(name)).map(([name, v]) => ({ name, opcode: v.opcode }));
  return {
    appeared: pick(plus, (n) => !minus.has(n)),
    vanished: pick(minus, (n) => !plus.has(n)),
    rewritten: pick(plus, (n) => minus.has(n) && minus.get(n)?.line !== plus.get(n)?.line),
  };
}

/** The 0-based lines of `text` that define the given instruction names (`%name = ...`). */
export function instructionLines(text: string, names: ReadonlySet<string>): Set<number> {
  const out = new Set<number>();
  text.split('\n').forEach((line, n) => {
    const m = /^\s+(?:ROOT\s+)?%([\w.-]+)\s+=/.exec(line);
    if (m && names.has(m[1] ?? '')) out.add(n);
  });
  return out;
}

/** The pipelines in the order they first ran, with how many of their snapshots changed the text. */
export function pipelines(all: readonly HloPassRan[]): { name: string; passes: number; changed: number }[] {
  const out = new Map<string, { name: string; passes: number; changed: number }>();
  for (const p of all) {
    const row = out.get(p.pipeline) ?? { name: p.pipeline, passes: 0, changed: 0 };
    row.passes += 1;
    if (p.changed) row.changed += 1;
    out.set(p.pipeline, row);
  }
  return [...out.values()];
}

/** Sizes as the page shows them: 812 B, 14.3 KiB, 2.1 MiB. */
export function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

/** The file name a snippet is compiled under (`jaxscope.snippet_model.SNIPPET_FILENAME`). */
export const SNIPPET_FILE = '<snippet>';

/**
 * The user's line of each stack frame of an HLO module text, read from the tables XLA prints
 * after the module's header (`FileNames`, `FileLocations`, `StackFrames`): frame id -> line,
 * for the frames whose own location is in the snippet (JAX records the user's frames, so an op
 * made inside `jax.nn.softmax` has the frame of the snippet line that called it).
 */
export function frameLines(text: string, snippetFile = SNIPPET_FILE): Map<number, number> {
  const files = new Map<number, string>();
  const locations = new Map<number, { file: number; line: number }>();
  const out = new Map<number, number>();
  let table = '';
  for (const line of text.split('\n')) {
    if (line === 'FileNames' || line === 'FunctionNames' || line === 'FileLocations' || line === 'StackFrames') {
      table = line;
      continue;
    }
    if (line.startsWith('%') || line.startsWith('ENTRY')) break;
    let m: RegExpExecArray | null;
    if (table === 'FileNames' && (m = /^(\d+) "(.*)"$/.exec(line))) files.set(Number(m[1]), m[2] ?? '');
    else if (table === 'FileLocations' && (m = /^(\d+) \{file_name_id=(\d+) .*?\bline=(\d+)/.exec(line)))
      locations.set(Number(m[1]), { file: Number(m[2]), line: Number(m[3]) });
    else if (table === 'StackFrames' && (m = /^(\d+) \{file_location_id=(\d+)/.exec(line))) {
      const at = locations.get(Number(m[2]));
      if (at && files.get(at.file) === snippetFile) out.set(Number(m[1]), at.line);
    }
  }
  return out;
}

/** The snippet line of each line of an HLO module text whose instruction has a stack frame in the
 * snippet (0-based text line -> 1-based snippet line). */
export function sourceLines(text: string): Map<number, number> {
  const frames = frameLines(text);
  const out = new Map<number, number>();
  text.split('\n').forEach((line, n) => {
    const m = /\bstack_frame_id=(\d+)/.exec(line);
    const source = m ? frames.get(Number(m[1])) : undefined;
    if (source !== undefined && /^\s+(?:ROOT\s+)?%/.test(line)) out.set(n, source);
  });
  return out;
}
