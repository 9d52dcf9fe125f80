import { describe, expect, it } from 'vitest';
import { fullyVisible } from './scroll';

const VIEW = { top: 200, bottom: 591 };

describe('fullyVisible', () => {
  it('keeps a line inside the view where it is, even at an edge', () => {
    expect(fullyVisible({ top: 204, bottom: 226 }, VIEW)).toBe(true);
    expect(fullyVisible({ top: 569, bottom: 591 }, VIEW)).toBe(true);
  });

  it('scrolls to a line cut by an edge or out of view', () => {
    expect(fullyVisible({ top: 190, bottom: 212 }, VIEW)).toBe(false);
    expect(fullyVisible({ top: 580, bottom: 602 }, VIEW)).toBe(false);
    expect(fullyVisible({ top: 900, bottom: 922 }, VIEW)).toBe(false);
    expect(fullyVisible({ top: -40, bottom: -18 }, VIEW)).toBe(false);
  });

  it('scrolls to a wrapped line taller than the view', () => {
    expect(fullyVisible({ top: 150, bottom: 700 }, VIEW)).toBe(false);
  });
});
