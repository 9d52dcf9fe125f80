import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { Event } from '../../frontend/src/protocol';
import { applyItemsSent, listsPending, type ItemsSent } from '../../frontend/src/store/list-ranges';
import { splitList } from '../../frontend/src/test/list-ranges';
import { runFinished } from '../../frontend/src/test/events';
import { applyEvents, startRun } from '../../frontend/src/store/reducer';
import { RunSession, unresolvedDetails } from '../../frontend/src/store/session.svelte';
import {
  defaultKnown,
  eqnsOnLines,
  gradCheck,
  inputRows,
  isDefault,
  nextSort,
  notMeasured,
  partialEvalModel,
  relativeTo,
  rematEmptyMessage,
  rematNote,
  residualBytes,
  residualCount,
  residualLinks,
  residualsLoading,
  savedExtra,
  savedParts,
  sortRows,
  splitAccounting,
  splitSentence,
  toggled,
  FLOAT0_TANGENT_NOTE,
  type JaxprSplit,
  type ResidualView,
} from './view-model';

const dir = fileURLToPath(new URL('.', import.meta.url));

/** Events captured from the real probe by `fixtures/capture.py`. */
function load(name: string): Event[] {
  return readFileSync(`${dir}fixtures/${name}.jsonl`, 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as Event);
}

/** JAX's own text of the golden file (computed from plain JAX by `golden/regen.py`). */
const golden = JSON.parse(readFileSync(`${dir}golden/sin_times_x.json`, 'utf8')) as {
  known_jaxpr: string;
  unknown_jaxpr: string;
};

function splitOf(events: readonly Event[]): JaxprSplit {
  const s = partialEvalModel(events).split;
  if (s === undefined) throw new Error('no split');
  return s;
}

describe('eqn counts that do not add up (real probe events)', () => {
  it('mlp_loss: the two jit eqns of jnp helpers are split, one part on each side', () => {
    const split = splitOf(load('mlp_loss'));
    const [k, u, j] = [split.known.eqns.length, split.unknown.eqns.length, split.jvp.eqns.length];
    expect([k, u, j]).toEqual([15, 16, 29]);
    expect(split.split_calls.map((i) => split.jvp.eqns[i]?.params['name'])).toEqual(['log_softmax', 'take_along_axis']);
    expect(k + u).toBe(j + split.split_calls.length - split.dropped);
    // each split call has an eqn of the same name in both jaxprs
    for (const i of split.split_calls) {
      const name = split.jvp.eqns[i]?.params['name'];
      for (const side of [split.known, split.unknown])
        expect(side.eqns.filter((e) => e.primitive === 'jit' && e.params['name'] === name)).toHaveLength(1);
    }
    expect(splitAccounting(split)).toBe(
      '15 + 16 = 31, not 29: 2 jit eqns (log_softmax, take_along_axis) are split by JAX\'s partial evaluator: ' +
        'part of each runs on each side.',
    );
    expect(splitSentence(split)).toContain('9 residuals cross between them. 15 + 16 = 31, not 29: 2 jit eqns');
  });

  it('attention: unknown eqns nothing reads are dropped', () => {
    const split = splitOf(load('attention'));
    expect([split.known.eqns.length, split.unknown.eqns.length, split.jvp.eqns.length]).toEqual([41, 36, 82]);
    expect(split.split_calls).toEqual([]);
    expect(splitAccounting(split)).toBe(
      '41 + 36 = 77, not 82: 5 unknown eqns are dropped: no output needs their results.',
    );
  });

  it('counts that add up get no explanation', () => {
    const split = splitOf(load('sin_times_x'));
    expect(splitAccounting(split)).toBeNull();
    expect(splitAccounting({ ...split, dropped: -1 })).toContain("JAX's partial-eval rules add 1 eqn");
  });

  it('mlp_loss: the integer input args[2] has a float0 tangent, a symbolic zero with no toggle', () => {
    const rows = inputRows(splitOf(load('mlp_loss')));
    expect(rows.map((r) => [r.label, r.tangentFloat0])).toEqual([
      ["args[0]['b1']", false],
      ["args[0]['b2']", false],
      ["args[0]['w1']", false],
      ["args[0]['w2']", false],
      ['args[1]', false],
      ['args[2]', true],
    ]);
    expect(rows[5]?.tangentAval).toBe('float0[5]');
    expect(FLOAT0_TANGENT_NOTE).toContain('symbolic zero');
  });
});

