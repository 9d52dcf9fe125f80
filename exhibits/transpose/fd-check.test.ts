/**
 * The gradient check's verdict on events captured from the real probe (fixtures/capture.py, real
 * user cases from cases/): the view leads with the headline, a disagreement never reads as
 * agreement, the elements left out are named, and every gradient value prints in its dtype's
 * digits exactly as numpy prints it (fixtures/<name>.numpy.json: numpy's str of each element of
 * jax.grad(f), computed by numpy in the capture script, not by jaxscope).
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { applyItemsSent, nextListRange, type ItemsSent } from '../../frontend/src/store/list-ranges';
import { fixtureLoader } from '../../frontend/src/test/fixtures';
import {
  arrayText,
  checkNote,
  fdDisagreements,
  fdNotCompared,
  firstDisagreementRow,
  gradientRows,
  leavesToCome,
  verdictView,
  type GradientChecked,
} from './view-model';

const load = fixtureLoader(import.meta.url);
const checkOf = (name: string): GradientChecked => load(name)[0] as GradientChecked;
const numpyPrinting = (name: string): string[][] =>
  JSON.parse(readFileSync(fileURLToPath(new URL(`./fixtures/${name}.numpy.json`, import.meta.url)), 'utf8')) as string[][];

/** The numbers of an arrayText printout, in order. */
const numbersOf = (text: string): string[] => text.replace(/[[\]\n]/g, ' ').split(/[ ,]+/).filter((t) => t !== '');

describe('FD03 (jax-ml/jax#39899): a float16 norm that overflows gives a silently zero gradient', () => {
  const check = checkOf('norm_float16_broken');

  it('leads with a disagreement naming the first element, the zero gradient and the finite difference', () => {
    const v = verdictView(check);
    expect(v?.verdict).toBe('disagree');
    expect(v?.label).toBe('disagrees with the finite differences');
    expect(v?.headline).toContain('first at args[0][0, 0]: the gradient is 0.0 where the finite difference is 0.333333');
    expect(v?.headline).toContain('the same walk in float64 gives 0.333333, so float16 arithmetic lost it');
  });

  it('lists every element as disagreeing, at float16 precision, and marks the leaf', () => {
    const { rows, more } = fdDisagreements(check);
    expect(rows).toHaveLength(9);
    expect(more).toBe(0);
    expect(rows[0]).toMatchObject({ where: 'args[0][0, 0]', gradient: '0.0', fd: '0.3333333', kind: 'zero' });
    expect(rows[0]?.allowed).toContain('(float16)');
    expect(firstDisagreementRow(check)).toBe('0:0');
  });

  it('prints the float16 gradient as numpy does', () => {
    const [row] = gradientRows(check);
    expect(numbersOf(row?.walk ?? '')).toEqual(numpyPrinting('norm_float16_broken')[0]);
  });
});

describe('FD03 fixed: the norm taken in float32, the float16 gradient agrees at float16 precision', () => {
  const check = checkOf('norm_float16_fixed');

  it('agrees, and says at which precision', () => {
    expect(verdictView(check)).toMatchObject({ verdict: 'agree', label: 'agrees with the finite differences' });
    expect(check.headline).toContain('within float16 precision');
    expect(fdDisagreements(check).rows).toEqual([]);
    expect(firstDisagreementRow(check)).toBeNull();
    // the upcast function still computes in float32 inside (the cast): its step is float32's
    expect(checkNote(check)).toContain('f still computes in float32 inside');
  });

  it('prints 0.333251953125 as 0.3333, the digits numpy prints for a float16', () => {
    const [row] = gradientRows(check);
    const numpy = numpyPrinting('norm_float16_fixed')[0] ?? [];
    expect(numpy[0]).toBe('0.3333');
    expect(numbersOf(row?.walk ?? '')).toEqual(numpy);
    expect(arrayText([0.333251953125], 100, 'float16')).toBe('[0.3333]');
    // the same value as a float32 or float64 would print more digits
    expect(arrayText([0.333251953125], 100, 'float32')).toBe('[0.333252]');
  });
});

describe('C22 (jnp.where over a sqrt): a NaN gradient where the finite difference is 0', () => {
  it('broken: disagrees at args[0][0], the kink at 0 left out, not counted as agreement', () => {
    const check = checkOf('where_sqrt_broken');
    expect(verdictView(check)?.verdict).toBe('disagree');
    expect(check.headline).toContain('first at args[0][0]: the gradient is nan where the finite difference is 0.0');
    expect(fdDisagreements(check).rows.map((r) => [r.where, r.gradient, r.fd, r.kind])).toEqual([['args[0][0]', 'nan', '0', 'nonfinite']]);
    const left = fdNotCompared(check);
    expect(left.rows.map((r) => [r.where, r.gradient, r.fd])).toEqual([['args[0][1]', 'nan', 'kink']]);
    const [row] = gradientRows(check);
    expect(numbersOf(row?.walk ?? '')).toEqual(numpyPrinting('where_sqrt_broken')[0]);
  });

  it('fixed: the kink at 0 makes it incomplete, never agreement', () => {
    const check = checkOf('where_sqrt_fixed');
    const v = verdictView(check);
    expect(v?.verdict).toBe('incomplete');
    expect(v?.label).toBe('not fully checked');
    expect(v?.headline).toContain('first args[0][1]: a kink');
    expect(v?.headline).not.toMatch(/^The gradient agrees/);
  });
});

