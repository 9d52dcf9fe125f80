import { describe, expect, it } from 'vitest';
import type { Event } from '../../frontend/src/protocol';
import { goldenLoader } from '../../frontend/src/test/fixtures';
import { argRows, changeRows, defaultMode, dtypesModel, findingSelection, firstSentence, grid, x64Note, type Computed } from './view-model';

// The golden event streams: `jaxscope run dtypes examples/<name>.py --json` (the real sandbox);
// test_dtypes.py checks every value in them against JAX.
const golden = goldenLoader(import.meta.url);

function cellsWhere(events: readonly Event[], mode: 'off' | 'on', pick: (hit: string, changed: boolean) => boolean): string[] {
  const g = grid(dtypesModel(events), mode);
  return (g?.rows ?? []).flatMap((r) =>
    r.cells.flatMap((c, j) => (pick(c.hit, c.changed) ? [`${r.header.code}|${g?.headers[j]?.code}=${c.code}`] : [])),
  );
}

describe('dtypes view model', () => {
  it('marks the answer cell of uint32 + int32: int32 with x64 off, int64 with x64 on', () => {
    const events = golden('mixed_ints');
    const model = dtypesModel(events);
    expect(defaultMode(model)).toBe('off');
    expect(cellsWhere(events, 'off', (hit) => hit === 'answer')).toEqual(['u32|i32=i32']);
    expect(cellsWhere(events, 'on', (hit) => hit === 'answer')).toEqual(['u32|i32=i64']);
    expect(grid(model, 'off')?.headers.filter((h) => h.hit).map((h) => h.code)).toEqual(['u32', 'i32']);
    expect(argRows(model).map((a) => [a.path, a.pythonType, a.off, a.on])).toEqual([
      ['args[0]', 'numpy.ndarray', 'u32', 'u32'],
      ['args[1]', 'jax.Array', 'i32', 'i32'],
    ]);
    expect(x64Note(model)).toContain('the table is not: with x64 off, JAX joins uint32 with a signed integer into int32');
  });

  it('marks † exactly where the two tables differ: uint32 with the signed ints below int64', () => {
    // JAX's lattice differs in one edge only (uint32 -> int32 instead of int64 with x64 off,
    // jax/_src/dtypes.py); its joins with int8, int16, int32, both ways round.
    const changed = cellsWhere(golden('mixed_ints'), 'off', (_, c) => c).sort();
    expect(changed).toEqual(
      ['i16|u32=i32', 'i32|u32=i32', 'i8|u32=i32', 'u32|i16=i32', 'u32|i32=i32', 'u32|i8=i32'].sort(),
    );
    expect(cellsWhere(golden('mixed_ints'), 'on', (_, c) => c).every((c) => c.endsWith('=i64'))).toBe(true);
  });

  it('keeps bfloat16 with a Python float (weak f*), and says x64 changes nothing', () => {
    const events = golden('weak_scalar');
    const model = dtypesModel(events);
    expect(argRows(model).map((a) => a.off)).toEqual(['bf16', 'f*']);
    expect(grid(model, 'off')?.headers.find((h) => h.code === 'f*')).toMatchObject({ weak: true, hit: true, title: 'Python float (weakly typed)' });
    expect(cellsWhere(events, 'off', (hit) => hit === 'answer')).toEqual(['bf16|f*=bf16']);
    expect(x64Note(model)).toBeNull();
  });

  it('folds four arguments left to right; a numpy float64 is float32 with x64 off', () => {
    const events = golden('numpy_float64');
    const model = dtypesModel(events);
    // in the table's order (columns i8, f32, i*); the fold went f32, f32, i8, i*
    expect(cellsWhere(events, 'off', (hit) => hit !== 'none')).toEqual(['f32|i8=f32', 'f32|f32=f32', 'f32|i*=f32']);
    expect(cellsWhere(events, 'on', (hit) => hit === 'step')).toEqual(['f64|i8=f64', 'f64|f32=f64']);
    expect(cellsWhere(events, 'on', (hit) => hit === 'answer')).toEqual(['f64|i*=f64']);
    expect(x64Note(model)).toBe(
      'x64 changes the answer: float32 with x64 off, float64 with x64 on. With x64 off JAX takes args[0] (f64 with x64 on) as f32: it canonicalizes 64-bit types to 32 bits.',
    );
  });

  it('puts the answer of one argument on the diagonal, and shows the tables before the result', () => {
    const events = golden('mixed_ints');
    const computed = events.find((e) => e.type === 'result_type_computed') as Computed;
    const one: Computed = {
      ...computed,
      args: computed.args.slice(0, 1),
      answers: computed.answers.map((a) => ({ ...a, dtype: 'uint32', code: 'u32', steps: [] })),
    };
    const withOne = events.map((e) => (e === computed ? one : e));
    expect(cellsWhere(withOne, 'off', (hit) => hit === 'answer')).toEqual(['u32|u32=u32']);
    const tablesOnly = events.filter((e) => e.type !== 'result_type_computed');
    expect(cellsWhere(tablesOnly, 'off', (hit) => hit !== 'none')).toEqual([]);
    expect(grid(dtypesModel(tablesOnly), 'on')?.rows.length).toBe(18);
  });

  it("cuts JAX's message after its first sentence", () => {
    const tables = dtypesModel(golden('mixed_ints')).tables;
    expect(firstSentence(tables.off?.unpromoted_error ?? '')).toBe(
      "Input dtypes ('int1', 'float32') have no available implicit dtype promotion path.",
    );
    expect(firstSentence('no period')).toBe('no period');
  });

  it('says what a cell means in its tooltip, canonicalization and weak types included', () => {
    const g = grid(dtypesModel(golden('mixed_ints')), 'off');
    const cell = (row: string, col: string) => {
      const r = g?.rows.find((x) => x.header.code === row);
      return r?.cells[g?.headers.findIndex((h) => h.code === col) ?? -1]?.title;
    };
    expect(cell('u32', 'i32')).toBe('jnp.promote_types(uint32, int32) = int32; with x64 on: int64');
    expect(cell('i64', 'f32')).toBe('jnp.promote_types(int64, float32) = float32');
    expect(cell('i64', 'i8')).toBe(
      'jnp.promote_types(int64, int8) = int64; an array of it is int32 with x64 off (64-bit types are canonicalized to 32 bits)',
    );
    expect(cell('i*', 'f*')).toBe(
      'jnp.promote_types(Python int (weakly typed), Python float (weakly typed)) = Python float (weakly typed); an array of it is a weakly typed float32',
    );
  });
});

