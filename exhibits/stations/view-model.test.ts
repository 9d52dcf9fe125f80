import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadEvents, loadTruth } from '../../frontend/test-fixtures/load';
import { formatCount, humanBytes } from '../../frontend/src/widgets/format';
import { buildLinkMaps, highlightOf, selectEqn, selectHlo } from '../../frontend/src/widgets/linking';
import {
  costLabel,
  costRows,
  dispatchSentence,
  exactFigure,
  firstUserInstruction,
  hloTitle,
  linksLoading,
  memoryRows,
  opTitle,
  peakRows,
  peakSummary,
  pendingRangeIds,
  profileRows,
  profileSummary,
  stationStatuses,
  stationsModel,
  textLoadingNote,
  timeline,
  type StationsModel,
} from './view-model';
import { applyItemsSent, type ItemsSent } from '../../frontend/src/store/list-ranges';
import type { Event, ExecutableCompiled, ModuleLowered } from '../../frontend/src/protocol';
import type { ProgramProfiled } from '../../frontend/src/gen/protocol';
import { compiledForInfo } from '../../frontend/src/run-info';

interface Truth {
  cost: Record<string, number>;
  memory: Record<string, number>;
  outputs: { shape: number[]; dtype: string; sum: number }[];
}

const statusAt = (events: ReturnType<typeof loadEvents>, k: number): string =>
  stationStatuses(events.slice(0, k + 1))
    .map((s) => `${s.id}:${s.status}`)
    .join(' ');

describe('station progress over the event stream (stations-mlp)', () => {
  const events = loadEvents('stations-mlp');

  it('runs trace, lower, compile, run in turn, each done when its artefact arrives', () => {
    const at = (type: string, stage?: string): number =>
      events.findIndex((e) => e.type === type && (stage === undefined || ('stage' in e && e.stage === stage)));
    expect(statusAt(events, at('stage_started', 'trace'))).toBe('trace:running lower:pending compile:pending run:pending');
    expect(statusAt(events, at('jaxpr_staged'))).toBe('trace:done lower:pending compile:pending run:pending');
    expect(statusAt(events, at('stage_started', 'lower'))).toBe('trace:done lower:running compile:pending run:pending');
    expect(statusAt(events, at('stage_started', 'compile'))).toBe('trace:done lower:done compile:running run:pending');
    expect(statusAt(events, at('stage_started', 'run'))).toBe('trace:done lower:done compile:done run:running');
    expect(statusAt(events, events.length - 1)).toBe('trace:done lower:done compile:done run:done');
  });

  it("marks the station where the run failed (a tracer error while tracing)", () => {
    const failed = loadEvents('tracing-tracer-error');
    expect(statusAt(failed, failed.length - 1)).toBe('trace:failed lower:pending compile:pending run:pending');
  });

  it('says the Run station of a TPU v5e compile-only run was not run, and why', () => {
    // `jaxscope run stations frontend/test-fixtures/snippets/mlp_layer.py --target tpu-v5e --json`
    const tpu = loadEvents('stations-tpu-v5e');
    expect(statusAt(tpu, tpu.length - 1)).toBe('trace:done lower:done compile:done run:not_run');
    expect(stationStatuses(tpu).find((s) => s.id === 'run')?.note).toBe('compile only for TPU v5e');
    expect(compiledForInfo(tpu)).toBe('compiled for TPU v5e (v5e:2x2 topology, offline)');
    // A run for this machine: no note, and the header names no other target.
    expect(stationStatuses(events).every((s) => s.note === null)).toBe(true);
    expect(compiledForInfo(events)).toBeNull();
  });

  it('draws one bar per jax.monitoring duration, named as JAX names it', () => {
    const bars = timeline(events);
    expect(bars.map((b) => [b.stage, b.event])).toEqual([
      ['trace', '/jax/core/compile/jaxpr_trace_duration'],
      ['lower', '/jax/core/compile/jaxpr_to_mlir_module_duration'],
      ['compile', '/jax/core/compile/backend_compile_duration'],
    ]);
    expect(Math.max(...bars.map((b) => b.fraction))).toBe(1);
    for (const b of bars) expect(b.duration_ms).toBeGreaterThan(0);
  });
});

