import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { Event } from '../../frontend/src/protocol';
import {
  blockRows,
  collectiveEqns,
  collectiveNote,
  failedCheck,
  faultNote,
  foundText,
  indexText,
  meshText,
  shardMapModel,
  specOptions,
  specRows,
  verdictSentence,
  vmaSentence,
  vmaText,
} from './view-model';
import { fixtureLoader } from '../../frontend/src/test/fixtures';

// Captured from the real probe by fixtures/capture.py (never written by hand).
const load = fixtureLoader(import.meta.url);

describe('psum_rows (the default example)', () => {
  const events = load('psum_rows');
  const model = shardMapModel(events);

  it('reads the three steps', () => {
    expect(model.body).toBeDefined();
    expect(model.checked?.ok).toBe(true);
    expect(model.outputs?.outputs).toHaveLength(1);
    expect(failedCheck(model.checked)).toBeUndefined();
    expect(verdictSentence(model.checked!)).toContain('8 of 8 checks passed');
  });

  it('walks the steps with the stepper', () => {
    const first = shardMapModel(events.slice(0, events.findIndex((e) => e.type === 'shard_map_body_traced') + 1));
    expect(first.body).toBeDefined();
    expect(first.checked).toBeUndefined();
    expect(first.outputs).toBeUndefined();
  });

  it('shows per-device avals and varying axes as JAX prints them', () => {
    const input = model.body!.inputs[0]!;
    expect(input.aval.shape).toEqual([2, 2]);
    expect(input.aval.short.endsWith(vmaText(input.vma))).toBe(true);
    expect(vmaText(input.vma)).toBe('{V:(x,y)}');
    expect(vmaText(model.body!.outputs[0]!.vma)).toBe('{V:x}');
    expect(vmaSentence(['x'], ['x', 'y'])).toBe("differs across 'x'; the same across 'y'");
    expect(vmaSentence([], ['x', 'y'])).toContain('invariant');
  });

  it('highlights the psum in the body jaxpr', () => {
    const eqns = collectiveEqns(model.body);
    expect(eqns.size).toBe(1);
    const [i] = [...eqns];
    expect(model.body!.jaxpr!.eqns[i!]!.primitive).toBe('psum_invariant');
  });

  it("says psum_invariant is the snippet's lax.psum, on the line it came from", () => {
    const [c] = model.body!.collectives;
    expect(c?.primitive).toBe('psum_invariant');
    // the eqn's source line is the example's own psum line (read from the file, not the event)
    const example = readFileSync(fileURLToPath(new URL('./examples/psum_rows.py', import.meta.url)), 'utf8').split('\n');
    const psumLine = example.findIndex((l) => l.includes('jax.lax.psum(')) + 1;
    expect(c?.source?.line).toBe(psumLine);
    // the line without its comment (the example has no '#' inside a string)
    const code = example[psumLine - 1]!.split('#')[0]!.trim();
    expect(code).toBe('return jax.lax.psum(partial, "y")');
    expect(c?.source_text).toBe(code);
    const note = collectiveNote(c!);
    expect(note?.api).toBe('jax.lax.psum');
    expect(note?.call).toBe(code);
    expect(note?.text).toContain("psum_invariant is JAX's name for jax.lax.psum inside shard_map with check_vma=True");
    expect(note?.text).toContain("invariant over 'y'");
    expect(note?.where).toContain('jax/_src/lax/parallel.py');
  });

  it('has no note for a collective named as called, nor a call without a psum line', () => {
    const [c] = model.body!.collectives;
    expect(collectiveNote({ ...c!, primitive: 'ppermute' })).toBeNull();
    expect(collectiveNote({ ...c!, primitive: 'all_gather' })).toBeNull();
    // psum_invariant whose line is not a psum/pmean call: explained, but not linked to a call
    const elsewhere = collectiveNote({ ...c!, source_text: 'return g(partial)' });
    expect(elsewhere?.call).toBeNull();
    expect(elsewhere?.api).toBe('jax.lax.psum');
    // pmean is a psum then a divide: the note names the pmean the line calls
    const mean = collectiveNote({ ...c!, source_text: "return jax.lax.pmean(partial, 'y')" });
    expect(mean?.api).toBe('jax.lax.pmean');
    expect(mean?.text).toContain('pmean is a psum, then a divide');
  });

  it('groups device blocks replicated over y', () => {
    const rows = blockRows(model.outputs!.outputs[0]!);
    expect(rows).toHaveLength(4); // 4 row blocks, each on the 2 devices along y
    expect(rows.every((r) => r.devices.length === 2)).toBe(true);
    expect(rows[0]!.index).toBe('[0:2, 0:1]');
    expect(meshText(model.checked!)).toBe('x: 4 × y: 2');
  });

  it('has no fault marks', () => {
    expect(specRows(model.checked).every((r) => !r.whole && r.cells.every((c) => !c.fault))).toBe(true);
  });
});

