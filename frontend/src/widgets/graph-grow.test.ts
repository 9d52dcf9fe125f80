import { describe, expect, it } from 'vitest';
import type { EqnView, JaxprView } from '../protocol';
import { GROW_MS, growDelay } from './graph-grow';

function eqn(i: number): EqnView {
  return { index: i, primitive: 'sin', invars: [], outvars: [], params: {}, source: null, text: `e${i}` } as unknown as EqnView;
}

/** A view of `total` eqns of which the first `have` are in (the rest to come as ranges). */
function view(have: number, total: number, name = 'a'): JaxprView {
  const lines = Array.from({ length: have }, (_, i) => `    ${name}${i} = sin x`);
  const more = have < total ? [`    … ${total - have} more eqns`] : [];
  return {
    text: ['{ lambda ; x:f32[]. let', ...lines, ...more, '  in (x,) }'].join('\n'),
    constvars: [],
    invars: [],
    outvars: [],
    eqns: Array.from({ length: have }, (_, i) => eqn(i)),
    effects: [],
    total_eqns: have < total ? total : null,
  } as unknown as JaxprView;
}

describe('growDelay', () => {
  it('waits GROW_MS between growths while ranges are still to come', () => {
    const head = view(100, 1000);
    const grown = view(300, 1000);
    expect(growDelay(head, grown, 0, 200)).toBe(GROW_MS - 200);
    expect(growDelay(head, grown, 0, GROW_MS)).toBe(0);
    expect(growDelay(head, grown, 500, 200)).toBe(GROW_MS + 300);
  });

  it('takes the whole view, another jaxpr, or the same one at once', () => {
    const head = view(100, 1000);
    expect(growDelay(head, view(1000, 1000), 0, 10)).toBe(0); // the last range: whole
    expect(growDelay(head, view(300, 1000, 'b'), 0, 10)).toBe(0); // not grown from it
    expect(growDelay(head, head, 0, 10)).toBe(0);
    expect(growDelay(view(5, 5), view(7, 7), 0, 10)).toBe(0); // a whole view is never held
  });
});
