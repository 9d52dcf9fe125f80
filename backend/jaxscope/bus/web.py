"""The web tier on the run queue: ``jaxscope serve --queue redis://…`` (design 0065).

The web tier holds no run: a websocket's run request is checked here (``parse_request``, the
exhibit, the code's size: an invalid one never reaches the queue), put on its lane's stream as a
:class:`~jaxscope.bus.jobs.Job`, and answered at once by ``run_accepted`` with the run's token.
The run's events are read from its stream (re-validated against the protocol, then forwarded as
the very text the worker's host wrote) for as long as the socket follows the run: a page that
lost its socket (this replica died, its network dropped) reconnects to any replica and sends
``resume`` with the token and the last seq it saw, and gets the rest. Cancels and detail requests
go on the run's ``ctl`` stream to the host that runs it. A new run of the socket cancels its
previous one (as a local session does) and releases its details; a closed socket cancels
nothing (its page may resume).

Redis unreachable: a new run fails at once with a message that says so; a run being followed
waits :data:`QUEUE_DOWN_S` for the queue to come back, then fails; a queue that came back without
the run (a restart without persistence) fails it saying so. No run waits without an end.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging

from pydantic import ValidationError
from starlette.websockets import WebSocket

from exhibits.registry import EXHIBITS
from jaxscope.bus.jobs import (
    HEARTBEAT_S,
    PREFIX,
    QUEUED_PER_CLIENT,
    RELEASE,
    RUN_TTL_S,
    Job,
    client_id,
    ctl_key,
    events_key,
    lane_of,
    meta_key,
    new_key,
    redact,
    started_key,
    valid_key,
)
from jaxscope.bus.rooms import BusRooms, BusRoomSession
from jaxscope.bus.store import (
    Redis,
    RedisError,
    connect,
    drop_idle,
    ensure_groups,
    entries_of,
    is_queued,
    queue_job,
    stop_task,
    sweep,
)
from jaxscope.protocol import (
    EVENT_ADAPTER,
    MAX_CODE_CHARS,
    CancelRequest,
    DetailFailed,
    DetailRequest,
    EventModel,
    ResumeRequest,
    RunAccepted,
    RunFailed,
    RunRequest,
    WatchedFileChanged,
    is_terminal,
)
from jaxscope.sandbox.request_loop import NOT_WATCHING, clean_text, parse_request
from jaxscope.server.frames import FrameSender
from jaxscope.server.rooms import Member
from jaxscope.server.ws import receive_text

log = logging.getLogger(__name__)

# How long a followed run waits for an unreachable queue to answer again before it fails.
QUEUE_DOWN_S = 10.0
# The longest ``/api/health`` waits for the queue's list of hosts (below a probe's 1 s timeout).
HEALTH_S = 0.5
GONE = (
    "this run's stream is gone (it ended more than 10 minutes ago, or the run queue restarted "
    "and lost it): run it again"
)


LOST = (
    "this run never started and its job is no longer on the run queue (the queue lost it): "
    "run it again"
)
LANE_FULL = (
    "the server's run queue is full (every pool host is busy): the run was not queued; try "
    "again in a moment"
)
NO_ACCELERATOR = (
    "no pool host with an accelerator is on the run queue now (a host serves the accelerator "
    "lane when started with `jaxscope pool --lanes accelerator=1`): the run was not started. "
    "Run it on the CPU devices (device cpu), or try again when such a host is up"
)
CLIENT_FULL = (
    f"you have {QUEUED_PER_CLIENT} runs waiting on the run queue already (the most one client "
    "may): the run was not queued; wait for them, or try again in a moment"
)


def _meta(raw: bytes | str | None) -> dict[str, object] | None:
    """A run's meta, or None when it is absent or not a JSON object (logged: bad data)."""
    if raw is None:
        return None
    try:
        meta = json.loads(raw)
    except ValueError:
        meta = None
    if not isinstance(meta, dict):
        log.error("a run's meta is malformed: treated as gone")
        return None
    return meta


