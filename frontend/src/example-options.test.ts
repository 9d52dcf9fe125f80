import { describe, expect, it } from 'vitest';
import { KEPT_ACROSS_EXAMPLES, optionsForExample, setsName } from './example-options';
import { defaultRunOptions } from './protocol';
import type { RunOptions } from './protocol';

const PLAIN = 'import jax\n\ndef f(x):\n    return x * 2\n\nargs = (1.0,)\n';

function withOptions(extra: Partial<RunOptions>): RunOptions {
  return { ...defaultRunOptions(), ...extra } as RunOptions;
}

describe('optionsForExample', () => {
  it('marks stations target (a machine, not a program) as kept, and no option of the program', () => {
    expect(KEPT_ACROSS_EXAMPLES).toContain('target');
    for (const own of ['mesh', 'spec', 'in_axes', 'stack', 'calls', 'known', 'preset', 'steps']) {
      expect(KEPT_ACROSS_EXAMPLES).not.toContain(own);
    }
  });

  it('keeps the target the user chose when the example does not set it', () => {
    const next = optionsForExample(withOptions({ target: 'tpu-v5e' }), PLAIN);
    expect(next.target).toBe('tpu-v5e');
  });

  it('resets what overrides the previous example (a mesh, in_axes, a stack) to the defaults', () => {
    const next = optionsForExample(
      withOptions({ target: 'tpu-v5e', mesh: "((2, 4), ('x', 'y'))", in_axes: '(0, None)', stack: ['vmap', 'grad'] }),
      PLAIN,
    );
    expect(next).toEqual({ ...defaultRunOptions(), target: 'tpu-v5e' });
  });

  it('lets an example that sets the option itself win', () => {
    const source = `${PLAIN}target = "host"\n`;
    expect(optionsForExample(withOptions({ target: 'tpu-v5e' }), source)).toEqual(defaultRunOptions());
  });

  it('starts from the defaults when nothing was chosen', () => {
    expect(optionsForExample(defaultRunOptions(), PLAIN)).toEqual(defaultRunOptions());
  });
});

describe('setsName', () => {
  it('finds a module-level assignment, annotated or not, and nothing else', () => {
    expect(setsName('target = "host"\n', 'target')).toBe(true);
    expect(setsName('x = 1\ntarget: str = "host"\n', 'target')).toBe(true);
    expect(setsName('    target = 1\n', 'target')).toBe(false);
    expect(setsName('if target == 1:\n', 'target')).toBe(false);
    expect(setsName('targets = 1\n', 'target')).toBe(false);
  });
});