describe('the split of f(x) = sum((sin(x) * x) ** 2)', () => {
  const events = load('sin_times_x');
  const split = splitOf(events);

  it('is the golden split', () => {
    expect(split.known.text).toBe(golden.known_jaxpr);
    expect(split.unknown.text).toBe(golden.unknown_jaxpr);
  });

  it('links each residual to the known eqn that writes it and the unknown eqns that read it', () => {
    const links = residualLinks(split);
    expect(links.map((l) => `${l.knownVar}->${l.unknownVar}`)).toEqual(['c->a', 'a->b', 'b->c', 'f->d']);
    // each producer's eqn text starts by defining the residual, as JAX prints it
    for (const l of links) {
      for (const p of l.producers) expect(split.known.eqns[p]?.text.startsWith(`${l.knownVar}:`)).toBe(true);
      for (const c of l.consumers) expect(split.unknown.eqns[c]?.invars.map((v) => v.name)).toContain(l.unknownVar);
    }
    // the argument x is forwarded as is: no known eqn produces it
    expect(links[1]?.producers).toEqual([]);
    expect(split.residuals[1]?.description).toBe('the argument primal args[0]');
    // every producer is the known_eqn the probe reports
    links.forEach((l, i) => {
      const k = split.residuals[i]?.known_eqn;
      expect(l.producers).toEqual(k == null ? [] : [k]);
    });
    expect(links.every((l) => l.consumers.length > 0)).toBe(true);
  });

  it('sums bytes and sums up the split in a sentence', () => {
    expect(residualBytes(split)).toBe(4 * 3 * 4);
    expect(splitSentence(split)).toBe(
      `1 of 2 inputs known: ${split.known.eqns.length} of the JVP's ${split.jvp.eqns.length} eqns run in the known ` +
        `jaxpr, ${split.unknown.eqns.length} in the unknown one; 1 of 2 outputs unknown; 4 residuals cross between them.`,
    );
  });

  it('gives one input row per argument leaf and toggles one flag', () => {
    const rows = inputRows(split);
    expect(rows).toEqual([
      {
        label: 'args[0]',
        primalAval: 'f32[3]',
        tangentAval: 'f32[3]',
        tangentFloat0: false,
        primal: 0,
        tangent: 1,
        primalKnown: true,
        tangentKnown: false,
      },
    ]);
    expect(isDefault(split)).toBe(true);
    expect(defaultKnown(split)).toEqual([true, false]);
    expect(toggled(split.known_inputs, 1)).toEqual([true, true]);
  });

  it('maps editor lines to the eqns of either jaxpr', () => {
    const line9 = eqnsOnLines(split.known, [9]);
    expect([...line9].map((i) => split.known.eqns[i]?.primitive).sort()).toEqual(['cos', 'mul', 'sin']);
    expect(eqnsOnLines(split.unknown, []).size).toBe(0);
  });
});

describe('everything known', () => {
  const split = splitOf(load('sin_times_x_all_known'));
  it('leaves nothing unknown and no residuals', () => {
    expect(split.known_inputs).toEqual([true, true]);
    expect(isDefault(split)).toBe(false);
    expect(split.residuals).toEqual([]);
    expect(split.unknown.eqns).toEqual([]);
    expect(split.out_unknowns).toEqual([false, false]);
    expect(residualLinks(split)).toEqual([]);
  });
});

