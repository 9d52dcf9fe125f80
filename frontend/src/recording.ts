/**
 * A recorded run: the payload a standalone HTML file carries (design 0034), and the two ends of
 * it in the page.
 *
 * A standalone file is the single-file build of this frontend (`vite.standalone.config.ts`,
 * `dist/standalone/index.html`) with one `<script type="application/json" id="jaxscope-recording">`
 * added before `</body>`: the exhibit, the user's code, the run's options, when it was recorded and
 * every event of the run, whole (details resolved). `main.ts` mounts the replay page instead of the
 * explorer when the script is there. The same file is written by `jaxscope run --html`
 * (`jaxscope/standalone.py`, which embeds it the same way) and by the page's Download button
 * (`embedRecording`).
 */
import type { Event, RunOptions } from './protocol';

/** The id of the script element that carries the recording. */
export const RECORDING_ID = 'jaxscope-recording';
/** `Recording.format`: what the payload is, and its version. */
export const RECORDING_FORMAT = 'jaxscope-recording/1';
/** Where the served page finds the single-file template (relative to the page). */
export const TEMPLATE_PATH = './standalone/index.html';
/**
 * Why a replayed view cannot run again: its `rerunLocked` (the rerun controls' title) and the
 * note the replay shows if a rerun still reaches it.
 */
export const RECORDING_RERUN_LOCKED = 'A recording cannot run again: run the snippet in jaxscope to change the options.';

export interface Recording {
  format: typeof RECORDING_FORMAT;
  /** the exhibit id (`exhibits/<id>/`) */
  exhibit: string;
  /** the snippet the run ran, as the user wrote it */
  code: string;
  /** the options of the run */
  options: RunOptions;
  /** when the run was recorded (ISO 8601, UTC) */
  recorded_at: string;
  /** every event of the run in `seq` order, ending at its terminal event, details whole */
  events: Event[];
}

/** Why `value` is not a recording, or null when it is one. */
export function recordingProblem(value: unknown): string | null {
  if (typeof value !== 'object' || value === null) return 'not a JSON object';
  const r = value as Record<string, unknown>;
  if (r['format'] !== RECORDING_FORMAT) return `format ${JSON.stringify(r['format'])} is not ${RECORDING_FORMAT}`;
  for (const key of ['exhibit', 'code', 'recorded_at'] as const) {
    if (typeof r[key] !== 'string') return `${key} is not a string`;
  }
  if (typeof r['options'] !== 'object' || r['options'] === null) return 'options is not an object';
  if (!Array.isArray(r['events']) || r['events'].length === 0) return 'events is not a non-empty list';
  return null;
}

/**
 * The recording embedded in `doc`, null when the page is the served explorer (no such script);
 * throws with the reason when the script is there but holds no recording.
 */
export function readRecording(doc: Pick<Document, 'getElementById'>): Recording | null {
  const element = doc.getElementById(RECORDING_ID);
  if (element === null) return null;
  const value: unknown = JSON.parse(element.textContent ?? '');
  const problem = recordingProblem(value);
  if (problem !== null) throw new Error(`the embedded recording is broken: ${problem}`);
  return value as Recording;
}

/**
 * `recording` as the text of a JSON script element: every `<` written `\u003c`, so that no
 * `</script>` (or `<!--`) in the code or a jaxpr can end the element early; JSON.parse reads it
 * back unchanged.
 */
export function recordingScriptText(recording: Recording): string {
  return JSON.stringify(recording).replaceAll('<', '\\u003c');
}

/**
 * The standalone file: `template` (the single-file build) with the recording's script added
 * before its last `</body>` (the inlined bundle sits in `<head>`, so the last one is the page's).
 */
export function embedRecording(template: string, recording: Recording): string {
  const at = template.lastIndexOf('</body>');
  if (at < 0) throw new Error('the standalone template has no </body>');
  const script = `<script type="application/json" id="${RECORDING_ID}">${recordingScriptText(recording)}</script>\n`;
  return template.slice(0, at) + script + template.slice(at);
}

/** The download's file name: `jaxscope-<exhibit>-<YYYYMMDD-HHMMSS>.html` (UTC). */
export function recordingFileName(recording: Pick<Recording, 'exhibit' | 'recorded_at'>): string {
  const stamp = recording.recorded_at.replace(/\.\d+/, '').replace(/[-:]/g, '').replace('T', '-').replace('Z', '');
  return `jaxscope-${recording.exhibit}-${stamp}.html`;
}

/** `recorded_at` for display: `2026-12-02 16:07 UTC`. */
export function formatRecordedAt(iso: string): string {
  const match = /^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2})/.exec(iso);
  return match === null ? iso : `${match[1]} ${match[2]} UTC`;
}