describe('FD08 (google/flax#2384): Dense layers computing in bfloat16', () => {
  const check = checkOf('flax_bf16_compute');

  it('says which inputs f rounds inside instead of holding them to meaningless differences', () => {
    expect(verdictView(check)?.verdict).toBe('incomplete');
    expect(check.fd_dtype).toBe('bfloat16');
    const left = fdNotCompared(check);
    expect(left.rows.length).toBeGreaterThan(0);
    expect(left.rows.some((r) => r.fd === 'f rounds it' && r.reason.includes('computes in bfloat16'))).toBe(true);
    expect(checkNote(check)).toContain('f still computes in bfloat16 inside');
  });

  it('prints each float32 gradient leaf as numpy does', () => {
    const numpy = numpyPrinting('flax_bf16_compute');
    const rows = gradientRows(check).filter((r) => r.differentiated);
    expect(rows.map((r) => numbersOf(r.walk))).toEqual(numpy);
  });
});

describe('an agreement between zeros (all_zero: the probe found every gradient element and difference 0)', () => {
  // the fixed FD03 event as the probe sent it, with the flag the probe sets on a vanishing
  // gradient (the probe's own case: test_fd_cases.py, test_an_agreement_between_zeros_...)
  const check = checkOf('norm_float16_fixed');

  it('an event without the flag keeps the plain agreement', () => {
    expect(check.all_zero).toBeUndefined();
    expect(verdictView(check)).toMatchObject({ verdict: 'agree', label: 'agrees with the finite differences', allZero: false });
  });

  it('says in the tag that f is flat (all 0), beside the headline', () => {
    const v = verdictView({ ...check, all_zero: true });
    expect(v).toMatchObject({ verdict: 'agree', allZero: true, headline: check.headline });
    expect(v?.label).toBe('agrees with the finite differences: all 0, f is flat here');
    const incomplete = verdictView({ ...check, verdict: 'incomplete', all_zero: true });
    expect(incomplete?.label).toBe('not fully checked: all 0, f is flat here');
  });

  it('a disagreement is never called all zero', () => {
    expect(verdictView({ ...checkOf('norm_float16_broken'), all_zero: true })?.allZero).toBe(false);
  });
});

describe('a check too large for one line: its leaves in list ranges (design 0045)', () => {
  // FD08's real event (4 leaves), cut as the backend's split_lists cuts a ranged list: its first
  // leaf streamed, the other three in two ranges (test_gradient_check_ranges.py runs the jitted
  // GPT stack's 2.4 MB check through the sandbox and puts its ranges back in Python).
  const whole = checkOf('flax_bf16_compute');
  const leaves = whole.leaves ?? [];
  const streamed: GradientChecked = {
    ...whole,
    leaves: leaves.slice(0, 1),
    list_ranges: [
      { field: 'leaves', start: 1, stop: 3, detail_id: 'r0' },
      { field: 'leaves', start: 3, stop: 4, detail_id: 'r1' },
    ],
  };
  const sent = (start: number, stop: number, id: string): ItemsSent => ({
    type: 'items_sent',
    seq: whole.seq,
    run_id: whole.run_id,
    detail_of: id,
    path: 'leaves',
    start,
    items: leaves.slice(start, stop),
  });

  it('shows the leaves it has and counts the ones to come', () => {
    expect(leaves).toHaveLength(4);
    expect(leavesToCome(streamed)).toBe(3);
    expect(gradientRows(streamed).map((r) => r.key)).toEqual(['0:0', '1']);
    expect(nextListRange(streamed, 'leaves')?.detail_id).toBe('r0');
  });

  it("put back range by range, its table is the whole event's", () => {
    const one = applyItemsSent(streamed, sent(1, 3, 'r0')) as GradientChecked;
    expect(leavesToCome(one)).toBe(1);
    expect(nextListRange(one, 'leaves')?.detail_id).toBe('r1');
    // a range out of order is refused
    expect(applyItemsSent(streamed, sent(3, 4, 'r1'))).toBeNull();
    const all = applyItemsSent(one, sent(3, 4, 'r1')) as GradientChecked;
    expect(leavesToCome(all)).toBe(0);
    expect(all.list_ranges).toBeUndefined();
    expect(gradientRows(all)).toEqual(gradientRows(whole));
    expect(leavesToCome(whole)).toBe(0);
  });
});
