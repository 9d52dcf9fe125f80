/**
 * The selected row of a `ui-rows` table (the tracing exhibit's eqn stream, StepsTable, the jaxpr
 * structure) is marked more strongly than the rows of its user line, hovered or not, in both
 * themes (the rules use the theme's variables). A review of gpt_stack saw the clicked eqn, still
 * under the pointer, at the 10% hover tint while its same-line neighbours had 45%: the hover rule
 * outranked `.ui-rows tr.selected`. Checked here on ui.css itself with the cascade's
 * specificity and source order.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const CSS = readFileSync(fileURLToPath(new URL('./ui.css', import.meta.url)), 'utf8').replace(/\/\*[\s\S]*?\*\//g, '');

interface Rule {
  selector: string;
  body: string;
  order: number;
}

const RULES: Rule[] = [...CSS.matchAll(/([^{}]+)\{([^{}]*)\}/g)].flatMap((m, order) =>
  m[1]!
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')
    .map((selector) => ({ selector, body: m[2]!, order })),
);

/** [ids, classes + attributes + pseudo-classes, types] (`:not(x)` counts as x). */
function specificity(selector: string): [number, number, number] {
  const s = selector.replace(/:not\(([^)]*)\)/g, ' $1');
  const ids = (s.match(/#[\w-]+/g) ?? []).length;
  const classes = (s.match(/\.[\w-]+|\[[^\]]+\]|:(?!:)[\w-]+/g) ?? []).length;
  const types = (s.replace(/[.#:[][^\s>+~]*/g, ' ').match(/(^|[\s>+~])[a-z][\w-]*/gi) ?? []).length;
  return [ids, classes, types];
}

/** Whether `selector` matches a `tr` with `classes` in a `.ui-rows` table's tbody (hovered or
 * not), as far as these rules go: every class, tag and pseudo-class it names must hold. */
function matches(selector: string, classes: readonly string[], hover: boolean): boolean {
  if (/::/.test(selector) || /focus/.test(selector)) return false;
  const parts = selector.split(/\s+|>/).filter((p) => p !== '');
  const last = parts[parts.length - 1]!;
  if (!/^tr\b/.test(last)) return false;
  if (!parts.slice(0, -1).every((p) => p === '.ui-rows' || p === 'tbody' || p === '.ui-table')) return false;
  if (/:hover/.test(last) && !hover) return false;
  const nots = [...last.matchAll(/:not\(\.([\w-]+)\)/g)].map((m) => m[1]!);
  if (nots.some((c) => classes.includes(c))) return false;
  const wanted = [...last.replace(/:not\([^)]*\)/g, '').matchAll(/\.([\w-]+)/g)].map((m) => m[1]!);
  return wanted.every((c) => classes.includes(c));
}

/** The background a row gets: the winning rule's value (specificity, then source order). */
function background(classes: readonly string[], hover: boolean): string | undefined {
  const winners = RULES.filter((r) => /(^|;)\s*background\s*:/.test(r.body) && matches(r.selector, classes, hover)).sort(
    (a, b) => {
      const [x, y] = [specificity(a.selector), specificity(b.selector)];
      for (let i = 0; i < 3; i++) if (x[i] !== y[i]) return x[i]! - y[i]!;
      return a.order - b.order;
    },
  );
  const body = winners[winners.length - 1]?.body;
  return body && /background\s*:\s*([^;]+)/.exec(body)?.[1]?.trim();
}

/** The highlight's strength in percent: 100 for the full colour, the mix's share, 0 otherwise. */
function strength(bg: string | undefined): number {
  if (bg === 'var(--highlight-bg)') return 100;
  const mix = /color-mix\(in srgb, var\(--highlight-bg\) (\d+)%/.exec(bg ?? '');
  return mix ? Number(mix[1]) : 0;
}

describe('the selected row outranks its same-line neighbours', () => {
  it('the selected row keeps the full highlight under the pointer', () => {
    expect(strength(background(['selected'], false))).toBe(100);
    expect(strength(background(['selected'], true))).toBe(100);
  });

  it('same-line rows are lighter than the selected one, hovered or not', () => {
    const sameLine = strength(background(['same-line'], false));
    expect(sameLine).toBeGreaterThan(0);
    expect(sameLine).toBeLessThan(strength(background(['selected'], false)));
    expect(strength(background(['same-line'], true))).toBeLessThan(strength(background(['selected'], true)));
  });

  it('only the selected row has the accent bar', () => {
    const bars = RULES.filter((r) => /box-shadow\s*:\s*inset 3px 0 0 var\(--accent\)/.test(r.body)).map((r) => r.selector);
    expect(bars.some((s) => s.includes('tr.selected'))).toBe(true);
    expect(bars.some((s) => s.includes('same-line'))).toBe(false);
  });
});