describe('the saved cell: computed residuals, then the primal inputs (design 0084)', () => {
  interface Golden {
    saved_counts: Record<string, number>;
    saved_inputs: Record<string, number>;
  }
  for (const name of ['mlp_loss', 'sin_times_x', 'remat_layers']) {
    it(`splits ${name}'s rows as the vjp jaxpr does (golden/regen.py: residuals that are inputs)`, () => {
      const want = JSON.parse(readFileSync(`${dir}golden/${name}.json`, 'utf8')) as Golden;
      const rows = partialEvalModel(load(name)).remat;
      for (const [policy, inputs] of Object.entries(want.saved_inputs)) {
        const row = rows.find((r) => r.policy === policy);
        expect(row, policy).toBeDefined();
        const parts = savedParts(row!);
        expect(parts.inputs, policy).toBe(inputs);
        expect(parts.computed + parts.inputs + parts.constants, policy).toBe(want.saved_counts[policy]);
      }
      // nothing_saveable saves no computed value: only the inputs, which the backward pass reruns f from
      const nothing = savedParts(rows.find((r) => r.policy === 'nothing_saveable')!);
      expect(nothing.computed).toBe(0);
      const n = want.saved_inputs['nothing_saveable']!;
      expect(savedExtra(nothing)).toBe(`+ ${n} input${n === 1 ? '' : 's'}`);
    });
  }

  it('words inputs and constants, and nothing when there are none', () => {
    expect(savedExtra({ computed: 3, inputs: 0, constants: 0 })).toBe('');
    expect(savedExtra({ computed: 0, inputs: 1, constants: 2 })).toBe('+ 1 input, 2 constants');
    const aval = { shape: [], dtype: 'f32', short: 'f32[]' } as unknown as ResidualView['aval'];
    const of = (description: string): ResidualView => ({ aval, description, bytes: 4, source: null, known_eqn: null });
    expect(savedParts({ saved: [of('from a constant'), of('from a literal'), of("named 'a' from <snippet>:3:4 (f)"), of('from the argument x')] })).toEqual({
      computed: 1,
      inputs: 1,
      constants: 2,
    });
  });
});

describe('the remat table (remat_layers)', () => {
  const events = load('remat_layers');
  const rows = partialEvalModel(events).remat;

  it('streams one row per policy, walkable with the stepper', () => {
    const splitAt = events.findIndex((e) => e.type === 'jaxpr_split');
    const firstRow = events.findIndex((e) => e.type === 'remat_policy_measured');
    expect(splitAt).toBeLessThan(firstRow);
    expect(partialEvalModel(events.slice(0, firstRow + 1)).remat).toHaveLength(1);
    expect(rows.map((r) => r.policy)).toEqual([
      'no checkpoint',
      'everything_saveable',
      'nothing_saveable',
      'dots_saveable',
      'dots_with_no_batch_dims_saveable',
      "save_only_these_names('pre', 'act')",
      "save_any_names_but_these('pre')",
      "save_any_names_but_these('act')",
    ]);
  });

  it('sorts by each column, stable, both ways', () => {
    const byBytes = sortRows(rows, { key: 'residual_bytes', ascending: true }).map((r) => r.residual_bytes);
    expect(byBytes).toEqual([...byBytes].sort((a, b) => a - b));
    const desc = sortRows(rows, { key: 'saved', ascending: false }).map((r) => savedParts(r).computed);
    expect(desc).toEqual([...desc].sort((a, b) => b - a));
    const ms = sortRows(rows, { key: 'step_ms', ascending: true }).map((r) => r.step_ms ?? Number.NaN);
    expect(ms).toEqual([...ms].sort((a, b) => a - b));
    const names = sortRows(rows, { key: 'policy', ascending: true }).map((r) => r.policy);
    expect(names[0]).toBe('dots_saveable');
    // ties keep the measurement order
    const tied = sortRows(rows, { key: 'residual_bytes', ascending: true }).filter(
      (r) => r.residual_bytes === rows[0]?.residual_bytes,
    );
    expect(tied.map((r) => r.index)).toEqual([...tied.map((r) => r.index)].sort((a, b) => a - b));
  });

  it('puts rows with no temp bytes last either way', () => {
    const withNull = [...rows.slice(0, 2), { ...rows[2]!, temp_bytes: null }];
    expect(sortRows(withNull, { key: 'temp_bytes', ascending: true }).at(-1)?.temp_bytes).toBeNull();
    expect(sortRows(withNull, { key: 'temp_bytes', ascending: false }).at(-1)?.temp_bytes).toBeNull();
  });

  it('flips direction on the same header, starts ascending on a new one', () => {
    expect(nextSort({ key: 'step_ms', ascending: true }, 'step_ms')).toEqual({ key: 'step_ms', ascending: false });
    expect(nextSort({ key: 'step_ms', ascending: false }, 'saved')).toEqual({ key: 'saved', ascending: true });
  });

  it('relates bytes and time to no checkpoint', () => {
    const rel = relativeTo(rows);
    const base = rows[0]!;
    const nothing = rows.find((r) => r.policy === 'nothing_saveable')!;
    expect(rel.get(base.index)).toEqual({ bytes: 1, time: 1 });
    expect(rel.get(nothing.index)?.bytes).toBeCloseTo(nothing.residual_bytes / base.residual_bytes);
    expect(nothing.residual_bytes).toBeLessThan(base.residual_bytes);
  });
});

