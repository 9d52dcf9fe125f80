import { describe, expect, it } from 'vitest';
import { goldenLoader } from '../../frontend/src/test/fixtures';
import { argTables, findingLines, findings, findingsPending, steadyExecutables, stepRows } from './view-model';
const golden = goldenLoader(import.meta.url);

describe('review view model on the golden streams', () => {
  it('lists the default example’s findings in line order, each with a fix', () => {
    const found = findings(golden('mlp_step')) ?? [];
    expect(found.map((f) => f.kind)).toEqual(['BakedConstant', 'JitInLoop', 'DeviceToHost', 'HostToDevice']);
    expect(found.map((f) => f.line)).toEqual([14, 20, 22, 23]);
    expect(found.every((f) => f.fix.length > 0)).toBe(true);
    expect(findingLines(found)).toEqual([14, 20, 22, 23]);
  });

  it('shows the steps: five executables per step, the jit compiled each step', () => {
    const events = golden('mlp_step');
    const rows = stepRows(events);
    expect(rows.map((r) => r.executables)).toEqual([5, 5]);
    expect(rows[1]?.compiled).toBe('jit(loss_fn)');
    expect(steadyExecutables(events)).toBe(5);
    expect(steadyExecutables(events.slice(0, 5))).toBeNull();
  });

  it('gives the fixed step no finding, one executable, and lr static', () => {
    const events = golden('mlp_step_fixed');
    expect(findings(events)).toEqual([]);
    expect(steadyExecutables(events)).toBe(1);
    const [table] = argTables(events);
    expect(table?.args.map((a) => [a.name, a.static])).toEqual([
      ['params', false],
      ['x', false],
      ['y', false],
      ['noise', false],
      ['lr', true],
    ]);
  });

  it('shows the tracer error as the one finding, and no table', () => {
    const events = golden('loss_branch');
    expect(findings(events)?.map((f) => [f.kind, f.line])).toEqual([['TracerBoolConversion', 14]]);
    expect(argTables(events)).toEqual([]);
    expect(findings([])).toBeNull();
  });

  it('says why there are no findings: running, failed, or an earlier event', () => {
    const events = golden('mlp_step');
    expect(findingsPending(events, false)).toBeNull();
    const before = events.filter((e) => e.type !== 'review_findings_found' && e.type !== 'run_finished');
    expect(findingsPending(before, true)).toBe('running');
    expect(findingsPending(before, false)).toBe('earlier');
    const failed = { ...events.at(-1)!, type: 'run_failed' } as unknown as (typeof events)[number];
    expect(findingsPending([...before, failed], false)).toBe('failed');
  });
});
