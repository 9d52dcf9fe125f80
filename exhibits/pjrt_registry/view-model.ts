/**
 * The pjrt_registry view model: the one `pjrt_client_tried` event read as what the view shows —
 * the outcome (devices, or torch_xla's exact error), the branch, and the shipped source of the
 * branch's file with its lines marked (`branch`: inside the branch, `condition`: its condition,
 * shown stronger). Pure functions of the events, tested on the golden stream.
 */
import type { Event, EventOf } from '../../frontend/src/protocol';

export type Tried = EventOf<'pjrt_client_tried'>;

export function tried(events: readonly Event[]): Tried | null {
  for (const e of [...events].reverse()) {
    if (e.type === 'pjrt_client_tried') return e;
  }
  return null;
}

export interface SourceLine {
  /** 1-based line number in the file */
  n: number;
  text: string;
  mark: 'condition' | 'branch' | 'none';
}

/** The file's lines, each marked by whether the branch (or its condition) covers it. */
export function sourceLines(t: Tried): SourceLine[] {
  const [start = 0, end = 0] = t.branch.lines;
  const [cStart = 0, cEnd = 0] = t.branch.condition_lines;
  const lines = t.source.replace(/\n$/, '').split('\n');
  return lines.map((text, i) => {
    const n = i + 1;
    const mark = n >= cStart && n <= cEnd ? 'condition' : n >= start && n <= end ? 'branch' : 'none';
    return { n, text, mark };
  });
}

/** How the try is said in one line: the setting as a shell would write it. */
export function setting(t: Tried): string {
  const device = t.pjrt_device === null ? 'PJRT_DEVICE unset' : `PJRT_DEVICE=${JSON.stringify(t.pjrt_device)}`;
  const dyn = t.env['PJRT_DYNAMIC_PLUGINS'];
  const env = dyn === null || dyn === undefined ? 'PJRT_DYNAMIC_PLUGINS unset' : `PJRT_DYNAMIC_PLUGINS=${dyn}`;
  return `${device}, dynamic plugins ${t.dynamic_plugins} (${env})`;
}

/** The outcome as shown: `devices CPU:0 (1)` or `RuntimeError: <text>`. */
export function outcome(t: Tried): string {
  if (t.ok) return `client created: ${t.devices.join(', ')} (${t.device_count} device${t.device_count === 1 ? '' : 's'})`;
  return `${t.error_type ?? 'Error'}: ${t.error ?? ''}`;
}