async def _exists(redis: Redis, key: str, client: object) -> bool:
    """Whether ``key``'s run started (it has, or had, a host) or waits on its lane; True when
    the queue cannot say (a meta without its client, Redis unreachable: the reader reports)."""
    if not isinstance(client, str):
        return True
    try:
        return bool(await redis.exists(started_key(key))) or await is_queued(redis, client, key)
    except (RedisError, OSError):
        return True


class Bus:
    """The web tier's connection to the queue (``app.state.bus``) and its sweeper."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.where = redact(url)
        self.redis: Redis = connect(url)
        self.name = f"web-{new_key()[:12]}"
        # Classroom rooms shared by every replica through the queue (``bus/rooms.py``).
        self.rooms = BusRooms(self.redis, EXHIBITS, self.name)
        self._sweeper: asyncio.Task[None] | None = None
        self._closing = False

    def start(self) -> None:
        self._sweeper = asyncio.create_task(self._sweep())

    async def close(self) -> None:
        self._closing = True
        await stop_task(self._sweeper)
        await self.rooms.close()
        with contextlib.suppress(RedisError, OSError, TimeoutError):
            await asyncio.wait_for(self.redis.aclose(), 2.0)

    async def _sweep(self) -> None:
        while not self._closing:
            try:
                await self.rooms.beat()
            except (RedisError, OSError):
                pass
            await asyncio.sleep(HEARTBEAT_S)
            try:
                await sweep(self.redis, self.name)
            except (RedisError, OSError):
                pass  # the queue is away: the runs' readers report it
            except Exception:  # bad data must not stop the sweeper: log, go on
                log.exception("the sweeper's pass failed")

    async def hosts(self) -> dict[str, dict[str, int]]:
        """The live pool hosts and their lanes (for ``/api/health``)."""
        hosts: dict[str, dict[str, int]] = {}
        async for raw in self.redis.scan_iter(match=f"{PREFIX}host:*", count=100):
            lanes = await self.redis.get(raw)
            if lanes is None:
                continue
            try:
                hosts[raw.decode().rsplit(":", 1)[1]] = json.loads(lanes)
            except ValueError:
                log.error("the heartbeat %r is malformed: left out", raw)
        return hosts

    async def health(self) -> dict[str, object]:
        """The queue and its live hosts for ``/api/health``, within :data:`HEALTH_S`: a Redis
        that hangs (paused, swapping, its network partitioned) made the endpoint wait for the
        client's 10 s socket timeout, and a liveness probe that calls it (the Kubernetes recipe,
        whose probes time out after 1 s) restarted every web replica for a fault of the queue's,
        dropping every page's socket. The queue's state is reported, never a reason to fail."""
        task = asyncio.create_task(self.hosts())
        done, _ = await asyncio.wait({task}, timeout=HEALTH_S)
        if task not in done:
            task.cancel()
            return {"queue": self.where, "error": f"the run queue did not answer in {HEALTH_S:g} s"}
        try:
            return {"queue": self.where, "hosts": task.result()}
        except Exception as exc:  # the queue is down: say so, stay alive
            return {"queue": self.where, "error": str(exc)}

    async def serves(self, lane: str) -> bool:
        """Whether a live pool host takes runs from ``lane`` (its heartbeat lists it)."""
        hosts = (await self.hosts()).values()
        return any(isinstance(lanes, dict) and lane in lanes for lanes in hosts)

    def unreachable(self, exc: BaseException) -> str:
        return (
            f"the run queue (Redis at {self.where}) is unreachable ({exc}): the run was not "
            "started; try again in a moment"
        )


def _problem(request: RunRequest) -> str | None:
    """Why the web tier refuses ``request`` before queueing it (its size, its exhibit), or
    None; the pool host checks the rest as a local session does (``request_problem``)."""
    if len(request.code) > MAX_CODE_CHARS:
        return (
            f"the code is {len(request.code):,} characters long; jaxscope accepts at most "
            f"{MAX_CODE_CHARS:,}"
        )
    if request.exhibit not in EXHIBITS:
        return f"unknown exhibit {request.exhibit!r}; known: {', '.join(sorted(EXHIBITS))}"
    return None


class _Followed:
    """The run a socket follows: its key, the page's run_id, and the reader of its stream."""

    def __init__(self, run_id: str, key: str) -> None:
        self.run_id = run_id
        self.key = key
        self.ended = False
        # Set before the reader is cancelled: a cancel that the Redis client swallowed (inside
        # its own clean-up) still ends the reader's loop.
        self.stopped = False
        self.reader: asyncio.Task[None] | None = None


