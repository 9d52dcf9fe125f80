import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { goldenLoader } from '../../frontend/src/test/fixtures';
import {
  changeCounts,
  changedInstructions,
  cliName,
  diffInstructions,
  diffKinds,
  dumpRead,
  instructionLines,
  kernels,
  nameBreaks,
  passes,
  pipelines,
  shownPass,
  sourceLines,
  stops,
  textSource,
} from './view-model';

const golden = goldenLoader(import.meta.url);

describe('xla_passes view model', () => {
  it('stops at the passes that changed the module, or at every pass', () => {
    const events = golden('mlp_softmax');
    const all = passes(events);
    const read = dumpRead(events);
    expect(all.length).toBe(read?.pass_count);
    expect(all.map((p) => p.index)).toEqual(all.map((_, i) => i));
    const changed = stops(all, false);
    // the first snapshot, then every pass that changed the text
    expect(changed[0]?.index).toBe(0);
    expect(changed.slice(1).every((p) => p.changed)).toBe(true);
    expect(changed.filter((p) => p.changed).length).toBe(read?.changed_count);
    expect(changed.map((p) => p.pass_name)).toContain('fusion');
    expect(stops(all, true).length).toBe(all.length);
  });

  it('shows the pass at the cursor, or the one picked, with the text of the last changed snapshot', () => {
    const events = golden('mlp_softmax');
    const all = passes(events);
    const fusion = all.find((p) => p.pass_name === 'fusion');
    expect(fusion).toBeDefined();
    if (!fusion) return;
    const upTo = events.slice(0, events.indexOf(fusion) + 1);
    expect(shownPass(all, upTo, null)).toBe(fusion);
    expect(shownPass(all, events, 3)).toBe(all[3]);
    // at the end of the run, the last pass whose diff added, removed or rewrote an instruction:
    // not the unchanged last one, nor the scheduler's pipeline-start (a reordered text, "+0 −0")
    const changedStops = stops(all, false);
    const lastStop = changedStops[changedStops.length - 1];
    expect(lastStop?.pass_name).toBe('pipeline-start');
    expect(changeCounts(lastStop ?? fusion)).toBe('+0 −0');
    const withEdits = all.filter((p) => {
      const d = diffInstructions(p.diff);
      return d.appeared.length + d.vanished.length + d.rewritten.length > 0;
    });
    const lastEdit = withEdits[withEdits.length - 1];
    expect(lastEdit?.pass_name).toBe('fusion-wrapper');
    expect(shownPass(all, events, null, changedStops)).toBe(lastEdit);
    expect(shownPass(all, events, null, all)).toBe(lastEdit);
    for (const name of ['mlp_softmax', 'loop_invariant']) {
      const ps = passes(golden(name));
      const shown = shownPass(ps, golden(name), null, stops(ps, false));
      expect(changedInstructions(shown ?? fusion)).toBe(true);
      const edits = (p: (typeof ps)[number]): number => {
        const d = diffInstructions(p.diff);
        return d.appeared.length + d.vanished.length + d.rewritten.length;
      };
      expect(edits(shown ?? fusion)).toBeGreaterThan(0);
      expect(ps.slice((shown?.index ?? 0) + 1).every((p) => edits(p) === 0)).toBe(true);
    }
    // an unchanged pass shows the text of the last snapshot that carries one
    const after = all[fusion.index + 2];
    expect(after).toBeDefined();
    if (!after) return;
    const source = textSource(all, after);
    expect(source.index).toBeLessThanOrEqual(after.index);
    expect(source.hlo_text).not.toBeNull();
    expect(all.slice(source.index + 1, after.index + 1).every((p) => !p.changed)).toBe(true);
  });

  it('reads the fusion pass: its counts, its diff lines and the lines of the new instructions', () => {
    const all = passes(golden('mlp_softmax'));
    const fusion = all.find((p) => p.pass_name === 'fusion');
    if (!fusion) throw new Error('no fusion pass');
    expect(fusion.fusions_created).toContain('add_tanh_fusion');
    expect(changeCounts(fusion)).toBe(`+${fusion.appeared_count} −${fusion.vanished_count} ~${fusion.rewritten_count}`);
    const kinds = diffKinds(fusion.diff);
    expect(kinds.filter((k) => k === 'add').length).toBeGreaterThan(0);
    expect(kinds[0]).toBe('hunk');
    const text = fusion.hlo_text ?? '';
    const lines = instructionLines(text, new Set(['add_tanh_fusion']));
    expect(lines.size).toBe(1);
    const [n] = [...lines];
    expect(text.split('\n')[n ?? 0]).toContain('%add_tanh_fusion = ');
    expect(changeCounts(all[1] ?? fusion)).toBe('unchanged');
  });

  it("reads the instructions each pass added, removed and rewrote from its diff (the event's counts)", () => {
    for (const name of ['mlp_softmax', 'loop_invariant']) {
      const changed = passes(golden(name)).filter((p) => p.changed);
      expect(changed.length).toBeGreaterThan(3);
      for (const p of changed) {
        const d = diffInstructions(p.diff);
        expect([d.appeared.length, d.vanished.length, d.rewritten.length]).toEqual([
          p.appeared_count,
          p.vanished_count,
          p.rewritten_count,
        ]);
        expect(d.appeared.filter((i) => i.opcode === 'fusion').map((i) => i.name)).toEqual(p.fusions_created);
      }
    }
    const fusion = passes(golden('mlp_softmax')).find((p) => p.pass_name === 'fusion');
    const d = diffInstructions(fusion?.diff ?? []);
    expect(d.appeared).toContainEqual({ name: 'add_tanh_fusion', opcode: 'fusion' });
    expect(d.vanished).toContainEqual({ name: 'tanh.1', opcode: 'tanh' });
  });

  it('cuts fusion names at their _ and . boundaries only, so that they wrap there', () => {
    expect(nameBreaks('wrapped_broadcast.1')).toEqual(['wrapped_', 'broadcast.', '1']);
    expect(nameBreaks('fusion')).toEqual(['fusion']);
    for (const p of passes(golden('mlp_softmax'))) for (const f of p.fusions_created) expect(nameBreaks(f).join('')).toBe(f);
  });

  it('names passes as the CLI does and groups them by pipeline', () => {
    const all = passes(golden('mlp_softmax'));
    const algsimp = all.filter((p) => p.pass_name === 'algsimp');
    expect(algsimp.map(cliName).slice(0, 2)).toEqual(['algsimp', 'algsimp#2']);
    const pipes = pipelines(all);
    expect(pipes.reduce((n, p) => n + p.passes, 0)).toBe(all.length);
    expect(pipes.map((p) => p.name)).toContain('simplification');
  });

  it('lists the fusions with the pass that created them and the LLVM IR kernels', () => {
    const events = golden('mlp_softmax');
    const read = dumpRead(events);
    const byName = new Map(read?.fusions.map((f) => [f.name, f]));
    expect(byName.get('add_tanh_fusion')?.pass_name).toBe('fusion');
    expect(byName.get('add_tanh_fusion')?.fused_opcodes).toEqual(['broadcast', 'add', 'tanh']);
    expect(read?.last_is_compiled).toBe(true);
    const irs = kernels(events);
    expect(irs.map((k) => k.kernel)).toContain('add_tanh_fusion_kernel_module');
    expect(irs.find((k) => k.kernel === 'add_tanh_fusion_kernel_module')?.fusion).toBe('add_tanh_fusion');
  });

  it('finds the loop-invariant hoist in the loop example', () => {
    const all = passes(golden('loop_invariant'));
    const licm = all.find((p) => p.pass_name === 'while-loop-invariant-code-motion' && p.changed);
    expect(licm).toBeDefined();
  });

  it("links each instruction to the snippet line of its stack frame (XLA's FileLocations)", () => {
    const example = readFileSync(new URL('./examples/mlp_softmax.py', import.meta.url), 'utf8').split('\n');
    const lineOf = (needle: string): number => example.findIndex((l) => l.includes(needle)) + 1;
    const all = passes(golden('mlp_softmax'));
    const fusion = all.find((p) => p.pass_name === 'fusion');
    const text = fusion?.hlo_text ?? '';
    const lines = text.split('\n');
    const links = sourceLines(text);
    const at = (name: string): number | undefined => links.get(lines.findIndex((l) => l.includes(`%${name} = `)));
    // tanh(x @ w + b) is line 16, softmax(h) line 17 (its reductions and exp come from there)
    expect(at('add_tanh_fusion')).toBe(lineOf('jnp.tanh'));
    expect(at('subtract_exponential_fusion')).toBe(lineOf('jax.nn.softmax'));
    expect(at('ynn_fusion')).toBe(lineOf('jnp.tanh'));
    // parameters carry no stack frame; every linked line is an instruction of the snippet's lines
    expect(at('x.1')).toBeUndefined();
    expect(new Set(links.values())).toEqual(new Set([lineOf('jnp.tanh'), lineOf('jax.nn.softmax')]));
  });
});
