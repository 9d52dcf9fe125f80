/**
 * How to run a recorded run again (the replay page of a standalone HTML file: design 0084): the
 * jaxscope release and the JAX it pins, read from the project's own `pyproject.toml` when the
 * frontend is built (not a second copy of the pins), and the `jaxscope run` command line that
 * reruns the recording's snippet with its options (one flag per `RunOptions` field, as
 * `jaxscope run --help` lists them: `backend/jaxscope/cli.py`'s `_option_flags`).
 */
import pyproject from '../../pyproject.toml?raw';
import { EXHIBIT_TABLE } from './gen/exhibits';
import type { RunOptions } from './protocol';
import { exhibitOptions } from './url-state';

export interface Pins {
  /** jaxscope's version (`[project] version`) */
  version: string;
  /** the `==` pins of `jax` and `jaxlib` among its dependencies, e.g. `jax==0.10.2` */
  jax: string[];
}

/** The version and the JAX pins of a `pyproject.toml` text. */
export function pinsOf(toml: string): Pins {
  const version = /^version\s*=\s*"([^"]+)"/m.exec(toml)?.[1] ?? '';
  const jax = [...toml.matchAll(/"(jax(?:lib)?==[^"\s;]+)"/g)].map((m) => m[1] ?? '');
  return { version, jax };
}

/** This build's pins (its `pyproject.toml`). */
export const PINS: Pins = pinsOf(pyproject);

/** `text` as one shell word: bare when it is plain, else single-quoted. */
export function shellWord(text: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(text) ? text : `'${text.replaceAll("'", `'\\''`)}'`;
}

/** The value of a `jaxscope run` flag for option `name` (a list as JSON; `--stack` T1,T2). */
function flagValue(name: string, value: unknown): string {
  if (name === 'stack' && Array.isArray(value)) return value.join(',');
  if (typeof value === 'string') return value;
  return JSON.stringify(value);
}

/** `jaxscope run <exhibit> <file> [--flag value ...] --html run.html`: the recorded run again. */
export function rerunCommand(exhibit: string, options: RunOptions, file = 'snippet.py'): string {
  const words = ['jaxscope', 'run', exhibit, file];
  for (const [name, value] of exhibitOptions(options, exhibit)) {
    const flag = `--${name.replaceAll('_', '-')}`;
    const text = flagValue(name, value);
    // argparse takes a separate word that starts with '-' (`-(1)`, not a plain negative number)
    // for a flag and refuses the command: such a value goes with its flag as one word.
    if (text.startsWith('-')) words.push(`${flag}=${shellWord(text)}`);
    else words.push(flag, shellWord(text));
  }
  words.push('--html', 'run.html');
  return words.join(' ');
}

/** The wheel `make wheel` builds for this version. */
export function wheelName(pins: Pins = PINS): string {
  return `jaxscope-${pins.version}-py3-none-any.whl`;
}

/** Whether exhibit `id` runs in the PyTorch/XLA venv (`jaxscope install-torch` makes it). */
export function needsTorch(id: string): boolean {
  return Object.hasOwn(EXHIBIT_TABLE, id) && EXHIBIT_TABLE[id]?.worker === 'torch';
}
