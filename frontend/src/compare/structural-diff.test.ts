/**
 * The jaxpr normaliser and the side-by-side diff on JAX's own texts: the jaxprs of real golden
 * event streams (`exhibits/<id>/golden/*.events.jsonl`, recorded with `jaxscope run --json`).
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { Event } from '../protocol';
import { artefactSummaries, artefactsOf, outputText } from './artefacts';
import { alphabeticName, canonicalText, readJaxpr, readLine } from './jaxpr-normalise';
import type { Row } from './structural-diff';
import { countRows, jaxprRows, textRows, unifiedDiff } from './structural-diff';

const GOLDENS = import.meta.glob('../../../exhibits/*/golden/*.events.jsonl', {
  query: '?raw',
  import: 'default',
  eager: true,
}) as Record<string, string>;

function eventsOf(name: string): Event[] {
  const key = Object.keys(GOLDENS).find((k) => k.endsWith(name));
  if (key === undefined) throw new Error(`no golden ${name}`);
  return GOLDENS[key]!.split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as Event);
}

function jaxprOf(name: string): string {
  const staged = eventsOf(name).filter((e) => e.type === 'jaxpr_staged');
  const last = staged[staged.length - 1];
  if (last?.type !== 'jaxpr_staged') throw new Error(`no jaxpr in ${name}`);
  return last.jaxpr.text;
}

/** Every jaxpr text of the goldens: the staged jaxprs and the JVP, known/unknown, linear,
 * batched and kernel jaxprs the compare view shows (`artefacts.ts`). */
function allJaxprTexts(): [string, string][] {
  const out: [string, string][] = [];
  for (const [path, raw] of Object.entries(GOLDENS)) {
    for (const line of raw.split('\n')) {
      if (line.trim() === '') continue;
      const event = JSON.parse(line) as Event;
      for (const artefact of artefactsOf([event], '')) {
        if (artefact.structural && artefact.complete) out.push([`${path} ${event.type}`, artefact.text]);
      }
    }
  }
  return out;
}

function row(rows: Row[], aLine: string | null, bLine?: string): Row {
  const found = rows.find(
    (r) => (aLine === null || r.aText.trim() === aLine) && (bLine === undefined || r.bText.trim() === bLine),
  );
  if (!found) throw new Error(`no row ${aLine} | ${bLine}`);
  return found;
}

const marks = (parts: Row['aParts']): string[] => parts.filter((p) => p.mark).map((p) => p.text.trim());

describe('jaxpr normaliser', () => {
  it('reads which names on a line are variables, and its key', () => {
    const eqn = readLine('    h:f32[1,16] = broadcast_in_dim[broadcast_dimensions=(1,)] a');
    expect([eqn.vars, eqn.binds, eqn.primitive]).toEqual([['h', 'a'], [true, false], 'broadcast_in_dim']);
    expect(eqn.key).toBe('    •:f32[1,16] = broadcast_in_dim[broadcast_dimensions=(1,)] •');
    // Literals (-inf, nan, numbers) carry their type: no variables.
    const lit = readLine('          r:f32[5] = max -inf:f32[] q');
    expect(lit.vars).toEqual(['r', 'q']);
    expect(readLine('    ] 0.8999999761581421:f32[] 0:i32[] b a').vars).toEqual(['b', 'a']);
    expect(readLine('            fill_value=nan').vars).toEqual([]);
    expect(readLine('      jvp=jvp').vars).toEqual([]);
    const header = readLine('{ lambda a:f32[2,4]; b:f32[16] c:f32[4,16]. let');
    expect([header.vars, header.types]).toEqual([['a', 'b', 'c'], ['f32[2,4];', 'f32[16]', 'f32[4,16]']]);
    // Params over several lines: the operands come on the closing line.
    expect(readLine('    g:f32[5,16] = dot_general[').vars).toEqual(['g']);
    expect(readLine('    c:i32[] d:f32[3] _:f32[8,3] = scan[').vars).toEqual(['c', 'd']);
    expect(readLine('  in (d, c, e) }').vars).toEqual(['d', 'c', 'e']);
    expect(readLine('  in (1.0:f32[], a) }').vars).toEqual(['a']);
    // Pallas refs: a read binds, a write uses.
    expect([readLine('    d:f32[4] <- a[...]').vars, readLine('    d:f32[4] <- a[...]').binds]).toEqual([['d', 'a'], [true, false]]);
    expect(readLine('    c[...] <- f').vars).toEqual(['c', 'f']);
    expect(readLine('    o[b, :] += 1.0:f32[]').vars).toEqual(['o', 'b']);
  });

  it("names JAX's variables as JAX does: renaming every golden jaxpr canonically changes nothing", () => {
    // JAX names a jaxpr's variables a, b, … by first appearance, so a canonical renaming of
    // its text is the text itself only when every variable (and nothing else) was read as one.
    const texts = allJaxprTexts();
    expect(texts.length).toBeGreaterThanOrEqual(20);
    const kinds = new Set(texts.map(([where]) => where.split(' ')[1]));
    for (const kind of ['jaxpr_staged', 'jvp_jaxpr_staged', 'batched_jaxpr_staged', 'jaxpr_split']) {
      expect(kinds.has(kind), kind).toBe(true);
    }
    for (const [path, text] of texts) expect(canonicalText(text), path).toBe(text);
    // ...and a text in other names comes back to JAX's.
    const text = jaxprOf('tracing/golden/mlp_loss.events.jsonl');
    const shifted = text.replace(/(?<=[\s(;,])([a-z]{1,2})(?=[\s:,)]|$)/gm, (v) => (readJaxpr(text).some((l) => l.vars.includes(v)) ? `q${v}` : v));
    expect(shifted).not.toBe(text);
    expect(canonicalText(shifted)).toBe(text);
  });

  it("counts names as JAX's core._encode_digits_alphabetic does", () => {
    expect([0, 1, 25, 26, 27, 51, 52, 26 * 26].map(alphabeticName)).toEqual(['a', 'b', 'z', 'ba', 'bb', 'bz', 'ca', 'baa']);
  });
});

