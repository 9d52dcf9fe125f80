/**
 * The inputs table folds an argument of many leaves (a model's parameters: gpt_stack's ~150
 * leaves made ~300 known/unknown flags in one list) into one row with its counts, and opening
 * it shows every leaf's flags. Small arguments (fixture mlp_loss: params' 4 leaves, x, y) are
 * shown as before.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { render } from 'svelte/server';
import { describe, expect, it } from 'vitest';
import type { Event } from '../../frontend/src/protocol';
import InputFlags from './InputFlags.svelte';
import { INPUT_GROUP_MIN, inputGroupSummary, inputGroups, inputRows, type InputRow, type JaxprSplit } from './view-model';

const dir = fileURLToPath(new URL('.', import.meta.url));
const events = readFileSync(`${dir}fixtures/mlp_loss.jsonl`, 'utf8')
  .split('\n')
  .filter((l) => l.trim() !== '')
  .map((l) => JSON.parse(l) as Event);
const split = events.find((e) => e.type === 'jaxpr_split') as JaxprSplit;
const rows = inputRows(split);

/** mlp_loss's rows with args[0] grown to `n` leaves (flags numbered as the probe numbers them). */
function manyRows(n: number): InputRow[] {
  const leaf = rows[0]!;
  const params = Array.from({ length: n }, (_, i) => ({ ...leaf, label: `args[0]['p${i}']` }));
  const all = [...params, ...rows.filter((r) => !r.label.startsWith('args[0]'))];
  return all.map((r, i) => ({ ...r, primal: i, tangent: all.length + i }));
}

const toggles = (html: string): string[] => [...html.matchAll(/data-testid="known-toggle-(\d+)"/g)].map((m) => m[1]!);

function html(rs: InputRow[], opened?: Set<string>): string {
  const props = {
    rows: rs,
    labels: rs.flatMap((r) => [`primal ${r.label}`]).concat(rs.map((r) => `tangent ${r.label}`)),
    disabled: false,
    rerunLocked: null,
    onToggle: () => {},
    ...(opened ? { opened } : {}),
  };
  return render(InputFlags, { props }).body;
}

describe('the inputs table of partial_eval', () => {
  it('shows small arguments leaf by leaf', () => {
    expect(inputGroups(rows).map((g) => [g.arg, g.rows.length, g.folded])).toEqual([
      ['args[0]', 4, false],
      ['args[1]', 1, false],
      ['args[2]', 1, false],
    ]);
    expect(toggles(html(rows))).toHaveLength(12);
  });

  it('folds 150 parameter leaves into one row, and opens them all', () => {
    const many = manyRows(150);
    const groups = inputGroups(many);
    expect(groups[0]!.folded).toBe(true);
    expect(INPUT_GROUP_MIN).toBeLessThanOrEqual(150);
    expect(inputGroupSummary(groups[0]!)).toBe('150 leaves · primal: 150 known · tangent: 150 unknown');
    const closed = html(many);
    expect(closed).toContain('data-testid="input-group-toggle-args[0]"');
    // only args[1] and args[2]'s flags while args[0] is folded
    expect(toggles(closed)).toEqual(['150', '302', '151', '303']);
    const open = toggles(html(many, new Set(['args[0]'])));
    expect(open).toHaveLength(2 * many.length);
    expect(new Set(open).size).toBe(2 * many.length);
  });
});
