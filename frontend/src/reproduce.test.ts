import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { PINS, needsTorch, pinsOf, rerunCommand, shellWord, wheelName } from './reproduce';

const root = fileURLToPath(new URL('../../', import.meta.url));

describe('the pins a recording names', () => {
  it("are the project's own: pyproject's version and jax pins, the same as constraints.txt's", () => {
    expect(PINS.version).toMatch(/^\d+\.\d+\.\d+/);
    expect(PINS.jax.map((p) => p.split('==')[0])).toEqual(['jax', 'jaxlib']);
    // constraints.txt is the project's other pin file (pip install -c): the two must agree.
    const constraints = readFileSync(`${root}constraints.txt`, 'utf8').split('\n').map((l) => l.trim());
    for (const pin of PINS.jax) expect(constraints).toContain(pin);
    expect(wheelName()).toBe(`jaxscope-${PINS.version}-py3-none-any.whl`);
  });

  it('reads a pyproject text', () => {
    const toml = '[project]\nname = "x"\nversion = "1.2.3"\ndependencies = [\n  "jax==0.9.0",\n  "jaxlib==0.9.0",\n  "jaxtyping>=1",\n]\n';
    expect(pinsOf(toml)).toEqual({ version: '1.2.3', jax: ['jax==0.9.0', 'jaxlib==0.9.0'] });
  });
});

describe('the rerun command', () => {
  it('is the plain command for default options', () => {
    expect(rerunCommand('tracing', { calls: [], known: null })).toBe('jaxscope run tracing snippet.py --html run.html');
  });

  it("gives each option of the exhibit a flag, as `jaxscope run --help` names them, quoted for a shell", () => {
    expect(rerunCommand('partial_eval', { calls: [], known: [true, false] })).toBe(
      "jaxscope run partial_eval snippet.py --known '[true,false]' --html run.html",
    );
    expect(rerunCommand('transform_order', { calls: [], known: null, stack: ['vmap', 'grad'] })).toBe(
      'jaxscope run transform_order snippet.py --stack vmap,grad --html run.html',
    );
    expect(rerunCommand('vmap', { calls: [], known: null, in_axes: "(0, None)" })).toBe(
      "jaxscope run vmap snippet.py --in-axes '(0, None)' --html run.html",
    );
    // an option another exhibit reads is not this run's
    expect(rerunCommand('tracing', { calls: [], known: [true] })).toBe('jaxscope run tracing snippet.py --html run.html');
  });

  it('quotes a quote', () => {
    expect(shellWord("P('x', None)")).toBe(`'P('\\''x'\\'', None)'`);
    expect(shellWord('a.py')).toBe('a.py');
  });

  it('gives a value that starts with a dash to its flag with =, which argparse would take for a flag', () => {
    // `jaxscope run vmap snippet.py --out-axes '-(1)'`: argparse says "expected one argument"
    expect(rerunCommand('vmap', { calls: [], known: null, out_axes: '-(1)' })).toBe(
      "jaxscope run vmap snippet.py --out-axes='-(1)' --html run.html",
    );
    expect(rerunCommand('vmap', { calls: [], known: null, in_axes: '--help' })).toBe(
      'jaxscope run vmap snippet.py --in-axes=--help --html run.html',
    );
    expect(rerunCommand('vmap', { calls: [], known: null, in_axes: '0' })).toBe(
      'jaxscope run vmap snippet.py --in-axes 0 --html run.html',
    );
  });

  it('says when the PyTorch/XLA venv is needed', () => {
    expect(needsTorch('lazy_tensor')).toBe(true);
    expect(needsTorch('tracing')).toBe(false);
    expect(needsTorch('no_such')).toBe(false);
  });
});
