import { describe, expect, it } from 'vitest';
import { Virtualizer, observeElementOffset, observeElementRect, elementScroll } from '@tanstack/svelte-virtual';
import { WINDOW_THRESHOLD, shouldWindow, spacers } from './virtual-window';

/** A TanStack virtualizer over a fake scroll element of `height` px scrolled to `top`. */
function windowOf(
  count: number,
  rowHeight: number,
  height: number,
  top: number,
  margin = 0,
): Virtualizer<HTMLElement, Element> {
  // `margin`: a sticky header's height above the rows
  const scrollHeight = margin + count * rowHeight;
  const element = { scrollTop: top, clientHeight: height, offsetHeight: height, scrollHeight } as unknown as HTMLElement;
  const v = new Virtualizer<HTMLElement, Element>({
    count,
    getScrollElement: () => element,
    estimateSize: () => rowHeight,
    overscan: 2,
    initialRect: { width: 800, height },
    initialOffset: top,
    observeElementRect,
    observeElementOffset,
    scrollToFn: elementScroll,
    scrollMargin: margin,
    scrollPaddingStart: margin,
  });
  v._willUpdate();
  return v;
}

describe('windowing', () => {
  it('windows only lists longer than the threshold', () => {
    expect(shouldWindow(WINDOW_THRESHOLD)).toBe(false);
    expect(shouldWindow(WINDOW_THRESHOLD + 1)).toBe(true);
    expect(shouldWindow(10, 5)).toBe(true);
  });

  it('renders the rows in view plus overscan, and spacers keep the full height', () => {
    const v = windowOf(20_000, 20, 400, 10_000);
    const rows = v.getVirtualItems();
    // 400 px / 20 px = 20 rows in view from row 500, plus 2 of overscan on each side.
    expect(rows[0]?.index).toBe(498);
    expect(rows[rows.length - 1]?.index).toBe(521);
    const total = v.getTotalSize();
    expect(total).toBe(400_000);
    const { top, bottom } = spacers(rows, total);
    const rendered = rows.reduce((sum, r) => sum + r.size, 0);
    expect(top).toBe(498 * 20);
    expect(top + rendered + bottom).toBe(total);
  });

  it('keeps rows below a sticky header of the box (scrollMargin and scrollPaddingStart)', () => {
    const head = 30;
    const v = windowOf(20_000, 20, 400, 10_000, head);
    const rows = v.getVirtualItems();
    const total = v.getTotalSize();
    expect(total).toBe(400_000);
    const { top, bottom } = spacers(rows, total, head);
    const rendered = rows.reduce((sum, r) => sum + r.size, 0);
    expect(top + rendered + bottom).toBe(total);
    expect(top).toBe((rows[0]?.index ?? 0) * 20);
    // Brought into view from below (align start), row 700's top is where the header ends, not under it.
    const [offset] = v.getOffsetForIndex(700, 'start') ?? [0];
    expect(head + 700 * 20 - offset).toBe(head);
    // From above (align end), its bottom is the box's bottom edge.
    const [endOffset] = v.getOffsetForIndex(100, 'end') ?? [0];
    expect(head + 101 * 20 - endOffset).toBe(400);
  });

  it('has no spacers without rows', () => {
    expect(spacers([], 1000)).toEqual({ top: 0, bottom: 0 });
  });
});
