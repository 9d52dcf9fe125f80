/**
 * A view's editor selection driven by a value of its own (the stepper's cursor, a run's
 * findings), as the error panel marks a failed run's line: when `key()` changes, the selection
 * becomes `selection()`; when that is null and this had set the last one, it is cleared. A line
 * the user picks in the editor meanwhile stays until the key changes again.
 */
import { EMPTY_SELECTION, type Selection } from './exhibit-api';

export function driveSelection<K>(
  initialKey: K,
  key: () => K,
  selection: () => Selection | null,
  select: (selection: Selection) => void,
): void {
  let seen = initialKey;
  let drove = false;
  $effect(() => {
    const current = key();
    if (current === seen) return;
    seen = current;
    const chosen = selection();
    if (chosen) {
      select(chosen);
      drove = true;
    } else if (drove) {
      select(EMPTY_SELECTION);
      drove = false;
    }
  });
}
