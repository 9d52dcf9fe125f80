/**
 * The stage names the page shows (issue 31, item 5): a torch run's stages in torch_xla's words,
 * never JAX's "trace"; JAX's stages by their own names (the e2e tests read "trace" in the
 * progress of a JAX run).
 */
import { describe, expect, it } from 'vitest';
import schema from './gen/protocol.schema.json';
import { STAGE_WORDS, stageWords } from './stage-words';

/** The protocol's `Stage` values, from the generated schema (StageStarted.stage). */
function stages(): string[] {
  const defs = (schema as { $defs: Record<string, { properties?: Record<string, { enum?: string[] }> }> }).$defs;
  const values = defs['StageStarted']?.properties?.['stage']?.enum;
  if (!values) throw new Error('StageStarted.stage has no enum');
  return values;
}

describe('stage words', () => {
  it("names every stage of the protocol, JAX's as they are", () => {
    expect(Object.keys(STAGE_WORDS).sort()).toEqual(stages().sort());
    for (const s of ['load', 'trace', 'lower', 'compile', 'run', 'call'] as const) expect(stageWords(s)).toBe(s);
  });

  it("says a torch run's stages in torch_xla's words", () => {
    expect(stageWords('client')).toBe('PJRT client');
    expect(stageWords('lazy_trace')).toBe('lazy tracing');
    expect(stageWords('sync')).toBe('sync (compile, execute)');
    expect(stageWords('steps')).toBe('training steps (lazy tracing, sync)');
    for (const s of ['client', 'lazy_trace', 'sync', 'steps'] as const) {
      expect(stageWords(s)).not.toMatch(/\b(trace|lower|jit)\b/);
    }
  });
});
