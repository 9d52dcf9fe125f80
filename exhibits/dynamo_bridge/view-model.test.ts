import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { Event } from '../../frontend/src/protocol';
import { callRows, graphCards, outputs, regionRows, runSummary } from './view-model';

const golden = (name: string): Event[] =>
  readFileSync(new URL(`./golden/${name}.events.jsonl`, import.meta.url), 'utf8')
    .split('\n')
    .filter((line) => line.trim())
    .map((line) => JSON.parse(line) as Event);

describe('dynamo_bridge view model on the default golden (sin_cos)', () => {
  const events = golden('sin_cos');
  it('one FX graph, one XLA program under its hash', () => {
    const regions = regionRows(events);
    expect(regions.map((r) => r.kind)).toEqual(['xla']);
    expect(regions[0]?.label).toBe('XLA program 0');
    expect(regions[0]?.linesText).toBe('lines 9-10');
    expect(regions[0]?.hash).toMatch(/^[0-9a-f]{32}$/);
    expect(regions[0]?.code).toContain('torch.ops.aten.sin.default');
    const graphs = graphCards(events);
    expect(graphs.map((g) => [g.frame, g.reason, g.graphBreak])).toEqual([['f', 'return_value', false]]);
    expect(graphs[0]?.callCount).toBe(4);
    expect(graphs[0]?.lines).toEqual([9, 10]);
  });
  it('the first call compiles, the next replay the same hash', () => {
    const calls = callRows(events);
    expect(calls.map((c) => c.kind)).toEqual(['compiled', 'replayed', 'replayed']);
    const hash = regionRows(events)[0]?.hash.slice(0, 8);
    expect(calls.map((c) => c.launched)).toEqual([[hash], [hash], [hash]]);
    expect(calls[0]?.compiled).toEqual([hash]);
    expect(calls[0]?.compileTime).not.toBe('');
    expect(calls[1]?.compileTime).toBe('');
    expect(runSummary(events)).toEqual({ graphs: 1, breaks: 0, programs: 1, hostRegions: 0, replayedOnly: true });
    expect(outputs(events)?.close).toBe(true);
  });
});

describe('dynamo_bridge view model on a graph break (item_break)', () => {
  const events = golden('item_break');
  it('two programs with the .item() line on the host between them', () => {
    const regions = regionRows(events);
    expect(regions.map((r) => r.kind)).toEqual(['xla', 'host', 'xla']);
    expect(regions.map((r) => r.label)).toEqual(['XLA program 0', 'host', 'XLA program 1']);
    expect(regions[1]?.linesText).toBe('line 10');
    expect(regions[1]?.what).toBe('graph break: Unsupported Tensor.item() call with capture_scalar_outputs=False');
    expect(regions[1]?.code).toBe('peak = h.max().item()');
    const graphs = graphCards(events);
    expect(graphs.map((g) => g.graphBreak)).toEqual([true, false]);
    expect(graphs[0]?.breakLine).toBe(10);
    expect(graphs[1]?.frame).toMatch(/^torch_dynamo_resume_in_f_at_/);
    expect(runSummary(events)).toEqual({ graphs: 2, breaks: 1, programs: 2, hostRegions: 1, replayedOnly: true });
    expect(callRows(events)[1]?.launched.length).toBe(2);
  });
});
