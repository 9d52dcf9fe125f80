/**
 * Reading an exhibit's captured event fixtures (``exhibits/<id>/fixtures/<name>.jsonl``, one
 * protocol event per line, written by that exhibit's ``fixtures/capture.py`` from the real probe,
 * never by hand) and its golden event streams (``exhibits/<id>/golden/<name>.events.jsonl``) in
 * vitest.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Event } from '../protocol';

/** ``load(name)``: the events of ``fixtures/<name>.jsonl`` next to the test file at ``testUrl``
 * (pass ``import.meta.url``). */
export function fixtureLoader(testUrl: string): (name: string) => Event[] {
  const dir = fileURLToPath(new URL('./fixtures/', testUrl));
  return (name: string) =>
    readFileSync(`${dir}${name}.jsonl`, 'utf8')
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => JSON.parse(l) as Event);
}

/** ``load(name)``: the events of ``golden/<name>.events.jsonl`` next to the test file at
 * ``testUrl`` (pass ``import.meta.url``): an exhibit's golden event stream, recorded through the
 * real sandbox with ``jaxscope run ID examples/<name>.py --json`` (docs/adding-an-exhibit.md). */
export function goldenLoader(testUrl: string): (name: string) => Event[] {
  const dir = fileURLToPath(new URL('./golden/', testUrl));
  return (name: string) =>
    readFileSync(`${dir}${name}.events.jsonl`, 'utf8')
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => JSON.parse(l) as Event);
}
