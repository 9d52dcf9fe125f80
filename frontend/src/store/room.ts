/**
 * Classroom mode's page state (design 0044), as pure functions: the room this page teaches or
 * follows, what a room event changes in it, and what a student's page must show for the
 * teacher's latest state (`followStep`) and where its stepper goes (`followCursor`).
 *
 * A teacher's page opens a room and keeps its token in memory and in the tab's sessionStorage
 * (`saveTeacherRoom`: never in the URL, gone with the tab), so that a reload takes the room back
 * within the server's grace period instead of leaving its students waiting; a student's page is opened with `?room=ID` and follows until the student leaves or
 * the room ends. The shell (App.svelte) sends the requests and applies the steps.
 */
import type { RoomClosed, RoomOpened, RoomRefused, RoomUpdated, RunOptions } from '../protocol';
import { parseOptions } from '../url-state';

/** The room ids the server makes (`ROOM_ID_PATTERN` of `protocol.py`). */
export const ROOM_ID = /^[A-Za-z0-9_-]{8,64}$/;

export interface RoomState {
  /** teacher: this page drives `room`; student: it follows `room`; none: no room */
  role: 'none' | 'teacher' | 'student';
  room: string | null;
  /** the teacher token (teacher only; kept in memory and the tab's sessionStorage) */
  token: string | null;
  /** students in the room (as the server last said) */
  students: number;
  /** the teacher's page is connected (false during the server's grace period) */
  teacherHere: boolean;
  /** a student's page has received the room's state at least once */
  joined: boolean;
  /** the last refusal or closing message, shown until the next change */
  message: string | null;
}

export const NO_ROOM: RoomState = {
  role: 'none',
  room: null,
  token: null,
  students: 0,
  teacherHere: false,
  joined: false,
  message: null,
};

/** The room a page was opened to follow (`?room=ID`), or null (none, or not a room id). */
export function roomFromSearch(search: string): string | null {
  const room = new URLSearchParams(search).get('room');
  return room !== null && ROOM_ID.test(room) ? room : null;
}

/** A student's page: following `room` (joined once the server answers). */
export function joining(room: string): RoomState {
  return { ...NO_ROOM, role: 'student', room };
}

/**
 * The students' link of `room`: this page's address with `?room=ID` (and the server's access
 * `token` when the page has one: students need it to reach a non-loopback server; the room's
 * teacher token is never in it).
 */
export function studentLink(location: { origin: string; pathname: string; search: string }, room: string): string {
  const params = new URLSearchParams();
  const token = new URLSearchParams(location.search).get('token');
  if (token !== null) params.set('token', token);
  params.set('room', room);
  return `${location.origin}${location.pathname}?${params.toString()}`;
}

/** The sessionStorage key of the room this tab teaches (its id and teacher token). */
export const TEACHER_ROOM_KEY = 'jaxscope.teacherRoom';

/**
 * The room this tab taught before a reload (`saveTeacherRoom`), as a teacher's state waiting
 * for its socket (the page sends `open_room` with the id and token on connecting), or null.
 */
export function savedTeacherRoom(storage: Pick<Storage, 'getItem'> | null): RoomState | null {
  const raw = storage?.getItem(TEACHER_ROOM_KEY) ?? null;
  if (raw === null) return null;
  try {
    const saved: unknown = JSON.parse(raw);
    if (typeof saved !== 'object' || saved === null) return null;
    const { room, token } = saved as { room?: unknown; token?: unknown };
    if (typeof room !== 'string' || !ROOM_ID.test(room) || typeof token !== 'string' || token === '') return null;
    return { ...NO_ROOM, role: 'teacher', room, token, joined: true };
  } catch {
    return null;
  }
}

/** Keep the room a teacher's `state` drives in the tab's storage, or forget it (no room). */
export function saveTeacherRoom(storage: Pick<Storage, 'setItem' | 'removeItem'> | null, state: RoomState): void {
  if (storage === null) return;
  if (state.role === 'teacher' && state.room !== null && state.token !== null) {
    storage.setItem(TEACHER_ROOM_KEY, JSON.stringify({ room: state.room, token: state.token }));
  } else storage.removeItem(TEACHER_ROOM_KEY);
}

export type RoomEvent = RoomOpened | RoomUpdated | RoomRefused | RoomClosed;

/** The page's room state after a room event. */
export function roomEvent(state: RoomState, event: RoomEvent): RoomState {
  switch (event.type) {
    case 'room_opened':
      return {
        ...NO_ROOM,
        role: 'teacher',
        room: event.room,
        token: event.token,
        teacherHere: true,
        joined: true,
      };
    case 'room_updated':
      if (state.room !== event.room) return state;
      return { ...state, students: event.students, teacherHere: event.teacher, joined: true, message: null };
    case 'room_refused':
      // A refused join (no such room, full) follows nothing; a refused drive or reclaim leaves
      // a teacher's page without the room (it ended, or the token is not its teacher's).
      if (state.role === 'student' && event.request === 'join_room') {
        return { ...NO_ROOM, message: event.message };
      }
      if (state.role === 'teacher' && event.request === 'open_room' && state.room === event.room) {
        return { ...NO_ROOM, message: event.message };
      }
      return { ...state, message: event.message };
    case 'room_closed':
      if (state.room !== event.room) return state;
      return { ...NO_ROOM, message: event.message };
  }
}

/** What a student's page shows for the teacher's state `update`. */
export interface FollowStep {
  exhibit: string;
  code: string;
  options: RunOptions;
  /** start following the teacher's run `runId` (null: keep the run on screen) */
  begin: string | null;
  /** the teacher's stepper: an event index, or -1 for the newest */
  cursor: number;
}

/**
 * The step that makes a student's page show `update`, given the run its store holds
 * (`currentRun`): a teacher's run the page does not hold yet is begun (its events follow from
 * the server), unless the server could not replay it whole (`replayed` false: the page keeps
 * what it shows and follows from the teacher's next run). Null for an exhibit this page lacks
 * (`known`: an own-property test such as `isExhibitId`, so that `constructor`, `__proto__` or
 * `toString` from a server that let one through never reaches the page's tables).
 */
export function followStep(update: RoomUpdated, currentRun: string | null, known: (id: string) => boolean): FollowStep | null {
  if (!known(update.exhibit)) return null;
  const run = update.teacher_run;
  return {
    exhibit: update.exhibit,
    code: update.code,
    options: parseOptions(update.options ?? {}),
    begin: run !== null && run !== currentRun && update.replayed ? run : null,
    cursor: update.cursor,
  };
}

/**
 * Where a student's stepper goes for the teacher's `cursor`, holding `n` events whose stepper
 * is at `at` (`following`: on the newest): `'last'` to follow the newest, an index, or null to
 * stay (already there, or the event has not arrived yet: applied when it does).
 */
export function followCursor(cursor: number, n: number, at: number, following: boolean): number | 'last' | null {
  if (cursor < 0) return following && at === n - 1 ? null : n > 0 ? 'last' : null;
  if (cursor >= n || cursor === at) return null;
  return cursor;
}

/** The cursor a teacher's page sends: -1 while its stepper follows the newest event. */
export function teacherCursor(cursor: number, following: boolean): number {
  return following ? -1 : cursor;
}