describe.each(['stations-mlp', 'stations-nested', 'stations-c24'])('the compiled and run stations of %s', (name) => {
  const model = stationsModel(loadEvents(name));
  const truth = loadTruth<Truth>(name);

  it("shows Compiled.cost_analysis() as XLA reports it", () => {
    expect(model.compiled?.cost).toEqual(truth.cost);
    const rows = costRows(model.compiled?.cost ?? null);
    expect(rows.map((r) => r.key).sort()).toEqual(Object.keys(truth.cost).sort());
    expect(rows[0]?.key).toBe('flops');
    expect(rows[0]?.value).toBe(`${formatCount(truth.cost['flops'] ?? NaN)} FLOPs`);
  });

  it('labels every cost key in words, with the number XLA gave and its unit', () => {
    const rows = costRows(model.compiled?.cost ?? null);
    for (const row of rows) {
      // no label keeps XLA's run-together syntax: these keys index whole operands (`{}`)
      expect(row.label).not.toMatch(/[{}]/);
      const v = truth.cost[row.key] ?? NaN;
      // the digits are XLA's, all of them (grouped), then the unit
      expect(row.value.split(' ')[0]?.replace(/,/g, '')).toBe(String(v));
      if (row.key.startsWith('bytes accessed')) expect(row.value).toMatch(/^[\d,]+ B( \(.+\))?$/);
    }
    expect(rows.find((r) => r.key === 'bytes accessedout{}')?.label).toBe('bytes accessed, output');
  });

  it('shows memory_analysis() in human bytes', () => {
    expect(model.compiled?.memory).toMatchObject(truth.memory);
    const rows = memoryRows(model.compiled?.memory ?? null);
    const arg = rows.find((r) => r.key === 'argument_size_in_bytes');
    expect(arg?.value).toBe(humanBytes(truth.memory['argument_size_in_bytes'] ?? -1));
    expect(arg?.label).toBe('argument size');
  });

  it('previews outputs with the shape, dtype and values JAX computes', () => {
    const outputs = model.executed?.outputs ?? [];
    expect(outputs.map((o) => [o.shape, o.dtype])).toEqual(truth.outputs.map((o) => [o.shape, o.dtype]));
    const first = outputs[0];
    const t = truth.outputs[0];
    if (first && t && first.shape.length === 0) expect(Number(first.preview)).toBeCloseTo(t.sum, 4);
  });
});

describe('figures for people', () => {
  it('names per-operand cost keys', () => {
    expect(costLabel('bytes accessed0{}')).toBe('bytes accessed, operand 0');
    expect(costLabel('bytes accessedout{}')).toBe('bytes accessed, output');
    expect(costLabel('utilization2{}')).toBe('utilization, operand 2');
    // a tuple operand's element, and the spelled-out form of the same keys
    expect(costLabel('bytes accessed1{0}')).toBe('bytes accessed, operand 1, tuple element {0}');
    expect(costLabel('bytes accessed operand 3 {}')).toBe('bytes accessed, operand 3');
    expect(costLabel('bytes accessed output {1,0}')).toBe('bytes accessed, output, tuple element {1,0}');
    expect(costLabel('flops')).toBe('floating-point operations');
    expect(costLabel('optimal_seconds')).toBe("optimal seconds (XLA's estimate)");
    expect(costLabel('some new key')).toBe('some new key');
  });

  it("keeps XLA's numbers exact, with units where the cost model has them", () => {
    const rows = costRows({
      optimal_seconds: 1.5e-7,
      'utilization0{}': 1 / 3,
      flops: 8e9,
      'bytes accessed': 32e6,
      'bytes accessedout{}': 132,
      transcendentals: 4e6,
    });
    expect(rows.map((r) => [r.key, r.value])).toEqual([
      ['flops', '8,000,000,000 FLOPs'],
      ['transcendentals', '4,000,000'],
      ['bytes accessed', '32,000,000 B (30.5 MiB)'],
      ['bytes accessedout{}', '132 B'],
      ['optimal_seconds', '1.5e-7 s'],
      ['utilization0{}', '0.3333333333333333'],
    ]);
    // past 2**53 the shortest digits that read back as the same double, as Python's repr
    expect(exactFigure(2 ** 60)).toBe('1,152,921,504,606,847,000');
    expect(Number(exactFigure(2 ** 60).replace(/,/g, ''))).toBe(2 ** 60);
  });

  it('says "not reported" for -1 and missing figures', () => {
    const rows = costRows({ flops: -1, transcendentals: undefined, 'bytes accessed': 12 });
    expect(rows.map((r) => [r.key, r.value, r.reported])).toEqual([
      ['flops', 'not reported', false],
      ['transcendentals', 'not reported', false],
      ['bytes accessed', '12 B', true],
    ]);
  });

  it('explains async dispatch with the measured ratio', () => {
    const run = stationsModel(loadEvents('stations-c24')).executed;
    expect(run).toBeDefined();
    if (run) {
      const s = dispatchSentence(run);
      expect(s).toContain('block_until_ready');
      expect(s).toContain(`${(run.blocked_ms / run.dispatch_ms).toFixed(1)}×`);
    }
  });
});

