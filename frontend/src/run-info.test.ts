import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { Event, RunStarted } from './protocol';
import { torchRunInfo } from './run-info';

function golden(path: string): Event[] {
  return readFileSync(new URL(path, import.meta.url), 'utf8')
    .split('\n')
    .filter((line) => line.trim())
    .map((line) => JSON.parse(line) as Event);
}

function started(events: readonly Event[]): RunStarted {
  return events.find((e): e is RunStarted => e.type === 'run_started')!;
}

describe('the run bar of a torch run', () => {
  it("names the worker's PJRT_DEVICE for an exhibit that uses the worker's client", () => {
    const events = golden('../../exhibits/lazy_tensor/golden/mlp_item.events.jsonl');
    expect(started(events).backend).toBe('CPU');
    expect(torchRunInfo(started(events), events)).toBe('torch_xla 2.9.0 · PJRT_DEVICE=CPU');
  });
  it("names the string a pjrt_registry try used, not the worker's CPU", () => {
    const events = golden('../../exhibits/pjrt_registry/golden/foo_unknown.events.jsonl');
    const run = started(events);
    // The worker started with PJRT_DEVICE=CPU; the try created its client with FOO.
    expect(run.backend).toBe('CPU');
    expect(torchRunInfo(run, events)).toBe('torch_xla 2.9.0 · tried PJRT_DEVICE=FOO');
    expect(torchRunInfo(run, [run])).toBe('torch_xla 2.9.0 · the try creates its own client');
  });
  it('an unset or empty string is said so', () => {
    const events = golden('../../exhibits/pjrt_registry/golden/foo_unknown.events.jsonl');
    const run = started(events);
    const tried = events.find((e) => e.type === 'pjrt_client_tried')!;
    const withEnv = (value: string | null): Event[] => [
      run,
      { ...tried, env: { ...(tried as { env: Record<string, string | null> }).env, PJRT_DEVICE: value } } as Event,
    ];
    expect(torchRunInfo(run, withEnv(null))).toBe('torch_xla 2.9.0 · tried PJRT_DEVICE unset');
    expect(torchRunInfo(run, withEnv(''))).toBe('torch_xla 2.9.0 · tried PJRT_DEVICE=""');
  });
});