async def bus_session(websocket: WebSocket, bus: Bus, owner: str | None) -> None:
    """Serve an accepted websocket on the queue until it closes."""
    frames = FrameSender(websocket.send_text)
    redis = bus.redis
    client = client_id(owner)
    followed: _Followed | None = None
    # The socket's room frames (a teacher's counts, a student's relay) go through one bounded
    # queue that one task sends in order, as without the queue (``server/ws.py``).
    member = Member(bus.rooms.registry.member_bytes)
    rooms = BusRoomSession(bus.rooms, member, client)
    pump = asyncio.create_task(member.pump(frames.send, frames.send_frame))

    async def emit(event: EventModel) -> None:
        await frames.send(event.model_dump_json())
        await frames.flush()

    async def forward(run: _Followed, after_seq: int) -> None:
        """Send ``run``'s events after ``after_seq`` from its stream, until the socket follows
        another run (cancelled) or the queue lost it."""
        last = b"0"
        down_since: float | None = None
        loop = asyncio.get_running_loop()
        while not run.stopped:
            try:
                read = entries_of(
                    await redis.xread({events_key(run.key): last}, count=200, block=1000)
                )
                if down_since is not None:
                    down_since = None
                    await drop_idle(redis)
                    if not run.ended and not await redis.exists(meta_key(run.key)):
                        await end_locally(run, GONE)
                        return
            except (RedisError, OSError) as exc:
                now = loop.time()
                down_since = now if down_since is None else down_since
                if now - down_since > QUEUE_DOWN_S:
                    if not run.ended:
                        await end_locally(
                            run,
                            f"the run queue (Redis at {bus.where}) stopped answering for "
                            f"{QUEUE_DOWN_S:g} s while this run ran ({exc}): its result is "
                            "unknown; run it again once the server is back",
                        )
                    return
                await asyncio.sleep(0.5)
                continue
            for entry_id, fields in read:
                last = entry_id
                text = fields.get(b"e", b"")
                try:
                    event = EVENT_ADAPTER.validate_json(text)
                except ValidationError:
                    log.error("run %s: its stream holds a line that is no event", run.key)
                    continue
                if event.run_id != run.run_id:
                    continue
                answer = event.detail_of is not None or isinstance(event, DetailFailed)
                if is_terminal(event):
                    if run.ended:
                        continue  # one terminal event per run, whatever was written
                    run.ended = True
                elif not answer and event.seq <= after_seq:
                    continue  # the page has it (resume)
                await frames.send(text.decode())
                if answer or is_terminal(event):
                    await frames.flush()

    async def end_locally(run: _Followed, message: str) -> None:
        run.ended = True
        await emit(RunFailed(kind="worker_crashed", message=message, run_id=run.run_id))

    async def control(run: _Followed, text: str) -> None:
        await redis.xadd(ctl_key(run.key), {"c": text}, maxlen=1000, approximate=True)
        await redis.expire(ctl_key(run.key), RUN_TTL_S)

    async def leave(run: _Followed | None, *, cancel: bool) -> None:
        if run is None:
            return
        run.stopped = True
        await stop_task(run.reader)
        with contextlib.suppress(RedisError, OSError):
            if cancel and not run.ended:
                await control(run, CancelRequest(run_id=run.run_id).model_dump_json())
            await control(run, RELEASE)

    def follow(run: _Followed, after_seq: int) -> None:
        run.reader = asyncio.create_task(forward(run, after_seq))

    async def submit(request: RunRequest) -> None:
        nonlocal followed
        # The size and the exhibit here; the worker kind on the host (the web tier's image has no
        # torch venv: the host that takes the run says when it lacks the kind).
        problem = _problem(request)
        if problem is not None:
            await emit(RunFailed(kind="invalid_request", message=problem, run_id=request.run_id))
            return
        await leave(followed, cancel=True)
        followed = None
        key = new_key()
        lane = lane_of(request.exhibit, request.options, request.device)
        job = Job(key=key, lane=lane, client=client, run=request)
        meta = json.dumps({"run_id": request.run_id, "client": client})
        try:
            # The chip's lane waits for no host forever: none serving it now refuses at once.
            missing = lane == "accelerator" and not await bus.serves(lane)
            queued = 0 if missing else await queue_job(redis, job, meta, QUEUED_PER_CLIENT)
        except (RedisError, OSError) as exc:
            await emit(
                RunFailed(
                    kind="worker_crashed", message=bus.unreachable(exc), run_id=job.run.run_id
                )
            )
            return
        if missing:
            await emit(
                RunFailed(kind="invalid_request", message=NO_ACCELERATOR, run_id=request.run_id)
            )
            return
        if queued < 0:
            message = LANE_FULL if queued == -1 else CLIENT_FULL
            await emit(RunFailed(kind="invalid_request", message=message, run_id=request.run_id))
            return
        followed = _Followed(request.run_id, key)
        await emit(RunAccepted(run_id=request.run_id, token=key, lane=lane))
        follow(followed, -1)
        await rooms.ran(request, key)

    async def resume(request: ResumeRequest) -> None:
        nonlocal followed
        run_id = clean_text(request.run_id, 64)
        meta: bytes | str | None = None
        if valid_key(request.token):
            with contextlib.suppress(RedisError, OSError):
                meta = await redis.get(meta_key(request.token))
        known = _meta(meta)
        if known is None or known.get("run_id") != request.run_id:
            await emit(RunFailed(kind="worker_crashed", message=GONE, run_id=run_id))
            return
        if not await _exists(redis, request.token, known.get("client")):
            await emit(RunFailed(kind="worker_crashed", message=LOST, run_id=run_id))
            return
        if followed is not None and followed.key == request.token:
            # Already followed on this socket: answered as any resume is (its events after
            # ``after_seq`` again, then the rest), by a new reader; the run's details stay (no
            # ``release``: the page did not run again).
            followed.stopped = True
            await stop_task(followed.reader)
        else:
            await leave(followed, cancel=False)
        followed = _Followed(request.run_id, request.token)
        follow(followed, request.after_seq)

    try:
        with contextlib.suppress(RedisError, OSError):
            await ensure_groups(redis)
        while (text := await receive_text(websocket)) is not None:
            request = parse_request(text)
            if isinstance(request, (RunFailed, DetailFailed)):
                await emit(request)
            elif isinstance(request, RunRequest):
                await submit(request)
            elif isinstance(request, ResumeRequest):
                await resume(request)
            elif isinstance(request, (CancelRequest, DetailRequest)):
                run = followed
                if run is None or run.run_id != request.run_id:
                    if isinstance(request, DetailRequest):
                        await emit(
                            DetailFailed(
                                run_id=clean_text(request.run_id, 64),
                                detail_id=clean_text(request.detail_id, 64),
                                message="this page ran again since: the run's details are gone",
                            )
                        )
                    continue
                try:
                    await control(run, request.model_dump_json())
                except (RedisError, OSError) as exc:
                    if isinstance(request, DetailRequest):
                        await emit(
                            DetailFailed(
                                run_id=run.run_id,
                                detail_id=request.detail_id,
                                gone=False,
                                transient=True,
                                message=bus.unreachable(exc),
                            )
                        )
            elif request.type == "follow":
                if request.follow:
                    await emit(
                        WatchedFileChanged(path="", exhibit="", code=None, problem=NOT_WATCHING)
                    )
            else:
                await rooms.request(request)
    finally:
        # First, and as a task of its own: a socket cancelled as it closes (a server that stops,
        # a test client) still tells its room it went.
        bus.rooms.in_background(rooms.leave())
        if followed is not None:
            followed.stopped = True
            await stop_task(followed.reader)
        await stop_task(pump)
        frames.close()