describe('C24: a jitted chain of four matmuls', () => {
  const expected = JSON.parse(
    readFileSync(`${__dirname}/../../frontend/test-fixtures/cases/C24_async_dispatch.expect.json`, 'utf8'),
  ) as { jaxpr: string; stations: string[]; lowered_op_counts: Record<string, number>; out_shape: number[] };
  const model = stationsModel(loadEvents('stations-c24'));

  it('shows the four stations, the jaxpr, the lowered ops and the output the case records', () => {
    expect(model.stations.map((s) => [s.id, s.status])).toEqual(expected.stations.map((id) => [id, 'done']));
    expect(model.traced?.jaxpr.text).toBe(expected.jaxpr);
    const lines = (model.lowered?.stablehlo ?? '').split('\n');
    for (const [op, n] of Object.entries(expected.lowered_op_counts)) {
      expect(lines.filter((l) => l.includes(`stablehlo.${op} `)).length).toBe(n);
    }
    expect(model.executed?.outputs[0]?.shape).toEqual(expected.out_shape);
  });
});

/** The instruction lines of computation `%name` in an HLO module's text (header `... {`, body up to `}`). */
function computationLines(lines: readonly string[], name: string): string[] {
  const start = lines.findIndex((l) => (l.startsWith(`%${name} `) || l.startsWith(`ENTRY %${name} `)) && l.endsWith('{'));
  expect(start).toBeGreaterThanOrEqual(0);
  return lines.slice(start + 1, lines.indexOf('}', start));
}

/** Whether instruction line `n` is `opcode` itself, or a fusion whose computation holds one. */
function isOrFuses(lines: readonly string[], n: number, opcode: string): boolean {
  const line = lines[n] ?? '';
  if (line.includes(` ${opcode}(`)) return true;
  const called = / fusion\(.*\bcalls=%([^\s,}]+)/.exec(line)?.[1];
  return called !== undefined && computationLines(lines, called).some((l) => l.includes(` ${opcode}(`));
}