describe('a program too large to compile once per row (remat_layers, compile limit lowered to 0 eqns)', () => {
  const events = load('remat_layers_not_compiled');
  const rows = partialEvalModel(events).remat;
  const measured = partialEvalModel(load('remat_layers')).remat;

  it('keeps every row with its residuals, the same as the compiled run', () => {
    expect(rows.map((r) => r.policy)).toEqual(measured.map((r) => r.policy));
    expect(rows.map((r) => r.saved.length)).toEqual(measured.map((r) => r.saved.length));
    expect(rows.map((r) => r.residual_bytes)).toEqual(measured.map((r) => r.residual_bytes));
  });

  it('says why the compiled columns are empty, never a number', () => {
    const why = notMeasured(rows);
    expect(why).toMatch(/^Not measured for a program this size: the JVP jaxpr has \d+ eqns/);
    expect(why).toContain('run a part of the program');
    for (const r of rows) {
      expect(r.not_measured).toBe(why);
      expect([r.temp_bytes, r.step_ms, r.grad_max_abs_diff, r.repeats]).toEqual([null, null, null, 0]);
    }
    expect(notMeasured(measured)).toBeNull();
  });

  it('sorts the rows without step times by the other columns, and has no relative time', () => {
    const rel = relativeTo(rows);
    expect([...rel.values()].every((v) => v.time === null)).toBe(true);
    expect(rel.get(0)?.bytes).toBe(1);
    const bySaved = sortRows(rows, { key: 'saved', ascending: true }).map((r) => r.saved.length);
    expect(bySaved).toEqual([...bySaved].sort((a, b) => a - b));
    const byMs = sortRows(rows, { key: 'step_ms', ascending: false }).map((r) => r.index);
    expect(byMs).toEqual(rows.map((r) => r.index)); // all missing: measurement order
  });
});

describe('remat unavailable (a while_loop with a traced bound: jax.grad refuses)', () => {
  const events = load('while_loop_bound');

  it('keeps the split and carries JAX’s error in place of the table', () => {
    const model = partialEvalModel(events);
    expect(model.split).toBeDefined();
    expect(model.remat).toHaveLength(0);
    expect(model.failure).toBeUndefined();
    expect(model.rematUnavailable?.error_class).toBe('ValueError');
    expect(model.rematUnavailable?.message).toContain('Reverse-mode differentiation does not work');
    expect(model.rematUnavailable?.explanation).toContain('forward mode');
  });

  it('is absent from an ordinary run and before its step', () => {
    expect(partialEvalModel(load('sin_times_x')).rematUnavailable).toBeUndefined();
    const at = events.findIndex((e) => e.type === 'remat_unavailable');
    expect(partialEvalModel(events.slice(0, at)).rematUnavailable).toBeUndefined();
  });
});

