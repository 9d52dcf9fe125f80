/**
 * Two long jaxprs that differ throughout: the alignment is bounded (jsdiff's timeout), so the
 * compare view opens in seconds, not minutes (10,000 eqns took 22 s structurally and 80 s line
 * by line before the bound), with every line in place and `approximate` set (the view says so).
 */
import { describe, expect, it } from 'vitest';
import { alphabeticName } from './jaxpr-normalise';
import { countRows, jaxprRows, textRows } from './structural-diff';

/** A chain of `n` unary eqns, the k-th of primitive `prim(k)`, named as JAX names them. */
function chain(n: number, prim: (k: number) => string): string {
  const lines = ['{ lambda ; a:f32[3]. let'];
  for (let k = 1; k <= n; k++) lines.push(`    ${alphabeticName(k)}:f32[3] = ${prim(k)} ${alphabeticName(k - 1)}`);
  lines.push(`  in (${alphabeticName(n)},) }`);
  return lines.join('\n');
}

describe('long jaxprs', () => {
  const n = 10_000;
  const a = chain(n, (k) => (k % 2 ? 'sin' : 'cos'));
  const b = chain(n, (k) => (k % 3 ? 'sin' : 'exp'));

  it('compares a 10,000-eqn jaxpr with itself exactly', () => {
    const note = { approximate: false };
    const counts = countRows(jaxprRows(a, a, note));
    expect([counts.same, counts.changed, note.approximate]).toEqual([n + 2, 0, false]);
  });

  it('compares two that differ throughout in bounded time, by position, and says so', () => {
    for (const rowsOf of [jaxprRows, textRows]) {
      const note = { approximate: false };
      const start = performance.now();
      const rows = rowsOf(a, b, note);
      expect(performance.now() - start).toBeLessThan(15_000);
      expect(note.approximate).toBe(true);
      expect(rows.filter((r) => r.a !== null).map((r) => r.aText)).toEqual(a.split('\n'));
      expect(rows.filter((r) => r.b !== null).map((r) => r.bText)).toEqual(b.split('\n'));
    }
  }, 60_000);
});
