/**
 * The step-by-step views' cap (jvp, vmap): the badge and sentences say how many eqns have a step
 * and how many the program has, so "step 2000 / 2000" is not read as the whole program.
 */
import { describe, expect, it } from 'vitest';
import { markedEqns, noStepNote, stepCapNote, stepCount } from './step-cap';

describe('step cap', () => {
  it('without steps left out the badge is unchanged and there is no note', () => {
    expect(stepCount(3, 4, 0)).toBe('step 3 / 4');
    expect(stepCapNote(4, 0)).toBeNull();
  });

  it('with steps left out the badge, the note and a click past the cap say the whole count', () => {
    // loop_20k: 20,001 eqns, the first 2,000 with a step
    expect(stepCount(2000, 2000, 18001)).toBe('step 2,000 / 2,000 of 20,001 eqns');
    expect(stepCapNote(2000, 18001)).toBe(
      'Steps for the first 2,000 of 20,001 eqns: the step-by-step view stops at 2,000 (the jaxprs are whole).',
    );
    expect(noStepNote(2031, 2000, 18001)).toBe(
      'Eqn 2,031 has no step: the step-by-step view stops after the first 2,000 of 20,001 eqns (the jaxprs are whole).',
    );
  });

  it('marks the current step\'s eqn, or the eqn clicked past the cap (so its text does not clear)', () => {
    expect([...markedEqns(12, null)]).toEqual([12]);
    expect([...markedEqns(undefined, 2031)]).toEqual([2031]);
    expect(markedEqns(undefined, null).size).toBe(0);
  });
});
