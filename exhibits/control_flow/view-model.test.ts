import { describe, expect, it } from 'vitest';
import type { Event } from '../../frontend/src/protocol';
// Events the probe emitted (exhibits/control_flow/examples, captured in-process; the semantics
// events' jaxprs dropped for size).
import fixture from './fixture-events.json';
import {
  apiLabel,
  controlFlowModel,
  leafRows,
  pathText,
  plainFigures,
  printCount,
  typeDifference,
  typeText,
  unrollRows,
  verdictText,
  type CarryChecked,
} from './view-model';

const runs = fixture as unknown as Record<string, Event[]>;
const events = (name: string): Event[] => {
  const e = runs[name];
  if (e === undefined) throw new Error(name);
  return e;
};
const only = (name: string): CarryChecked => {
  const m = controlFlowModel(events(name), events(name));
  expect(m.checks).toHaveLength(1);
  return m.checks[0] as CarryChecked;
};
const aval = (dtype: string, shape: number[], weak = false) => ({
  dtype,
  shape,
  weak_type: weak,
  short: `${dtype === 'float32' ? 'f32' : 'i32'}[${shape.join(',')}]`,
});

describe('controlFlowModel', () => {
  it('walks the checks with the cursor and reads the jaxpr from all events', () => {
    const all = events('fori_power');
    const firstCheck = all.findIndex((e) => e.type === 'carry_checked');
    const before = controlFlowModel(all.slice(0, firstCheck), all);
    expect(before.checks).toHaveLength(0);
    expect(before.current).toBeUndefined();
    expect(before.allChecks).toHaveLength(1);
    expect(before.staged?.type).toBe('jaxpr_staged');
    const after = controlFlowModel(all, all);
    expect(after.current?.index).toBe(0);
    expect(after.shown.map((s) => s.topic)).toContain('unroll_hlo');
  });

  it('counts the prints of the trace stage and of the run stage apart', () => {
    const text = 'tracing step\n';
    const prints: Event[] = [
      { type: 'stdout_printed', text, stage: 'trace', call_index: null, seq: 1, run_id: 'r' },
    ];
    const m = controlFlowModel(prints, prints);
    expect(printCount(m.tracePrints)).toBe(1);
    expect(printCount(m.runPrints)).toBe(0);
    expect(printCount('a\nb\n')).toBe(2);
    expect(printCount('a\nb')).toBe(2);
  });

  it('honours a picked check only when it was reached', () => {
    const all = events('switch_branches');
    expect(controlFlowModel(all, all, 0).current?.index).toBe(0);
    expect(controlFlowModel(all, all, 7).current?.index).toBe(0);
  });
});

describe('a rejected scan carry (C13)', () => {
  const c = only('C13_scan_carry_broken');
  it('names the leaf that differs and keeps JAX message', () => {
    expect(apiLabel(c)).toBe('lax.scan');
    expect(c.ok).toBe(false);
    expect(verdictText(c)).toBe('JAX raised TypeError at .n_pos');
    expect(c.message).toContain('state.n_pos has type int32[]');
    const rows = leafRows(c);
    expect(rows.map((r) => r.path)).toEqual(['.x', '.dt', '.n_pos']);
    expect(rows.map((r) => r.differs)).toEqual([false, false, true]);
    expect(rows[2]?.differences).toEqual([null, 'dtype']);
    expect(rows[0]?.differences).toEqual([null, null]);
  });
});

describe('a weak-typed init JAX promoted (C13)', () => {
  const c = only('C13_weak_carry_broken');
  it('shows init, carry in and carry out, with the promotion', () => {
    expect(c.columns).toEqual(['init', 'carry in', 'carry out']);
    expect(verdictText(c)).toContain('promoting the weak-typed init .n_pos');
    const n = leafRows(c)[2];
    expect(n?.leaf.promoted).toBe(true);
    expect(n?.leaf.types.map(typeText)).toEqual(['~i32[]', 'f32[]', 'f32[]']);
    // compared from "carry in": nothing differs after the promotion
    expect(n?.differences).toEqual([null, null, null]);
    expect(c.eqn_carry_in).toEqual(['f32[2]', 'f32[]']);
  });
});

describe('switch and fori_loop', () => {
  it('labels them as the user wrote them', () => {
    const sw = only('switch_branches');
    expect(apiLabel(sw)).toBe('lax.switch');
    expect(sw.columns).toEqual(['branch 0', 'branch1', 'branch2']);
    expect(pathText(sw.leaves[0]?.path ?? 'x')).toBe('(root)');
    const fori = only('fori_power');
    expect(apiLabel(fori)).toBe('lax.fori_loop → scan');
    expect(verdictText(fori)).toBe('JAX accepted it: every leaf has the same type on both sides');
  });
});

describe('formatting helpers', () => {
  it('names the part of a type that differs', () => {
    expect(typeDifference(aval('int32', []), aval('float32', []))).toBe('dtype');
    expect(typeDifference(aval('float32', [2]), aval('float32', [3]))).toBe('shape');
    expect(typeDifference(aval('float32', []), aval('float32', [], true))).toBe('weak type');
    expect(typeDifference(aval('float32', []), aval('float32', []))).toBeNull();
    expect(typeDifference(aval('float32', []), null)).toBe('missing');
    expect(typeText(null)).toBe('—');
  });

  it('tabulates the unroll figures', () => {
    const shown = controlFlowModel(events('fori_power'), events('fori_power')).shown;
    const unroll = shown.find((s) => s.topic === 'unroll_hlo');
    expect(unroll).toBeDefined();
    const rows = unrollRows(unroll?.figures ?? {});
    expect(rows.map((r) => r.unroll)).toEqual([1, 4]);
    expect(rows[1]!.ops).toBeGreaterThan(rows[0]!.ops);
    expect(rows[0]!.sine).toBe(1);
    // the body's copies in one fusion match unroll; the whole program may count more
    expect(rows.map((r) => r.sineFused)).toEqual([1, 4]);
    expect(rows[1]!.sine).toBeGreaterThanOrEqual(rows[1]!.sineFused);
    const fori = shown.find((s) => s.topic === 'fori_static_scan');
    expect(plainFigures(fori!)).toEqual([
      ['x', 2],
      ['grad', 12],
    ]);
  });
});
