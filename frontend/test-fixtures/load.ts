/**
 * Loads the captured event streams (`*.jsonl` beside this file, written by `capture.py` from
 * real sandbox runs) and the truths computed in-process with JAX (`*.truth.json`), for vitest.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Event } from '../src/protocol';

const dir = fileURLToPath(new URL('.', import.meta.url));

/** The events of fixture `name` (`tracing-where`, `stations-mlp`, ...), in `seq` order. */
export function loadEvents(name: string): Event[] {
  return readFileSync(`${dir}${name}.jsonl`, 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as Event);
}

/** The truth JAX itself gives for fixture `name` (see `capture.py` for the fields). */
export function loadTruth<T>(name: string): T {
  return JSON.parse(readFileSync(`${dir}${name}.truth.json`, 'utf8')) as T;
}
