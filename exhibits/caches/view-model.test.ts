import { describe, expect, it } from 'vitest';
import type { Event } from '../../frontend/src/protocol';
import {
  LAYERS,
  PRESETS,
  barHeight,
  cachesModel,
  callSentence,
  callState,
  cellOf,
  counterRows,
  differing,
  jaxSilent,
  jaxprFor,
  outsideCompiles,
  persistentLine,
  sameLineNewObject,
  summary,
  summaryText,
} from './view-model';
import { fixtureLoader } from '../../frontend/src/test/fixtures';

// Captured from the real probe by fixtures/capture.py (never written by hand).
const load = fixtureLoader(import.meta.url);

describe('new_shape: compile, C++ hit, new shape compiles', () => {
  const events = load('new_shape');
  const model = cachesModel(events, events);

  it('reads the reset and every call', () => {
    expect(model.reset?.mode).toBe('calls');
    expect(model.calls.map((c) => c.layer)).toEqual(['compile', 'cpp', 'compile']);
    expect(model.current?.index).toBe(2);
  });

  it('cells per layer follow the probe and the legend', () => {
    const hit = model.calls[1]!;
    expect(LAYERS.map((l) => cellOf(hit, l))).toEqual(['hit', 'skipped', 'skipped', 'skipped', 'off']);
    const first = model.calls[0]!;
    expect(LAYERS.map((l) => cellOf(first, l))).toEqual(['miss', 'miss', 'miss', 'miss', 'off']);
  });

  it('bar height is proportional to compile time, zero for a hit', () => {
    const heights = model.calls.map((c) => barHeight(c, model.calls));
    expect(heights[1]).toBe(0);
    expect(Math.max(...heights)).toBe(60);
    expect(heights[0]).toBeGreaterThanOrEqual(3);
  });

  it('the diff marks the aval, and the jaxpr is the call’s own', () => {
    const last = model.calls[2]!;
    expect(differing(last).map((d) => [d.name, d.before, d.now])).toEqual([['x aval', 'f32[3]', 'f32[4]']]);
    expect(jaxprFor(last, model.calls)).toBe(last.jaxpr);
    // a C++ hit shows the jaxpr JAX reused: the first call's
    expect(jaxprFor(model.calls[1], model.calls)).toBe(model.calls[0]!.jaxpr);
    expect(callSentence(model.calls[1]!)).toContain('C++ fast path answered');
  });

  it('the stepper cursor decides current and pending calls; a pick overrides', () => {
    const cut = events.findIndex((e) => e.type === 'jit_call_observed');
    const early = cachesModel(events.slice(0, cut + 1), events);
    expect(early.current?.index).toBe(0);
    expect(callState(early.calls[2]!, early)).toBe('pending');
    const picked = cachesModel(events, events, 1);
    expect(picked.current?.index).toBe(1);
    expect(callState(picked.calls[2]!, picked)).toBe('reached');
  });

  it('the header totals count the calls the cursor reached, "of N" while some are pending', () => {
    const at = (k: number) => {
      let seen = 0;
      const cut = events.findIndex((e) => e.type === 'jit_call_observed' && ++seen === k);
      return cachesModel(events.slice(0, cut + 1), events);
    };
    // Each count is the fixture's own flags over the calls reached (JAX's traced/compiled).
    expect(at(1).reached.map((c) => [c.traced, c.compiled])).toEqual([[true, true]]);
    expect(summaryText(at(1))).toBe('1 of 3 calls · 1 traced · 1 compiled');
    expect(summaryText(at(2))).toBe('2 of 3 calls · 1 traced · 1 compiled');
    expect(summaryText(model)).toBe('3 calls · 2 traced · 2 compiled');
    // A call picked ahead of the cursor shows in detail but is not counted until reached.
    const first = events.indexOf(at(1).reached[0]!);
    const picked = cachesModel(events.slice(0, first + 1), events, 2);
    expect(picked.current?.index).toBe(2);
    expect(summaryText(picked)).toBe('1 of 3 calls · 1 traced · 1 compiled');
  });

  it('counter rows show before → after for the caches that moved', () => {
    const rows = counterRows(model.calls[0]!);
    const lower = rows.find((r) => r.name === 'pjit_lower')!;
    expect(lower.moved).toBe(true);
    expect(lower.misses).toMatch(/^\d+ → \d+ \(\+1\)$/);
    expect(counterRows(model.calls[1]!).some((r) => r.moved)).toBe(false);
    expect(summary(model.calls)).toEqual({ calls: 3, traces: 2, compiles: 2, byLayer: { compile: 2, cpp: 1 } });
  });
});

describe('committed: a new lowering JAX does not explain', () => {
  const events = load('committed');
  const model = cachesModel(events, events);
  it('is flagged silent, with the placement entry differing', () => {
    const c = model.calls[1]!;
    expect(c.cells['jaxpr']).toBe('hit');
    expect(jaxSilent(c)).toBe(true);
    expect(jaxSilent(model.calls[0]!)).toBe(false);
    expect(differing(c).map((d) => d.name)).toEqual(['x placement']);
    expect(callSentence(c)).toContain('traced jaxpr was reused');
  });
});