describe('dtypes view model: the dtype changes', () => {
  it('says the promotion of the bf16_promoted example at its line, in the words of the CLI', () => {
    // test_dtype_cases.py holds the same snippet (cases/DT01) to plain JAX's output dtype
    const rows = changeRows(dtypesModel(golden('bf16_promoted')));
    expect(rows).toHaveLength(1);
    expect(rows[0]?.kind).toBe('promoted');
    expect(rows[0]?.finding).toBe(true);
    expect(rows[0]?.line).toBe(12);
    expect(rows[0]?.text).toBe("bf16[4,8] promoted to f32[4,8] by * with f32[] constant; the wider dtype lasts to f's output");
  });

  it('says the int64_ids example: the wrapped ids a finding, the rounded float64 table a note', () => {
    // test_dtypes.py: plain JAX looks up other rows for exactly the ids int32 cannot hold; the
    // same sentences are artefacts.py's headline (the CLI's stderr lines)
    const rows = changeRows(dtypesModel(golden('int64_ids')));
    expect(rows.map((r) => [r.kind, r.finding, r.line])).toEqual([
      ['demoted', true, 13],
      ['demoted', false, 13],
    ]);
    expect(rows[0]?.text).toBe(
      'args[0] is i64[3]; with x64 off JAX holds it as i32[3], and 2 of 3 values lie outside the 32-bit range and wrap around (args[0][1]: 4294967303 -> 7)',
    );
    expect(rows[1]?.text).toBe(
      'args[1] is f64[1000,4]; with x64 off JAX holds it as f32[1000,4], and rounds 4000 of 4000 values to float32 (args[1][0, 0]: 0.1257302210933933 -> 0.1257302165031433), as JAX documents',
    );
    expect(rows[0]?.fix).toContain('jax_enable_x64');
    expect(rows[1]?.fix).toMatch(/^Not a finding/);
  });

  it('says the bf16_token_count example: a count bfloat16 holds as another whole number, with its fix', () => {
    // test_precision_cases.py holds the same snippet (cases/DT05) to plain JAX (4096) and numpy
    // (4097) in a fresh process; the sentence is artefacts.py's headline (the CLI's stderr line)
    const rows = changeRows(dtypesModel(golden('bf16_token_count')));
    expect(rows.map((r) => [r.kind, r.finding, r.line])).toEqual([['precision_lost', true, 10]]);
    expect(rows[0]?.text).toBe(
      'bf16[] result of jnp.dot (dot_general) loses what float32 keeps: 1 of 1 values are whole numbers that bfloat16 holds as other whole numbers (result: 4096.0 where float32 gives 4097.0)',
    );
    expect(rows[0]?.fix).toContain('preferred_element_type=jnp.float32');
  });

  it('says a bfloat16 value meeting one made float32 on purpose as a note whose fix upcasts it', () => {
    // The change `jaxscope run dtypes --json` gives for cases/DT05 broken with the printed fix
    // applied to the flagged line only (test_precision_cases.py runs it and checks plain JAX's
    // value); put in place of the golden's changes.
    const events = golden('bf16_token_count').map((e) =>
      e.type === 'dtype_changes_found'
        ? {
            ...e,
            changes: [
              {
                kind: 'promoted' as const,
                api: '/',
                source: { line: 18, column: 11, end_line: 18, end_column: 24, function: 'f', callers: null },
                from_dtype: 'bfloat16',
                to_dtype: 'float32',
                from_type: 'bf16[]',
                to_type: 'f32[]',
                partner: 'f32[] computed',
                count: 1,
                changed: null,
                total: null,
                example: null,
                corrupted: 0,
                corruption: null,
                corrupt_example: null,
                finding: false,
                primitive: null,
                fix: 'upcast the bfloat16 operand on purpose where it meets the float32 value (`x.astype(jnp.float32)`) and keep the float32 side as it is: it was made float32 on purpose, and narrowing it to bfloat16 would undo that',
              },
            ],
          }
        : e,
    );
    const rows = changeRows(dtypesModel(events));
    expect(rows.map((r) => [r.kind, r.finding, r.line])).toEqual([['promoted', false, 18]]);
    // artefacts.py's headline, the CLI's note line
    expect(rows[0]?.text).toBe(
      "bf16[] promoted to f32[] by / with f32[] computed, which was made float32 on purpose; the wider dtype lasts to f's output",
    );
    expect(rows[0]?.fix).toMatch(/^Not a finding: the other operand was made float32 on purpose/);
    expect(rows[0]?.fix).toContain('x.astype(jnp.float32)');
    expect(rows[0]?.fix).not.toContain("the other operand the value's dtype");
  });

  it('has no change for the examples that keep their dtypes', () => {
    for (const name of ['mixed_ints', 'weak_scalar', 'numpy_float64']) {
      const model = dtypesModel(golden(name));
      expect(model.changes).toBeDefined();
      expect(changeRows(model)).toEqual([]);
    }
  });

  it("selects the findings' lines, as the error panel marks a failed run's line; a note's is left", () => {
    // the lines are the goldens' (bf16_token_count: cases/DT05's jnp.dot at line 10; int64_ids:
    // the wrapped ids, line 13, whose float64 note shares the line)
    expect(findingSelection(changeRows(dtypesModel(golden('bf16_token_count'))))).toEqual({
      origin: 'eqn',
      lines: [10],
      eqnIndices: [],
      opLines: [],
    });
    expect(findingSelection(changeRows(dtypesModel(golden('int64_ids'))))?.lines).toEqual([13]);
    const rows = [
      { kind: 'promoted' as const, finding: true, line: 21, text: '', fix: '' },
      { kind: 'demoted' as const, finding: false, line: 4, text: '', fix: '' },
      { kind: 'promoted' as const, finding: true, line: 9, text: '', fix: '' },
      { kind: 'promoted' as const, finding: true, line: 21, text: '', fix: '' },
      { kind: 'promoted' as const, finding: true, line: null, text: '', fix: '' },
    ];
    expect(findingSelection(rows)?.lines).toEqual([9, 21]);
    // only notes, or no change at all: nothing is selected
    expect(findingSelection(rows.filter((r) => !r.finding))).toBeNull();
    expect(findingSelection(changeRows(dtypesModel(golden('mixed_ints'))))).toBeNull();
  });
});
