/** Typed lookups over a run's event list (the prefix up to the stepper's cursor). */
import type { Event, EventOf, EventType } from '../protocol';

/** The events of type `T`, in order. */
export function eventsOf<T extends EventType>(events: readonly Event[], type: T): EventOf<T>[] {
  return events.filter((e): e is EventOf<T> => e.type === type);
}

/** The last event of type `T`, if any. */
export function lastOf<T extends EventType>(events: readonly Event[], type: T): EventOf<T> | undefined {
  for (let i = events.length - 1; i >= 0; i--) {
    const e = events[i];
    if (e !== undefined && e.type === type) return e as EventOf<T>;
  }
  return undefined;
}
