import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EXHIBITS, EXHIBIT_GROUPS, EXHIBIT_IDS, isExhibitId } from './exhibits';

const root = resolve(__dirname, '..', '..');
const python = process.env['JAXSCOPE_PYTHON'] ?? resolve(root, '.venv', 'bin', 'python');

describe('the exhibit table', () => {
  it('lists the same ids as the backend table, exhibits/registry.py, in its order', () => {
    const out = execFileSync(python, ['-c', 'import json; from exhibits.registry import EXHIBITS; print(json.dumps(list(EXHIBITS)))'], {
      cwd: root,
      encoding: 'utf8',
    });
    expect([...EXHIBIT_IDS]).toEqual(JSON.parse(out) as string[]);
  });

  it('holds each exhibit folder’s view and its narrative.md, byte for byte', () => {
    for (const id of EXHIBIT_IDS) {
      const entry = EXHIBITS[id];
      expect(entry, id).toBeDefined();
      expect(typeof entry?.View).toBe('function');
      const path = resolve(root, 'exhibits', id, 'narrative.md');
      expect(existsSync(path)).toBe(true);
      expect(entry?.narrative).toBe(readFileSync(path, 'utf8'));
    }
  });

  it('puts every exhibit in a navigation group with a short label', () => {
    for (const id of EXHIBIT_IDS) {
      expect(EXHIBIT_GROUPS, id).toContain(EXHIBITS[id]?.group);
      expect(EXHIBITS[id]?.label.length, id).toBeGreaterThan(0);
    }
    const labels = EXHIBIT_IDS.map((id) => EXHIBITS[id]?.label);
    expect(new Set(labels).size).toBe(labels.length);
  });

  it("names no exhibit by Object.prototype's names (a permalink, localStorage, a room's teacher)", () => {
    for (const id of ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf']) {
      expect(isExhibitId(id), id).toBe(false);
      expect(EXHIBITS[id], id).toBeUndefined();
    }
    expect(isExhibitId(undefined)).toBe(false);
    for (const id of EXHIBIT_IDS) expect(isExhibitId(id), id).toBe(true);
  });
});
