import { describe, expect, it } from 'vitest';
import type { RoomUpdated } from '../protocol';
import { isExhibitId } from '../exhibits';
import {
  NO_ROOM,
  TEACHER_ROOM_KEY,
  followCursor,
  followStep,
  joining,
  roomEvent,
  roomFromSearch,
  saveTeacherRoom,
  savedTeacherRoom,
  studentLink,
  teacherCursor,
} from './room';

function update(over: Partial<RoomUpdated> = {}): RoomUpdated {
  return {
    type: 'room_updated',
    seq: 0,
    run_id: '',
    room: 'Room_id-1234',
    exhibit: 'vmap',
    code: 'def f(x): return x\n',
    teacher_run: 'r1',
    cursor: -1,
    students: 3,
    teacher: true,
    replayed: true,
    ...over,
  };
}

describe('room ids and links', () => {
  it('reads only a well-formed room id from the page URL', () => {
    expect(roomFromSearch('?room=Room_id-1234')).toBe('Room_id-1234');
    expect(roomFromSearch('?token=t&room=abcdefgh')).toBe('abcdefgh');
    expect(roomFromSearch('?room=short')).toBeNull();
    expect(roomFromSearch('?room=has%20space1')).toBeNull();
    expect(roomFromSearch('?room=<script>alert(1)</script>')).toBeNull();
    expect(roomFromSearch('')).toBeNull();
  });

  it("builds the students' link with the server token but never the teacher token", () => {
    const at = { origin: 'http://h:8000', pathname: '/', search: '?token=srv&follow=1' };
    const link = studentLink(at, 'Room_id-1234');
    expect(link).toBe('http://h:8000/?token=srv&room=Room_id-1234');
    expect(roomFromSearch(new URL(link).search)).toBe('Room_id-1234');
    expect(studentLink({ origin: 'http://h', pathname: '/', search: '' }, 'abcdefgh')).toBe('http://h/?room=abcdefgh');
  });
});

describe('roomEvent', () => {
  it('makes the page a teacher on room_opened, keeping the token', () => {
    const state = roomEvent(NO_ROOM, {
      type: 'room_opened', seq: 0, run_id: '', room: 'Room_id-1234', token: 'tok', max_students: 200, grace_s: 300,
    });
    expect(state).toMatchObject({ role: 'teacher', room: 'Room_id-1234', token: 'tok', teacherHere: true });
    expect(roomEvent(state, update({ students: 7 })).students).toBe(7);
  });

  it('follows as a student until refused or closed', () => {
    const asked = joining('Room_id-1234');
    expect(asked).toMatchObject({ role: 'student', joined: false });
    const joined = roomEvent(asked, update({ teacher: false }));
    expect(joined).toMatchObject({ role: 'student', joined: true, teacherHere: false, students: 3 });
    // Another room's update is not this page's.
    expect(roomEvent(joined, update({ room: 'another-room', students: 9 }))).toBe(joined);
    const closed = roomEvent(joined, { type: 'room_closed', seq: 0, run_id: '', room: 'Room_id-1234', message: 'ended' });
    expect(closed).toEqual({ ...NO_ROOM, message: 'ended' });
  });

  it('a refused join follows nothing; a refused drive keeps the room', () => {
    const refused = roomEvent(joining('Room_id-1234'), {
      type: 'room_refused', seq: 0, run_id: '', room: 'Room_id-1234', request: 'join_room', message: 'no such room',
    });
    expect(refused).toEqual({ ...NO_ROOM, message: 'no such room' });
    const joined = roomEvent(joining('Room_id-1234'), update());
    const drive = roomEvent(joined, {
      type: 'room_refused', seq: 0, run_id: '', room: 'Room_id-1234', request: 'drive_room', message: 'only the teacher',
    });
    expect(drive).toMatchObject({ role: 'student', room: 'Room_id-1234', message: 'only the teacher' });
  });
});

