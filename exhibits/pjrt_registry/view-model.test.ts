import { describe, expect, it } from 'vitest';
import { goldenLoader } from '../../frontend/src/test/fixtures';
import { outcome, setting, sourceLines, tried } from './view-model';

const golden = goldenLoader(import.meta.url);

describe('pjrt_registry view model', () => {
  it('reads the try of the golden run (FOO, dynamic plugins on)', () => {
    const t = tried(golden('foo_unknown'));
    expect(t?.branch.name).toBe('plugin not registered');
    expect(setting(t!)).toBe('PJRT_DEVICE="FOO", dynamic plugins on (PJRT_DYNAMIC_PLUGINS=1)');
    expect(outcome(t!)).toMatch(/^RuntimeError: No PjRtPlugin registered for: FOO\. Make sure/);
  });

  it('marks the branch lines and its condition in pjrt_registry.cpp', () => {
    const lines = sourceLines(tried(golden('foo_unknown'))!);
    expect(lines.length).toBe(173);
    const marked = (m: string) => lines.filter((l) => l.mark === m).map((l) => l.n);
    // GetPjRtPlugin's miss (49-59), reached from the dynamic plugin condition (77-78)
    expect(marked('branch')).toEqual([49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59]);
    expect(marked('condition')).toEqual([77, 78]);
    expect(lines[50]?.text).toContain('"No PjRtPlugin registered for: "');
  });

  it('shows nothing before the try', () => {
    const events = golden('foo_unknown');
    const at = events.findIndex((e) => e.type === 'pjrt_client_tried');
    expect(tried(events.slice(0, at))).toBeNull();
  });
});