describe('the optimized HLO linked to eqns and source (stations-mlp: tanh(x @ w) on line 4, sum(h * h) on line 5)', () => {
  const model = stationsModel(loadEvents('stations-mlp'));
  const eqns = model.traced?.jaxpr.eqns ?? [];
  const compiled = model.compiled;
  const lines = (compiled?.compiled_text ?? '').split('\n');
  const maps = buildLinkMaps(eqns, model.lowered?.op_links ?? [], compiled?.hlo_links ?? []);
  const tanh = eqns.findIndex((e) => e.primitive === 'tanh');
  const tanhLines = lines.flatMap((l, n) => (l.includes(' tanh(') ? [n] : []));

  it('selecting the tanh eqn highlights every tanh instruction and the fusions holding one, nothing else', () => {
    expect(tanh).toBeGreaterThanOrEqual(0);
    expect(tanhLines.length).toBeGreaterThan(0);
    const h = highlightOf(maps, selectEqn(maps, tanh));
    for (const n of tanhLines) expect(h.hloLines.has(n)).toBe(true);
    for (const n of h.hloLines) expect(isOrFuses(lines, n, 'tanh')).toBe(true);
    expect([...h.hloLines].some((n) => lines[n]?.includes(' fusion('))).toBe(true);
  });

  it('clicking a tanh instruction selects its eqn and line 4, and lights up only itself here', () => {
    const n = tanhLines[0] ?? -1;
    const sel = selectHlo(maps, n);
    expect(sel).toEqual({ origin: 'hlo', lines: [4], eqnIndices: [tanh], opLines: [], hloLines: [n] });
    const h = highlightOf(maps, sel);
    expect([...h.eqns]).toEqual([tanh]);
    expect([...h.hloLines]).toEqual([n]);
    // ...and the StableHLO ops lowered from the same eqn.
    const stablehlo = (model.lowered?.stablehlo ?? '').split('\n');
    expect(h.opLines.size).toBeGreaterThan(0);
    for (const op of h.opLines) expect(stablehlo[op]).toContain('stablehlo.tanh');
    expect(hloTitle(maps.hloLink.get(n)!)).toBe(`tanh · jit(f)/tanh · line 4 · eqn ${tanh}`);
  });

  it("titles each StableHLO op with its op, name stack, line and eqn (tanh: line 4)", () => {
    const stablehlo = (model.lowered?.stablehlo ?? '').split('\n');
    const at = stablehlo.findIndex((l) => l.includes('= stablehlo.tanh '));
    const link = maps.opLink.get(at);
    expect(link).toBeDefined();
    expect(opTitle(link!)).toBe(`stablehlo.tanh · jit(f)/tanh · line 4 · eqn ${tanh}`);
  });

  it('an editor selection of line 5 lights up its instructions, not those of line 4', () => {
    const h = highlightOf(maps, { origin: 'editor', lines: [5], eqnIndices: [], opLines: [] });
    const texts = [...h.hloLines].map((n) => lines[n] ?? '');
    expect(texts.some((t) => t.includes(' multiply('))).toBe(true);
    expect(texts.some((t) => t.includes(' reduce('))).toBe(true);
    for (const n of tanhLines) expect(h.hloLines.has(n)).toBe(false);
  });

  it("opens on the first instruction from the user's code, below the stack frame tables", () => {
    const start = firstUserInstruction(compiled);
    expect(start).toBeDefined();
    const first = start ?? -1;
    expect(first).toBeGreaterThan(lines.indexOf('StackFrames'));
    expect(lines[first]).toMatch(/^\s+(ROOT )?%\S+ = .*metadata=\{op_name="jit\(f\)\/[^"]*" stack_frame_id=\d+\}/);
    // No instruction above it names a snippet line.
    for (const link of compiled?.hlo_links ?? []) if (link.line < first) expect(link.source).toBeNull();
    expect(firstUserInstruction(undefined)).toBeUndefined();
  });
});

describe('a Lowered station whose texts and links come in list ranges (design 0045)', () => {
  const whole = stationsModel(loadEvents('stations-mlp')).lowered;
  if (whole === undefined) throw new Error('the fixture has a module_lowered');
  // Cut as the backend's split_lists does: the first lines, then ranges cut after a newline
  // (one item an answer), and the op links after their first items.
  const text = whole.stablehlo;
  const cut1 = text.indexOf('\n', Math.floor(text.length / 3)) + 1;
  const cut2 = text.indexOf('\n', Math.floor((2 * text.length) / 3)) + 1;
  const linkCut = Math.max(1, Math.floor(whole.op_links.length / 2));
  const ranges = [
    { field: 'stablehlo', start: cut1, stop: cut2, detail_id: 'r0' },
    { field: 'stablehlo', start: cut2, stop: text.length, detail_id: 'r1' },
    { field: 'op_links', start: linkCut, stop: whole.op_links.length, detail_id: 'r2' },
  ];
  const cut: ModuleLowered = {
    ...whole,
    stablehlo: text.slice(0, cut1),
    op_links: whole.op_links.slice(0, linkCut),
    list_ranges: ranges,
  };
  const answer = (path: string, start: number, items: unknown[], id: string): ItemsSent => ({
    type: 'items_sent',
    run_id: whole.run_id,
    seq: whole.seq,
    path,
    start,
    items,
    detail_of: id,
  });
  const answers = [
    answer('stablehlo', cut1, [text.slice(cut1, cut2)], 'r0'),
    answer('stablehlo', cut2, [text.slice(cut2)], 'r1'),
    answer('op_links', linkCut, whole.op_links.slice(linkCut), 'r2'),
  ] as const;
  const apply = (event: ModuleLowered, sent: ItemsSent): ModuleLowered => {
    const next = applyItemsSent(event, sent);
    if (next === null || next.type !== 'module_lowered') throw new Error(`not applied: ${sent.detail_of}`);
    return next;
  };
  const model = (event: ModuleLowered): StationsModel => ({ ...stationsModel([]), lowered: event });

  it('says how much of the StableHLO it has, asks for the next range of each field, and is the whole event once merged', () => {
    expect(cut1).toBeGreaterThan(0);
    expect(cut2).toBeGreaterThan(cut1);
    expect(text.length).toBeGreaterThan(cut2);
    expect(textLoadingNote(cut, 'stablehlo')).toBe(
      `loading the rest of the StableHLO: ${formatCount(cut1)} of ${formatCount(text.length)} characters`,
    );
    expect(textLoadingNote(cut, 'hlo')).toBeNull(); // never cut
    expect(linksLoading(cut, 'op_links')).toBe(true);
    expect(pendingRangeIds(model(cut))).toEqual(['r0', 'r2']); // one at a time per field

    const one = apply(cut, answers[0]);
    expect(textLoadingNote(one, 'stablehlo')).toBe(
      `loading the rest of the StableHLO: ${formatCount(cut2)} of ${formatCount(text.length)} characters`,
    );
    expect(pendingRangeIds(model(one))).toEqual(['r1', 'r2']);
    // the links of the lines loaded work: each loaded op link points at a line the page has
    const lines = one.stablehlo.split('\n').length;
    for (const link of one.op_links) expect(link.line).toBeLessThan(lines);
    expect(buildLinkMaps([], one.op_links, []).opLink.size).toBe(new Set(one.op_links.map((l) => l.line)).size);

    const all = apply(apply(one, answers[1]), answers[2]);
    expect(textLoadingNote(all, 'stablehlo')).toBeNull();
    expect(linksLoading(all, 'op_links')).toBe(false);
    expect(pendingRangeIds(model(all))).toEqual([]);
    expect(all).toEqual(whole);
  });

  it('refuses an answer that is not the next range of its field', () => {
    expect(applyItemsSent(cut, answers[1])).toBeNull();
  });
});

describe("the accelerator's profile and memory peak (design 0073), from the TPU v5e recording", () => {
  // `bench/tpu_profile.py` on the lent TPU v5e: stations' default example run on the chip
  const recorded = readFileSync(`${__dirname}/../../recordings/tpu-v5e/stations.events.jsonl`, 'utf8')
    .split('\n')
    .filter((line) => line.trim())
    .map((line) => JSON.parse(line) as Event);
  const raw = recorded.find((e) => e.type === 'program_profiled') as ProgramProfiled;
  const compiled = recorded.find((e) => e.type === 'executable_compiled') as ExecutableCompiled;

  it('tables the slowest instructions first, in microseconds per call, linked to their HLO line', () => {
    const model = stationsModel(recorded);
    expect(model.profiled).toBe(raw);
    const rows = profileRows(raw, 3);
    expect(rows.map((r) => r.instruction)).toEqual(raw.instructions.slice(0, 3).map((r) => r.instruction));
    const top = raw.instructions[0];
    if (!top || !rows[0]) throw new Error('the recording profiled instructions');
    const summed = top.durations_ns.reduce((a, b) => a + b, 0) / raw.calls;
    expect(rows[0].measuredUs).toBe((summed / 1e3).toFixed(2));
    expect(rows[0].line).toBe(top.line);
    expect(compiled.compiled_text.split('\n')[top.line ?? -1]).toContain(`%${top.instruction} = `);
  });

  it('says the step on the device and the share the instructions fill', () => {
    const sorted = [...raw.runs_ns].sort((a, b) => a - b);
    const median = sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
    const text = profileSummary(raw);
    expect(text).toContain(`${(median / 1e3).toFixed(2)} µs on the device`);
    expect(text).toContain(`${((raw.ops_ns / median) * 100).toFixed(1)}% of the step`);
    expect(text).toContain('197 TFLOP/s and 819 GB/s');
  });

  it('lists the buffers live at the memory peak, largest first, by memory space', () => {
    const peak = compiled.memory_peak;
    if (!peak) throw new Error('the TPU compile carries its memory peak');
    const rows = peakRows(peak);
    expect(rows.length).toBe(Math.min(20, peak.buffers.length));
    expect(rows[0]?.bytes).toBe(humanBytes(Math.max(...peak.buffers.map((b) => b.bytes))));
    expect(peakSummary(peak)).toContain(`HBM ${humanBytes(peak.peak_by_space.default ?? 0)}`);
  });
});