const known = (id: string): boolean => id === 'vmap';

describe('followStep', () => {
  it("ignores a teacher's state whose exhibit this page lacks, prototype names included", () => {
    for (const exhibit of ['constructor', '__proto__', 'toString', 'nope']) {
      expect(followStep(update({ exhibit }), null, isExhibitId), exhibit).toBeNull();
    }
    expect(followStep(update({ exhibit: 'vmap' }), null, isExhibitId)?.begin).toBe('r1');
  });

  it("begins the teacher's run once, with the teacher's exhibit, code and options", () => {
    const step = followStep(update({ options: { calls: [], in_axes: '0' } as never }), null, known)!;
    expect(step).toMatchObject({ exhibit: 'vmap', code: 'def f(x): return x\n', begin: 'r1', cursor: -1 });
    expect(step.options.in_axes).toBe('0');
    expect(followStep(update(), 'r1', known)!.begin).toBeNull();
    expect(followStep(update({ teacher_run: null }), 'mine', known)!.begin).toBeNull();
  });

  it('keeps the page as it is for a run the server could not replay', () => {
    expect(followStep(update({ replayed: false }), 'r0', known)!.begin).toBeNull();
  });

  it('drops options that are not valid', () => {
    const step = followStep(update({ options: { calls: 'nope', in_axes: 5 } as never }), null, known)!;
    expect(step.options.calls).toEqual([]);
    expect(step.options.in_axes).toBeUndefined();
  });
});

describe('followCursor and teacherCursor', () => {
  it("moves a student's stepper to the teacher's event once it has arrived", () => {
    expect(followCursor(3, 10, 9, true)).toBe(3);
    expect(followCursor(3, 10, 3, false)).toBeNull();
    expect(followCursor(12, 10, 9, true)).toBeNull(); // not arrived yet
    expect(followCursor(-1, 10, 3, false)).toBe('last');
    expect(followCursor(-1, 10, 9, true)).toBeNull();
    expect(followCursor(-1, 0, -1, true)).toBeNull();
  });

  it('sends -1 while the teacher follows the newest event', () => {
    expect(teacherCursor(41, true)).toBe(-1);
    expect(teacherCursor(5, false)).toBe(5);
  });
});

describe("a teacher's room in the tab's sessionStorage", () => {
  function memoryStorage(): Pick<Storage, 'getItem' | 'setItem' | 'removeItem'> & { items: Map<string, string> } {
    const items = new Map<string, string>();
    return {
      items,
      getItem: (k) => items.get(k) ?? null,
      setItem: (k, v) => void items.set(k, v),
      removeItem: (k) => void items.delete(k),
    };
  }

  it('keeps a teacher room across a reload and forgets it when the room ends', () => {
    const storage = memoryStorage();
    const teacher = roomEvent(NO_ROOM, {
      type: 'room_opened', seq: 0, run_id: '', room: 'Room_id-1234', token: 'tok', max_students: 200, grace_s: 300,
    });
    saveTeacherRoom(storage, teacher);
    const reloaded = savedTeacherRoom(storage);
    expect(reloaded).toMatchObject({ role: 'teacher', room: 'Room_id-1234', token: 'tok' });
    saveTeacherRoom(storage, NO_ROOM);
    expect(storage.items.has(TEACHER_ROOM_KEY)).toBe(false);
    expect(savedTeacherRoom(storage)).toBeNull();
  });

  it('never keeps a student room, and refuses a damaged entry', () => {
    const storage = memoryStorage();
    saveTeacherRoom(storage, joining('Room_id-1234'));
    expect(storage.items.size).toBe(0);
    for (const raw of ['{', 'null', '{"room":"x","token":"t"}', '{"room":"Room_id-1234","token":""}']) {
      storage.items.set(TEACHER_ROOM_KEY, raw);
      expect(savedTeacherRoom(storage)).toBeNull();
    }
    expect(savedTeacherRoom(null)).toBeNull();
  });
});