describe('error examples mark the spec entry at fault', () => {
  it("unknown_axis: in_specs[0]'s entry 'z'", () => {
    const m = shardMapModel(load('unknown_axis'));
    expect(m.checked?.ok).toBe(false);
    expect(m.checked?.check).toBe('unknown_axis');
    expect(m.body).toBeUndefined();
    const row = specRows(m.checked).find((r) => r.label === 'in_specs[0]')!;
    expect(row.cells.map((c) => [c.text, c.fault])).toEqual([
      ["'x'", false],
      ["'z'", true],
    ]);
    expect(row.axes).toEqual(['z']);
    expect(faultNote('unknown_axis', row.axes)).toBe("not a mesh axis: 'z'");
    expect(faultNote('duplicate_axis', ['x'])).toBe("mesh axis 'x' is named at more than one position");
    expect(verdictSentence(m.checked!)).toContain('ValueError');
  });

  it("indivisible_spec: entry 0 ('x') of in_specs[0]", () => {
    const m = shardMapModel(load('indivisible_spec'));
    const row = specRows(m.checked).find((r) => r.label === 'in_specs[0]')!;
    expect(row.cells.filter((c) => c.fault).map((c) => c.text)).toEqual(["'x'"]);
    expect(failedCheck(m.checked)?.name).toBe('divisibility');
    expect(m.checked!.checks.slice(4).every((c) => c.status === 'not_reached')).toBe(true);
  });

  it('out_replication: the whole out_specs, axis y', () => {
    const m = shardMapModel(load('out_replication'));
    const row = specRows(m.checked).find((r) => r.specs === 'out_specs')!;
    expect(row.whole).toBe(true);
    expect(row.axes).toEqual(['y']);
    expect(vmaText(m.body!.outputs[0]!.vma)).toBe('{V:(x,y)}');
    expect(m.outputs).toBeUndefined();
  });
});

describe('helpers', () => {
  it('formats indices and options', () => {
    expect(indexText([[0, 2], [4, 8]])).toBe('[0:2, 4:8]');
    expect(specOptions({ calls: [] } as never, "  (P('x'),) ").spec).toBe("(P('x'),)");
    expect(specOptions({ calls: [] } as never, '  ').spec).toBeNull();
  });
});

describe('found_in_jit (real code: f calls jax.shard_map itself)', () => {
  const model = shardMapModel(load('found_in_jit'));

  it('says which call of f is checked, and where it is', () => {
    const checked = model.checked;
    expect(checked?.found?.sites).toHaveLength(1);
    const line = checked?.found?.sites[0]?.line;
    expect(line).toBeGreaterThan(0);
    expect(foundText(checked!)).toBe(
      `Your f calls jax.shard_map itself: this is the call at line ${line} (inside jit(f)), checked with the arrays f passed it at your args; its mesh, specs and body are the ones JAX staged for it.`,
    );
    expect(model.body?.collectives.map((c) => c.primitive)).toContain('psum_invariant');
  });

  it('is null for the snippet form', () => {
    expect(foundText(shardMapModel(load('psum_rows')).checked!)).toBeNull();
  });
});