describe('the remat cells and notes, worded from the rows', () => {
  const events = load('remat_layers');
  const rows = partialEvalModel(events).remat;
  const notCompiled = partialEvalModel(load('remat_layers_not_compiled')).remat;

  it('checks the gradient within 1e-5, a cross past it or where NaN/Inf differ', () => {
    for (const r of rows) {
      const d = r.grad_max_abs_diff;
      expect(d).not.toBeNull();
      // the probe's difference, printed as the cell prints it (one digit of mantissa)
      expect(gradCheck(r)).toEqual({ tone: 'ok', text: `✓ ${d!.toExponential(1)}` });
    }
    const base = rows[0]!;
    expect(gradCheck({ ...base, grad_max_abs_diff: 2.5e-3 })).toEqual({ tone: 'bad', text: '✗ 2.5e-3' });
    expect(gradCheck({ ...base, grad_max_abs_diff: 1e-5 })).toEqual({ tone: 'ok', text: '✓ 1.0e-5' });
    expect(gradCheck({ ...base, grad_max_abs_diff: null })).toEqual({ tone: 'bad', text: '✗ NaN/Inf differ' });
    for (const r of notCompiled) expect(gradCheck(r)).toEqual({ tone: 'muted', text: 'not measured' });
  });

  it('says how many rows are ahead of the cursor, or why there is none', () => {
    const at = events.findIndex((e) => e.type === 'jaxpr_split');
    const shown = partialEvalModel(events.slice(0, at + 1)).remat.length;
    expect(shown).toBe(0);
    expect(rematEmptyMessage(true, rows.length - shown, false, undefined)).toBe('Step forward: 8 measured rows ahead.');
    expect(rematEmptyMessage(true, 1, true, undefined)).toBe('Step forward: 1 measured row ahead.');
    expect(rematEmptyMessage(true, 0, true, undefined)).toBe('Measuring the policies…');
    const failed = { type: 'run_failed', kind: 'timeout', error_class: null } as unknown as Parameters<
      typeof rematEmptyMessage
    >[3];
    expect(rematEmptyMessage(true, 0, false, failed)).toBe(
      'No remat rows: the run failed after the split (timeout; see the error).',
    );
    expect(rematEmptyMessage(false, 3, true, failed)).toBe('');
    expect(rematEmptyMessage(true, 0, false, undefined)).toBe('');
  });

  it('names the device and the repeats the times come from, or says only bytes were measured', () => {
    const first = rows[0]!;
    expect(first.device.startsWith('cpu')).toBe(true);
    const note = rematNote(rows, false);
    expect(note).toContain(`measured on the worker's CPU (${first.device}), the median of ${first.repeats} calls`);
    expect(note).toContain(first.grad_of === 'f' ? 'The gradient is that of f with' : "the sum of f's outputs");
    expect(rematNote(notCompiled, true)).toMatch(/^Residual bytes are exact: they are what `jax.checkpoint` saves/);
    expect(rematNote([], false)).toBe('');
  });
});

describe('a split sent in eqn ranges (design 0045): counts are the whole programs', () => {
  // mlp_loss_ranges: the same run as mlp_loss, its jaxpr_split's views split by the backend's
  // summaries.split_event (tiny budgets, fixtures/capture.py): each view has its first eqns only.
  const whole = splitOf(load('mlp_loss'));
  const ranged = splitOf(load('mlp_loss_ranges'));

  it('the fixture holds the first eqns of each view, total_eqns the whole count', () => {
    for (const side of ['jvp', 'known', 'unknown'] as const) {
      expect(ranged[side].eqns.length).toBeLessThan(whole[side].eqns.length);
      expect(ranged[side].total_eqns).toBe(whole[side].eqns.length);
      expect(ranged[side].eqn_ranges?.length).toBeGreaterThan(0);
    }
  });

  it('the sentence gives the whole counts (those of the eager run), not the loaded eqns', () => {
    const [k, u, j] = [whole.known.eqns.length, whole.unknown.eqns.length, whole.jvp.eqns.length];
    const sentence = splitSentence(ranged);
    expect(sentence).toContain(`${k} of the JVP's ${j} eqns run in the known jaxpr, ${u} in the unknown one`);
    expect(sentence).not.toContain(`${ranged.known.eqns.length} of the JVP's`);
    // the split calls are past the loaded eqns: counted, not named
    expect(splitAccounting(ranged)).toBe(
      `${k} + ${u} = ${k + u}, not ${j}: 2 call eqns are split by JAX's partial evaluator: part of each runs on each side.`,
    );
    expect(splitAccounting(whole)).toContain(`${k} + ${u} = ${k + u}, not ${j}: 2 jit eqns (log_softmax, take_along_axis)`);
  });

  it('large counts are written with separators', () => {
    const big = {
      ...ranged,
      jvp: { ...ranged.jvp, total_eqns: 45002 },
      known: { ...ranged.known, total_eqns: 25001 },
      unknown: { ...ranged.unknown, total_eqns: 20001 },
      split_calls: [],
      dropped: 0,
    };
    expect(splitSentence(big)).toContain("25,001 of the JVP's 45,002 eqns run in the known jaxpr, 20,001 in the unknown one");
  });
});

