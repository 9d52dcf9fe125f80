/**
 * The contract between the shell and an exhibit's view (`exhibits/<id>/View.svelte`).
 *
 * A view never opens a socket: it renders the events the shell hands it (the prefix up to the
 * stepper's cursor) and talks back only through `select` and `rerun`. Line numbers are 1-based
 * lines of the user's snippet, as in the protocol's `SourceLoc.line`.
 */
import type { Event, RunOptions } from './protocol';

/**
 * What is selected across panels: source lines, top-level jaxpr eqns, StableHLO op lines and
 * optimized HLO instruction lines.
 */
export interface Selection {
  /** who made the selection: the editor, a jaxpr eqn, a StableHLO op or an optimized HLO instruction */
  origin: 'none' | 'editor' | 'eqn' | 'op' | 'hlo';
  /** 1-based snippet lines to highlight in the editor */
  lines: number[];
  /** indices into the staged jaxpr's `eqns` */
  eqnIndices: number[];
  /** 0-based line indices into `module_lowered.stablehlo` */
  opLines: number[];
  /** 0-based line indices into `executable_compiled.compiled_text` (absent: none) */
  hloLines?: number[];
}

export const EMPTY_SELECTION: Selection = { origin: 'none', lines: [], eqnIndices: [], opLines: [] };

export interface ExhibitViewProps {
  /** events of the current run up to and including the stepper cursor, in `seq` order */
  events: readonly Event[];
  /** every event received so far for the current run */
  allEvents: readonly Event[];
  /** true while the run has not reached its terminal event */
  running: boolean;
  /** the options the current run was started with */
  options: RunOptions;
  /** the shared selection; the shell highlights `selection.lines` in the editor */
  selection: Selection;
  /** replace the shared selection */
  select: (selection: Selection) => void;
  /**
   * run this exhibit again with these options (e.g. the tracing exhibit's "call again"): always
   * the exhibit on screen and the editor's current code, whichever run the store held before
   */
  rerun: (options: RunOptions) => void;
  /**
   * why this view cannot run again (a recording: the standalone replay, design 0034), or
   * null/absent when it can. When set, every control that calls `rerun` (directly or through a
   * sub-component) is disabled, with this reason as its `title` (`rerunTitle`); its text inputs
   * are read-only. Controls that only change the view (stepping, picking a step, details) stay
   * enabled.
   */
  rerunLocked?: string | null;
  /**
   * details on demand: the view shows this event in full (the step the user picked), so the
   * shell asks for its whole event if it is a summary (`detail_id`); the answer replaces it in
   * `events`. Steps near the stepper's cursor are asked for without it.
   */
  wantDetail?: (event: Event) => void;
}

/**
 * The `title` of a control that calls `rerun`: the reason it is disabled when the view cannot run
 * again (`rerunLocked` set), else the control's own title (absent: none).
 */
export function rerunTitle(rerunLocked: string | null | undefined, own?: string): string | undefined {
  return rerunLocked ? rerunLocked : own;
}
