/**
 * What the shell shows of the session's one run on the exhibit on screen.
 *
 * The store holds one run (`RunSession.run`), of one exhibit. Its events, error and status belong
 * to that exhibit: on another exhibit the view is empty and the run bar is idle, so that the bar
 * never says "finished in 3.5 s" over an empty pane. A run of another exhibit that is still in
 * flight is named in the bar (`elsewhere`); a run started on the exhibit on screen replaces it
 * (the server cancels a session's previous run when a new one arrives).
 */
import type { RunState } from './reducer';
import { IDLE_STATE } from './reducer';

export interface ShownRun {
  /** the run is the exhibit's on screen: its events, error and status are shown */
  shown: boolean;
  /** what the run bar describes: the run when it is shown, else idle */
  bar: RunState;
  /** the exhibit id of a run still in flight while another exhibit is on screen, else null */
  elsewhere: string | null;
}

export function shownRun(run: RunState, exhibitId: string): ShownRun {
  const shown = run.exhibit === exhibitId;
  const elsewhere = !shown && run.status === 'running' ? run.exhibit : null;
  return { shown, bar: shown ? run : IDLE_STATE, elsewhere };
}

/**
 * Whether a run of `exhibit` must not start now: a run of the same exhibit is in flight (the bar
 * shows its Cancel). A run of another exhibit in flight does not block: the new run replaces it.
 */
export function runBlocked(run: RunState, exhibit: string): boolean {
  return run.status === 'running' && run.exhibit === exhibit;
}
