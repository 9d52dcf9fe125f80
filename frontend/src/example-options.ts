/**
 * The run options a picked example starts from. Most options override what the example's code
 * defines (a `mesh`, `in_axes` or transform stack typed into the view for the previous example),
 * so a new example starts from the defaults. An option marked `x-kept-across-examples` in its
 * exhibit's options model (`exhibits/<id>/options.py`, e.g. stations' `target`: the machine the
 * program is compiled for, not part of the program) keeps the user's value, unless the example
 * sets it itself: a top-level assignment of that name in its source.
 */
import optionsSchema from './gen/run-options.schema.json';
import type { RunOptions } from './protocol';
import { defaultRunOptions } from './protocol';

const PROPERTIES = optionsSchema.properties as Record<string, Record<string, unknown>>;

/** The options a picked example does not reset (`x-kept-across-examples` in the schema). */
export const KEPT_ACROSS_EXAMPLES: readonly string[] = Object.entries(PROPERTIES)
  .filter(([, schema]) => schema['x-kept-across-examples'] === true)
  .map(([name]) => name);

/** Whether `source` assigns `name` at module level (`target = ...`, `target: str = ...`). */
export function setsName(source: string, name: string): boolean {
  return new RegExp(`^${name}\\s*(:[^=\\n]*)?=(?!=)`, 'm').test(source);
}

/** The options to run the example `source` with after `previous`: the defaults, keeping each
 * option of `KEPT_ACROSS_EXAMPLES` that the example does not set. */
export function optionsForExample(previous: RunOptions, source: string): RunOptions {
  const next = defaultRunOptions() as unknown as Record<string, unknown>;
  const before = previous as unknown as Record<string, unknown>;
  for (const name of KEPT_ACROSS_EXAMPLES) {
    if (before[name] !== undefined && before[name] !== null && !setsName(source, name)) next[name] = before[name];
  }
  return next as unknown as RunOptions;
}