describe('structural diff of two golden jaxprs (flax_params: a Linen MLP of 3 layers, an NNX MLP of 2)', () => {
  const a = jaxprOf('flax_params/golden/mlp.events.jsonl');
  const b = jaxprOf('flax_params/golden/nnx_mlp.events.jsonl');
  const rows = jaxprRows(a, b);

  it('matches the first layer eqn by eqn: renamed, not changed', () => {
    const dot = row(rows, 'h:f32[2,16] = dot_general[dimension_numbers=(([1], [0]), ([], []))] a c');
    expect([dot.kind, dot.renamed, dot.bText.trim()]).toEqual([
      'same',
      true,
      'f:f32[2,16] = dot_general[dimension_numbers=(([1], [0]), ([], []))] a c',
    ]);
    expect(row(rows, 'j:f32[2,16] = add h i', 'h:f32[2,16] = add f g').kind).toBe('same');
    // The relu's inner jaxprs too, line by line.
    expect(row(rows, 'm:f32[2,16] = max l 0.0:f32[]', 'k:f32[2,16] = max j 0.0:f32[]').kind).toBe('same');
  });

  it("marks the second layer as only before, and the last layer's dot_general as reading other values", () => {
    const removed = rows.filter((r) => r.kind === 'removed');
    expect(removed.length).toBe(16); // the whole second layer: dot_general, reshape, add, relu (13 lines)
    expect(removed[0]!.aText.trim()).toBe('n:f32[2,8] = dot_general[dimension_numbers=(([1], [0]), ([], []))] k e');
    const last = row(rows, 't:f32[2,1] = dot_general[dimension_numbers=(([1], [0]), ([], []))] q g');
    expect(last.kind).toBe('changed');
    // Its operands: the second layer's output and weight before; the first layer's and another weight now.
    expect([marks(last.aParts), marks(last.bParts)]).toEqual([['q', 'g'], ['i', 'e']]);
    // The bias of the last layer is the same parameter (f before, d now): only renamed.
    const bias = row(rows, 'u:f32[1,1] = reshape[dimensions=None new_sizes=(1, 1) sharding=None] f');
    expect([bias.kind, bias.renamed]).toEqual(['same', true]);
    expect(row(rows, 'in (v,) }').kind).toBe('same');
  });

  it('counts the rows and leaves every line of both texts in place', () => {
    expect(countRows(rows)).toEqual({ same: 19, changed: 2, removed: 16, added: 0, renamed: 15 });
    expect(rows.filter((r) => r.a !== null).map((r) => r.aText)).toEqual(a.split('\n'));
    expect(rows.filter((r) => r.b !== null).map((r) => r.bText)).toEqual(b.split('\n'));
    const header = rows[0]!;
    expect(header.kind).toBe('changed');
    // The invars: the second layer's two (d, e) and the last weight differ; the last bias is
    // f:f32[1] before and d:f32[1] now, the same parameter renamed: not marked.
    expect(marks(header.aParts)).toEqual(['d:f32[8]', 'e:f32[16,8]', 'g:f32[8,1].']);
    expect(marks(header.bParts)).toEqual(['e:f32[16,1].']);
  });

  it('line by line (names count) marks every renamed line, as jaxscope diff does', () => {
    const text = textRows(a, b);
    const changed = text.filter((r) => r.kind !== 'same').length;
    expect(changed).toBeGreaterThan(countRows(rows).changed + 16);
    expect(text.filter((r) => r.kind === 'same').every((r) => r.aText === r.bText)).toBe(true);
  });
});