describe('numpy_input: the Python caches answer', () => {
  const model = cachesModel(load('numpy_input'), load('numpy_input'));
  it('is answered by the deepest cache that hit (lowering), not silent (no work)', () => {
    const c = model.calls[1]!;
    expect(c.cells['jaxpr']).toBe('hit');
    expect(c.cells['lowering']).toBe('hit');
    expect(c.layer).toBe('lowering');
    expect(c.traced).toBe(false);
    expect(callSentence(c)).toContain('nothing was traced, lowered or compiled');
    expect(jaxSilent(c)).toBe(false);
  });
  it('the jaxpr text is JAX’s printout over several lines', () => {
    expect(model.calls[0]!.jaxpr!.text.split('\n').length).toBeGreaterThan(2);
  });
});

describe('jit_in_loop (C05): same line, new function object', () => {
  const events = load('jit_in_loop');
  const model = cachesModel(events, events);
  it('every call compiles; from the second on, the same line is flagged', () => {
    expect(model.calls).toHaveLength(5);
    expect(model.calls.every((c) => c.layer === 'compile')).toBe(true);
    expect(sameLineNewObject(model.calls[0]!, model.calls)).toBe(false);
    expect(model.calls.slice(1).every((c) => sameLineNewObject(c, model.calls))).toBe(true);
    expect(model.calls[1]!.source?.line).toBe(8);
  });
});

describe('presets', () => {
  it('lists the probe’s presets (ids checked against probe.PRESETS in test_caches.py)', () => {
    expect(new Set(PRESETS.map((p) => p.id)).size).toBe(PRESETS.length);
  });
});

describe('persistent preset: the second call is read from disk', () => {
  const events = load('persistent');
  const model = cachesModel(events, events);
  const [first, second] = model.calls;

  it('says where the cache lives and what each call did on disk', () => {
    expect(model.reset?.persistent_enabled).toBe(true);
    expect(model.reset?.persistent_dir).toMatch(/jaxscope-cache-/);
    expect(first?.layer).toBe('compile');
    expect(second?.layer).toBe('persistent');
    expect(persistentLine(first!)).toBe(`miss: no file ${first!.persistent_key}-cache on disk; JAX compiled and wrote it`);
    expect(persistentLine(second!)).toBe(
      `hit: JAX read the executable from the file ${second!.persistent_key}-cache instead of compiling`,
    );
    expect(second!.persistent_key).toBe(first!.persistent_key);
    expect(callSentence(second!)).toContain('the persistent disk cache answered');
    expect(cellOf(second!, 'persistent')).toBe('hit');
    expect(differing(second!).map((d) => d.name)).toEqual(['in-memory caches']);
  });

  it('says when JAX did not write the entry (its own reason)', () => {
    const reason = "Not writing persistent cache entry for 'jit_f' because it uses host callbacks";
    const missed = { ...first!, persistent_not_written: reason };
    expect(persistentLine(missed)).toBe(
      `miss: no file ${first!.persistent_key}-cache on disk; JAX compiled it and did not write it: "${reason}"`,
    );
  });

  it('has nothing to say on disk for a call that did not consult it', () => {
    const plain = load('new_shape');
    for (const call of cachesModel(plain, plain).calls) expect(persistentLine(call)).toBeUndefined();
  });
});

describe('driver runs: JAX’s work outside the calls shown, and no call at all', () => {
  it('vmap/grad of a jitted g: the header counts the compiles outside the columns', () => {
    const events = load('vmap_of_jit');
    const model = cachesModel(events, events);
    const driver = model.driver!;
    const work = driver.outside.find((w) => w.function === 'g')!;
    // JAX's total (the fresh-process test checks it against jax_log_compiles) is the
    // timeline's compiles plus those outside it
    expect(work.compiles_total).toBe(summary(model.calls).compiles + work.compiles);
    expect(outsideCompiles(driver)).toBe(work.compiles);
    expect(summaryText(model)).toBe(
      `2 calls · 1 traced · 1 compiled · ${work.compiles} more compiles outside these calls`,
    );
    // while the cursor has not reached every column, only the reached calls are counted
    const first = events.findIndex((e) => e.type === 'jit_call_observed');
    expect(summaryText(cachesModel(events.slice(0, first + 1), events))).toBe('1 of 2 calls · 1 traced · 1 compiled');
    expect(driver.note).toMatch(/^the timeline does not show all of JAX's work/);
  });

  it('no jit call: the model carries the note, and counts nothing', () => {
    const events = load('eager_only');
    const model = cachesModel(events, events);
    expect(model.calls).toEqual([]);
    expect(outsideCompiles(model.driver)).toBe(0);
    expect(model.driver?.note).toMatch(/^no jitted call of your code was observed: .*What to try/);
  });

  it('a calls-mode run has no driver summary', () => {
    const events = load('new_shape');
    expect(cachesModel(events, events).driver).toBeUndefined();
    expect(outsideCompiles(undefined)).toBe(0);
  });
});
