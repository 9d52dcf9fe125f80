/**
 * The page's Download button (design 0034): the run on screen as a standalone HTML file, the same
 * file `jaxscope run --html` writes. The template is the single-file build the server serves
 * beside the page (`standalone/index.html`); the events are the store's, after every summary's
 * whole event was fetched from the run's worker (a file from disk has no worker to ask).
 */
import type { Event } from './protocol';
import type { RunSession } from './store/session.svelte';
import type { Recording } from './recording';
import { RECORDING_FORMAT, TEMPLATE_PATH, embedRecording, recordingFileName } from './recording';

/** How long the Download waits for the run's details before it writes what it has. */
export const DETAILS_TIMEOUT_MS = 30_000;

/** What the Download made: the file's name and text, and how many details it lacks. */
export interface StandaloneFile {
  name: string;
  html: string;
  missingDetails: number;
}

/** Fetch the template's text (a test passes its own). */
export type TemplateFetcher = () => Promise<string>;

export const fetchTemplate: TemplateFetcher = async () => {
  const response = await fetch(TEMPLATE_PATH);
  if (!response.ok) {
    throw new Error(`the standalone template is not served (HTTP ${response.status}): build the frontend with npm run build`);
  }
  return response.text();
};

/**
 * The standalone file of the session's ended run of `exhibit`, run on `code` at `recordedAt`
 * (ISO 8601). Throws when the run has not ended or the template cannot be had.
 */
export async function standaloneFile(
  session: RunSession,
  code: string,
  recordedAt: string,
  template: TemplateFetcher = fetchTemplate,
): Promise<StandaloneFile> {
  if (session.run.terminal === null || session.run.exhibit === null) throw new Error('the run has not ended');
  const [text, missingDetails] = await Promise.all([template(), session.resolveDetails(DETAILS_TIMEOUT_MS)]);
  const run = session.run;
  const recording: Recording = {
    format: RECORDING_FORMAT,
    exhibit: run.exhibit ?? '',
    code,
    options: run.options,
    recorded_at: recordedAt,
    // A whole event that answered a detail request is a plain event of the run now: without
    // `detail_of` the replay's reducer takes it as such (with it, it would look for a summary).
    events: run.events.map(asRecorded),
  };
  return { name: recordingFileName(recording), html: embedRecording(text, recording), missingDetails };
}

/** `event` as a recording holds it: whole, without the `detail_of` of a detail answer. */
export function asRecorded(event: Event): Event {
  if (event.detail_of === undefined || event.detail_of === null) return event;
  const copy = { ...event };
  delete copy.detail_of;
  return copy;
}

/** Hand `file` to the browser as a download. */
export function saveFile(file: StandaloneFile): void {
  const url = URL.createObjectURL(new Blob([file.html], { type: 'text/html' }));
  const link = document.createElement('a');
  link.href = url;
  link.download = file.name;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
