/**
 * The template exhibit's view model: the `template_avals_read` events (arguments, then outputs)
 * as the rows the view shows. Pure functions of the events, tested on the golden event stream
 * (`view-model.test.ts`); the view only lays them out.
 */
import type { AvalView, Event, EventOf } from '../../frontend/src/protocol';
import { eventsOf } from '../../frontend/src/widgets/events';

export type AvalsRead = EventOf<'template_avals_read'>;

/** One side of the call: the arguments' leaves (`in`) or the outputs' (`out`). */
export interface Side {
  side: AvalsRead['side'];
  title: string;
  rows: { path: string; aval: AvalView }[];
  /** how many leaves are weakly typed (Python scalars) */
  weak: number;
}

const TITLES: Record<AvalsRead['side'], string> = { in: 'Arguments', out: 'Outputs' };

/** The sides read so far (up to the stepper's cursor), in the order the probe emitted them. */
export function sides(events: readonly Event[]): Side[] {
  return eventsOf(events, 'template_avals_read').map((e) => ({
    side: e.side,
    title: TITLES[e.side],
    rows: e.leaves,
    weak: e.leaves.filter((l) => l.aval.weak_type).length,
  }));
}