describe('a jaxpr compared with itself, and other artefacts', () => {
  it('finds every golden jaxpr the same as itself', () => {
    for (const [path, text] of allJaxprTexts()) {
      const counts = countRows(jaxprRows(text, text));
      expect([counts.changed, counts.added, counts.removed, counts.renamed], path).toEqual([0, 0, 0, 0]);
    }
  });

  it("reads the stations golden run's artefacts as `jaxscope run --print` does", () => {
    const events = eventsOf('stations/golden/mlp_loss.events.jsonl');
    const byId = Object.fromEntries(artefactsOf(events, 'def f(x): ...').map((x) => [x.id, x]));
    expect(Object.keys(byId)).toEqual(['jaxpr', 'stablehlo', 'compiled', 'output', 'snippet']);
    const lowered = events.find((e) => e.type === 'module_lowered');
    expect(byId['stablehlo']?.text).toBe(lowered?.type === 'module_lowered' ? lowered.stablehlo : null);
    expect(byId['jaxpr']?.text).toBe(jaxprOf('tracing/golden/mlp_loss.events.jsonl'));
    // registry.py's _output: f"{o.path or 'output'}: {o.dtype}{o.shape}\n{o.preview}" (a Python list)
    expect(byId['output']?.text).toBe('output: float32[]\n1.356051');
    expect(artefactSummaries(events)).toEqual([]);
    const key = artefactsOf(eventsOf('cache_key/golden/matmul.events.jsonl'), '').find((x) => x.id === 'cache_key');
    expect(key?.text.split('\n')[0]).toMatch(/^key: jit_f-[0-9a-f]{64}$/);
  });

  it('writes the shapes of outputs as Python prints a list, and marks a summary as incomplete', () => {
    const executed = {
      type: 'program_executed',
      seq: 3,
      run_id: 'r',
      device: 'cpu',
      platform: 'cpu',
      outputs: [{ path: '[0]', shape: [2, 3], dtype: 'float32', preview: '[[0. 0. 0.]\n [0. 0. 0.]]' }],
      dispatch_ms: 0,
      blocked_ms: 0,
      repeats: 1,
      ready_after_dispatch: false,
      zeros_for: ['x'],
    } as const;
    expect(outputText(executed as never)).toBe(
      '# ran on zeros for x (ShapeDtypeStruct arguments have no values)\n[0]: float32[2, 3]\n[[0. 0. 0.]\n [0. 0. 0.]]',
    );
    const exported = { type: 'stablehlo_exported', seq: 4, run_id: 'r', text: 'module {', line_count: 1, byte_count: 9, shape_assertions: 0, complete: false, detail_id: 'd4' };
    const events = [executed, exported] as unknown as Event[];
    expect(artefactSummaries(events)).toEqual([1]);
    expect(artefactsOf(events, '').find((x) => x.id === 'stablehlo')?.complete).toBe(false);
  });

  it('writes a unified diff in the format of difflib.unified_diff', () => {
    // difflib.unified_diff(['x\n','y\n','z\n'], ['x\n','q\n','z\n'], 'a', 'b'), joined
    expect(unifiedDiff('x\ny\nz', 'x\nq\nz', 'a', 'b')).toBe('--- a\n+++ b\n@@ -1,3 +1,3 @@\n x\n-y\n+q\n z\n');
    // one line each: difflib writes the range without its length
    expect(unifiedDiff('x', 'y', 'a', 'b')).toBe('--- a\n+++ b\n@@ -1 +1 @@\n-x\n+y\n');
    expect(unifiedDiff('same', 'same', 'a', 'b')).toBe('');
  });
});