describe('a split sent in list ranges (design 0045): residuals counted whole, paired right, shown once whole', () => {
  // The real mlp_loss split (9 residuals: the known jaxpr's outvars 1..9, the unknown one's
  // invars 0..8), its residuals and the two views' lists split as summaries.split_lists does.
  const whole = splitOf(load('mlp_loss'));
  function ranged(): { split: JaxprSplit; answers: ItemsSent[] } {
    const split = structuredClone(whole);
    const answers = [
      ...splitList(split, 'residuals', 'residuals', [3, 6], split.seq, split.run_id),
      ...splitList(split.known, 'outvars', 'known.outvars', [6], split.seq, split.run_id),
      ...splitList(split.unknown, 'invars', 'unknown.invars', [2, 10], split.seq, split.run_id),
    ];
    return { split, answers };
  }

  it('the case: 9 residuals, the last 9 known outvars, the first 9 unknown invars', () => {
    expect(whole.residuals).toHaveLength(9);
    expect(whole.known.outvars).toHaveLength(10);
    expect(residualLinks(whole).map((l) => l.knownVar)).toEqual(whole.known.outvars.slice(1).map((v) => v.name));
    expect(residualLinks(whole).map((l) => l.unknownVar)).toEqual(whole.unknown.invars.slice(0, 9).map((v) => v.name));
  });

  it('counts the whole list, and says it is loading instead of bytes and links', () => {
    const { split } = ranged();
    expect(split.residuals).toHaveLength(3);
    expect(residualCount(split)).toEqual({ loaded: 3, total: 9 });
    expect(splitSentence(split)).toBe(splitSentence(whole));
    expect(splitSentence(split)).toContain('9 residuals cross between them');
    expect(residualBytes(split)).toBeNull();
    expect(residualsLoading(split)).toBe('loading residuals 3 of 9…');
    expect(residualsLoading(whole)).toBeNull();
  });

  it('pairs each loaded residual with the variables at the whole lists\' indices, never another\'s', () => {
    const { split } = ranged();
    // known.outvars has 6 of 10 loaded: the loaded lengths would put residual 0 at outvar 3.
    const links = residualLinks(split);
    const truth = residualLinks(whole);
    expect(links).toHaveLength(3);
    links.forEach((l, i) => {
      expect(l.knownVar).toBe(truth[i]?.knownVar);
      // unknown.invars has its first 2: a residual past them has no name yet, not another's
      expect(l.unknownVar).toBe(i < 2 ? truth[i]?.unknownVar : '');
    });
  });

  it('put back in order, the split is the eager one: table, bytes and links as the whole', () => {
    const { split, answers } = ranged();
    let event: Event = split;
    for (const sent of answers) {
      const next = applyItemsSent(event, sent);
      if (next === null) throw new Error(`not the next range: ${sent.path} ${sent.start}`);
      event = next;
      const now = event as JaxprSplit;
      const pending = listsPending(now) || listsPending(now.known) || listsPending(now.unknown);
      expect(residualsLoading(now) === null).toBe(!pending);
    }
    const done = event as JaxprSplit;
    expect(done).toEqual(whole);
    expect(residualBytes(done)).toBe(residualBytes(whole));
    expect(residualLinks(done)).toEqual(residualLinks(whole));
  });

  it('says what it waits for once the residuals are whole but a jaxpr\'s variables are not', () => {
    const { split, answers } = ranged();
    let event: Event = split;
    for (const sent of answers.filter((a) => a.path === 'residuals')) event = applyItemsSent(event, sent) ?? event;
    const now = event as JaxprSplit;
    expect(now.residuals).toHaveLength(9);
    expect(residualBytes(now)).toBe(residualBytes(whole));
    expect(residualsLoading(now)).toBe('loading the variables of the known and unknown jaxprs (9 residuals)…');
  });
});

