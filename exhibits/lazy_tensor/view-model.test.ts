import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { Event } from '../../frontend/src/protocol';
import {
  built,
  callWords,
  eagerRun,
  hashes,
  numbered,
  sourceLink,
  stepNodes,
  stepRows,
  synced,
  torchaxStaged,
  torchaxVars,
} from './view-model';

function golden(name: string): Event[] {
  return readFileSync(new URL(`./golden/${name}.events.jsonl`, import.meta.url), 'utf8')
    .split('\n')
    .filter((line) => line.trim())
    .map((line) => JSON.parse(line) as Event);
}

const mlp = golden('mlp_item');
const cuts = golden('cuts');

describe('lazy_tensor view model on the golden run', () => {
  it('one row per line of f, the .item() line the only cut, named by its call', () => {
    const rows = stepRows(mlp);
    expect(rows.map((r) => r.line)).toEqual([8, 9, 10, 11, 12]);
    expect(rows.filter((r) => r.cut > 0).map((r) => r.source)).toEqual(['peak = y.abs().max().item()']);
    expect(rows.filter((r) => r.cut > 0).map((r) => r.cutBy)).toEqual([['.item()']]);
    expect(rows.every((r) => r.unnamed === 0 && !r.eager)).toBe(true);
    expect(rows.filter((r) => r.line !== 10).every((r) => r.added > 0)).toBe(true);
    expect(eagerRun(mlp)).toBe(false);
  });
  it("a step's nodes made by its own line are marked", () => {
    const nodes = stepNodes(mlp, 0);
    expect(nodes.filter((n) => n.fresh).length).toBe(stepRows(mlp)[0]?.added);
    expect(nodes.every((n) => !n.fresh || n.line === 8)).toBe(true);
  });
  it('the graph, the values and the hash experiments', () => {
    expect(built(mlp)?.ir.startsWith('IR {')).toBe(true);
    expect(synced(mlp)?.executions).toBe(1);
    expect(hashes(mlp)?.trials.map((t) => t.same)).toEqual([true, false]);
  });
  it('the six cuts of cuts.py, each on its line, in words', () => {
    const cut = stepRows(cuts).filter((r) => r.cut > 0);
    expect(cut.map((r) => [r.source, r.cutBy])).toEqual([
      ['peak = y.max().item()', ['.item()']],
      ['first_row = y[0].cpu()', ['.cpu()']],
      ['last_row = y[-1].to("cpu")', ['.to(...)']],
      ['print(total)', ['print(t) / str(t) / repr(t) (Tensor.__repr__)']],
      ['if total > peak:', ['bool(t): an if / while / and / or on a tensor (Tensor.__bool__)']],
      ['rows = y.sum(dim=1).tolist()', ['.tolist()']],
    ]);
  });
  it('a Python number baked in is a new hash, an uploaded one the same', () => {
    const trials = hashes(cuts)?.trials ?? [];
    expect(trials.map((t) => [t.change, t.same])).toEqual([
      ['new values, same shapes', true],
      ['args[0] one row longer', false],
      ['args[2] = 3 (was 2), a Python number', false],
      ['args[3] = 1.5 (was 0.5), a Python number', true],
    ]);
  });
  it("the hash's ingredients link to their lines at the tag", () => {
    const source = hashes(mlp)?.source;
    expect(source?.ingredients.map((i) => i.key)).toEqual([
      'force_ltc_data',
      'HashCompilationEnv',
      'ir_value.hash()',
      'parameter_sequence',
      'buffer_donor_index',
      'GetAutoSharding',
    ]);
    const first = source!.ingredients[0]!;
    expect(sourceLink(source!, first.lines)).toBe(
      `https://github.com/pytorch/xla/blob/5fab7053df86c8d503b98d9e7202ca8b8d4978c7/torch_xla/csrc/xla_graph_executor.cpp#L${first.lines[0]}`,
    );
    expect(sourceLink(source!, [540, 545])).toMatch(/#L540-L545$/);
    expect(numbered('a\nb', 9)).toBe('    9  a\n   10  b');
  });
  it("a forged commit or path stays a link into pytorch/xla's tree (issue 31)", () => {
    const source = hashes(mlp)!.source!;
    const link = sourceLink({ ...source, commit: 'x?y=1#', path: 'a b/c#d?e' }, [7]);
    expect(link).toBe('https://github.com/pytorch/xla/blob/x%3Fy%3D1%23/a%20b/c%23d%3Fe#L7');
    const url = new URL(link);
    expect([url.host, url.search, url.hash]).toEqual(['github.com', '', '#L7']);
  });
  it('an unknown method keeps torch its name', () => {
    expect(callWords('numpy')).toBe('Tensor.numpy');
  });
});

describe('the torchax panel on module-level state (module_state.py, the torchax option)', () => {
  it("names each jaxpr variable from the snippet: the model's parameters and the args as inputs, scale a constant", () => {
    const staged = torchaxStaged(golden('module_state'));
    expect(staged?.problem).toBe('');
    const vars = staged ? torchaxVars(staged) : [];
    expect(vars.map((v) => [v.name, v.aval, v.role.split(':')[0]])).toEqual([
      ['model.0.bias', 'f32[8]', 'input'],
      ['model.0.weight', 'f32[8,4]', 'input'],
      ['model.2.bias', 'f32[3]', 'input'],
      ['model.2.weight', 'f32[3,8]', 'input'],
      ['args[0]', 'f32[6,4]', 'input'],
      ['args[1]', 'i32[6]', 'input'],
      ['scale', 'f32[3]', 'constant'],
    ]);
    // Each var is in the header of JAX's text with its type (constvars before the ';').
    const header = staged?.jaxpr.split('. let')[0] ?? '';
    for (const v of vars) expect(header).toContain(`${v.var}:${v.aval}`);
    expect(header.split(';')[0]).toContain(`${vars.at(-1)?.var}:f32[3]`);
  });
});
