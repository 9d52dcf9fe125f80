/**
 * The recording a standalone file carries (design 0034): embedded into the single-file template
 * and read back unchanged, whatever the code holds (a `</script>` in it must not end the JSON
 * element); what the page refuses; the download's name. The Download's detail fetching: every
 * summary of the ended run is asked for, at most DETAIL_BATCH at once, until all are whole.
 */
import { describe, expect, it } from 'vitest';
import type { Event } from './protocol';
import { eqnRecorded, runFinished, runStarted } from './test/events';
import type { Recording } from './recording';
import {
  RECORDING_FORMAT,
  RECORDING_ID,
  embedRecording,
  formatRecordedAt,
  readRecording,
  recordingFileName,
  recordingProblem,
} from './recording';
import { DETAIL_BATCH, RunSession } from './store/session.svelte';

const TEMPLATE = '<!doctype html><html><head><script type="module">const s = "</body>";</script></head><body><div id="app"></div></body></html>';

function recording(code: string): Recording {
  return {
    format: RECORDING_FORMAT,
    exhibit: 'tracing',
    code,
    options: { calls: [] },
    recorded_at: '2026-12-02T16:07:55.123Z',
    events: [runStarted('r1', 0), runFinished('r1', 1)],
  };
}

/** The text of the recording's script element in `html`, as the browser's parser would end it. */
function scriptText(html: string): string {
  const open = `<script type="application/json" id="${RECORDING_ID}">`;
  const start = html.indexOf(open) + open.length;
  // An HTML parser ends a script element at the first `</script` whatever the JSON says.
  return html.slice(start, html.toLowerCase().indexOf('</script', start));
}

describe('the embedded recording', () => {
  it('reads back unchanged, even with </script> and <!-- in the code', () => {
    const rec = recording('def f(x):\n    return x  # </script><!-- </SCRIPT>\n');
    const html = embedRecording(TEMPLATE, rec);
    // Before the page's own </body>, after the bundle's string that merely contains one.
    expect(html.indexOf(RECORDING_ID)).toBeGreaterThan(html.indexOf('const s'));
    expect(html.endsWith('</script>\n</body></html>')).toBe(true);
    const text = scriptText(html);
    expect(text).not.toContain('<');
    const doc = { getElementById: (id: string) => (id === RECORDING_ID ? ({ textContent: text } as HTMLElement) : null) };
    expect(readRecording(doc)).toEqual(rec);
  });

  it('is absent from the served page, and a broken one is refused with the reason', () => {
    expect(readRecording({ getElementById: () => null })).toBeNull();
    expect(recordingProblem({ ...recording(''), format: 'other' })).toContain('format');
    expect(recordingProblem({ ...recording(''), events: [] })).toContain('events');
    expect(recordingProblem({ ...recording(''), code: 3 })).toBe('code is not a string');
    expect(recordingProblem(recording(''))).toBeNull();
  });

  it('names the file and the date', () => {
    expect(recordingFileName(recording(''))).toBe('jaxscope-tracing-20261202-160755.html');
    expect(formatRecordedAt('2026-12-02T16:07:55.123Z')).toBe('2026-12-02 16:07 UTC');
  });
});

describe('the Download fetches every detail', () => {
  function endedRun(n: number, asked: string[], clock: { t: number }): RunSession {
    const session = new RunSession(() => clock.t, { request: (cb) => cb() }, (_, id) => asked.push(id));
    session.begin('r1', 'tracing', { calls: [] });
    session.receive(runStarted('r1', 0));
    for (let seq = 1; seq <= n; seq++) session.receive({ ...eqnRecorded('r1', seq, seq - 1), detail_id: `d${seq}` });
    session.receive(runFinished('r1', n + 1));
    session.goTo(0); // the stepper's window asks for the first few itself
    return session;
  }

  function answer(session: RunSession, id: string): void {
    const seq = Number(id.slice(1));
    session.receive({ ...eqnRecorded('r1', seq, seq - 1, 9), detail_of: id } as Event);
  }

  it('asks for each summary once, at most DETAIL_BATCH in flight, until the run is whole', async () => {
    const n = DETAIL_BATCH * 2 + 5;
    const asked: string[] = [];
    const clock = { t: 0 };
    const session = endedRun(n, asked, clock);
    const answered = new Set<string>();
    let rounds = 0;
    const missing = await session.resolveDetails(10_000, async (ms) => {
      rounds += 1;
      clock.t += ms;
      const inFlight = asked.filter((id) => !answered.has(id));
      expect(inFlight.length).toBeLessThanOrEqual(DETAIL_BATCH);
      // The worker answers the oldest half of what is in flight before the next look.
      for (const id of inFlight.slice(0, Math.ceil(inFlight.length / 2))) {
        answered.add(id);
        answer(session, id);
      }
    });
    expect(missing).toBe(0);
    expect(rounds).toBeGreaterThan(2);
    expect([...asked].sort()).toEqual(Array.from({ length: n }, (_, k) => `d${k + 1}`).sort()); // each once
    expect(session.run.events.filter((e) => e.detail_id !== undefined && e.detail_id !== null)).toEqual([]);
  });

  it('gives up after its time and says how many are missing', async () => {
    const asked: string[] = [];
    const clock = { t: 0 };
    const session = endedRun(10, asked, clock);
    const missing = await session.resolveDetails(1_000, async (ms) => {
      clock.t += ms;
      if (asked[0] !== undefined) answer(session, asked[0]); // one answer, then a silent worker
    });
    expect(missing).toBe(9);
  });
});
