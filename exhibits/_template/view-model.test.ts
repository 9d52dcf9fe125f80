import { describe, expect, it } from 'vitest';
import { goldenLoader } from '../../frontend/src/test/fixtures';
import { sides } from './view-model';

const golden = goldenLoader(import.meta.url);

describe('template view model', () => {
  it('reads the arguments, then the outputs, of the golden run', () => {
    const events = golden('affine');
    const [ins, outs] = sides(events);
    expect(ins?.title).toBe('Arguments');
    expect(ins?.rows.map((r) => r.path)).toEqual(["args[0]['b']", "args[0]['w']", 'args[1]', 'args[2]']);
    expect(ins?.rows.map((r) => r.aval.short)).toEqual(['f32[2]', 'f32[3,2]', 'f32[3]', 'f32[]']);
    // 2.0, a Python float, is the only weakly typed argument
    expect(ins?.weak).toBe(1);
    expect(outs?.title).toBe('Outputs');
    expect(outs?.rows.map((r) => `${r.path}: ${r.aval.short}`)).toEqual(["out['norm']: f32[]", "out['y']: f32[2]"]);
    expect(outs?.weak).toBe(0);
  });

  it('shows only what the stepper reached', () => {
    const events = golden('affine');
    const firstRead = events.findIndex((e) => e.type === 'template_avals_read');
    expect(sides(events.slice(0, firstRead)).length).toBe(0);
    expect(sides(events.slice(0, firstRead + 1)).map((s) => s.side)).toEqual(['in']);
  });
});