describe('a split the backend sent in eqn and list ranges (real: summaries.split_event, tiny budgets)', () => {
  // mlp_loss_lists: the mlp_loss run with its jaxpr_split split by the backend (every view in eqn
  // ranges, the residuals and the views' long variable lists in list ranges), then the ranges'
  // answers as the supervisor sends them; mlp_loss_lists_eager: the same event unsplit
  // (fixtures/capture.py).
  const lines = load('mlp_loss_lists');
  const isAnswer = (e: Event): boolean => e.type === 'items_sent' || e.type === 'jaxpr_eqns_sent';
  const events = lines.filter((e) => !isAnswer(e));
  const answers = lines.filter(isAnswer);
  const whole = splitOf(load('mlp_loss_lists_eager'));
  const runId = events[0]?.run_id ?? '';
  /** The split put back, less the emptied `eqn_ranges` the eqn-range reducer leaves (the eager view has none). */
  const putBack = (split: JaxprSplit): JaxprSplit => {
    const out = structuredClone(split);
    for (const side of ['jvp', 'known', 'unknown'] as const) {
      expect(out[side].eqn_ranges).toEqual([]);
      delete out[side].eqn_ranges;
    }
    return out;
  };

  it('the fixture: the residuals and some variable lists in list ranges', () => {
    const split = splitOf(events);
    expect(split.list_ranges?.map((r) => r.field)).toContain('residuals');
    expect(listsPending(split.known) || listsPending(split.unknown)).toBe(true);
    expect(answers.some((a) => a.type === 'items_sent')).toBe(true);
  });

  it('before the answers: counts whole, the table loading', () => {
    const split = splitOf(events);
    expect(residualCount(split)).toEqual({ loaded: split.residuals.length, total: whole.residuals.length });
    expect(split.residuals.length).toBeLessThan(whole.residuals.length);
    expect(splitSentence(split)).toContain(`${whole.residuals.length} residuals cross between them`);
    expect(residualsLoading(split)).toBe(`loading residuals ${split.residuals.length} of ${whole.residuals.length}…`);
    expect(residualBytes(split)).toBeNull();
  });

  it('put back by the reducer, the split is the eager run\'s: links and bytes too', () => {
    let state = applyEvents(startRun(runId, 'partial_eval', { calls: [] }, 0), events, 1);
    state = applyEvents(state, answers, 2);
    const split = splitOf(state.events);
    expect(putBack(split)).toEqual(whole);
    expect(residualsLoading(split)).toBeNull();
    expect(residualLinks(split)).toEqual(residualLinks(whole));
    expect(residualBytes(split)).toBe(residualBytes(whole));
  });

  it('the session asks for the views\' lists by itself once the run ended, the residuals when the table asks', () => {
    const byId = new Map(answers.map((a) => [a.detail_of ?? '', a]));
    const asked: string[] = [];
    const session = new RunSession(() => 0, { request: (callback) => callback() }, (_run, id) => asked.push(id));
    session.begin(runId, 'partial_eval', { calls: [] });
    for (const e of events) session.receive(e);
    session.receive(runFinished(runId, events.length));
    // Answer what was asked, in turn, as the server would; the residual table asks for its list.
    for (let guard = 0; guard < 100; guard++) {
      const split = splitOf(session.run.events);
      const pending = unresolvedDetails(session.run).filter((id) => !asked.includes(id));
      if (split.list_ranges?.[0] !== undefined) session.wantRange(split.list_ranges[0].detail_id);
      // eqn ranges: asked by the text as it scrolls; here all of them, as Download does
      for (const id of pending) if (byId.get(id)?.type === 'jaxpr_eqns_sent') session.wantRange(id);
      const next = asked.find((id) => byId.has(id));
      if (next === undefined) break;
      const answer = byId.get(next) as Event;
      byId.delete(next);
      session.receive(answer);
    }
    const itemsAsked = asked.filter((id) => answers.find((a) => a.detail_of === id)?.type === 'items_sent');
    expect(new Set(itemsAsked)).toEqual(new Set(answers.filter((a) => a.type === 'items_sent').map((a) => a.detail_of)));
    expect(unresolvedDetails(session.run)).toEqual([]);
    expect(putBack(splitOf(session.run.events))).toEqual(whole);
  });
});
