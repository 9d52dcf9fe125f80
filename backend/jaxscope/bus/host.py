"""A pool host on the run queue: ``jaxscope pool --queue redis://… --lanes light=2,heavy=1``
(design 0065).

The host heartbeats (``host:<id>``, its lanes), and per lane runs as many takers as it has
workers for that lane: each reads one job at a time through the lane's consumer group (so it
takes a run only when it has a worker for it), validates it (:class:`~jaxscope.bus.jobs.Job`:
anything else is refused, logged and acknowledged, and the host goes on), checks the client's
share across all hosts (``clients``; :meth:`PoolHost.share`: at most half the lane's workers on
all live hosts, so that one client never holds every worker of a lane; a client at its share has
its job put back at the lane's end and lets the others by), marks it started once
(``store.start_run``), acknowledges it, and runs it on a
:class:`~jaxscope.sandbox.session.Session` of its own worker pool, exactly as a local session
does (limits, death classification, one terminal event). Events go to the run's stream; the
run's ``ctl`` stream brings cancels and detail requests; a run that kept its details keeps its
worker for them (beside the takers) until the page runs again (``release``) or the session's own
time limit.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import logging
import signal
from collections.abc import Awaitable, Callable, Mapping

from pydantic import ValidationError

from exhibits.registry import EXHIBITS
from jaxscope.bus.jobs import (
    CLIENTS,
    GROUP,
    HEARTBEAT_S,
    HOST_TTL_S,
    LANES,
    RELEASE,
    Job,
    Lane,
    ctl_key,
    events_key,
    host_key,
    lane_key,
    lane_problem,
    runs_key,
)
from jaxscope.bus.store import (
    Redis,
    RedisError,
    StreamEntry,
    drop_idle,
    end_run,
    ensure_groups,
    entries_of,
    next_seq,
    start_run,
    stop_task,
    sweep,
)
from jaxscope.protocol import (
    REQUEST_ADAPTER,
    CancelRequest,
    DetailRequest,
    EventModel,
    RunFailed,
    RunQueued,
    is_terminal,
)
from jaxscope.sandbox import accelerators
from jaxscope.sandbox.pool import WorkerPool
from jaxscope.sandbox.session import Session
from jaxscope.sandbox.worker import Emit
from jaxscope.settings import Limits

log = logging.getLogger(__name__)

# A taker that puts back a job it had put back before (it went round the lane: no other
# client's job was before it) waits this long before it reads again (so that a lane holding
# only that client's jobs is not spun through). A job put back the first time costs no wait:
# the taker reads on at once, to the other clients' jobs behind a flood.
SHARE_BACKOFF_S = 0.5
# Back-off while Redis is unreachable (seconds, doubling).
RETRY_MIN_S, RETRY_MAX_S = 0.2, 3.0


def _log_tasks() -> None:
    """SIGUSR1: log every task's stack (a diagnosis of a run that seems stuck on this host)."""
    for task in asyncio.all_tasks():
        out = io.StringIO()
        task.print_stack(limit=12, file=out)
        log.warning("task %s:\n%s", task.get_name(), out.getvalue())


def _why_refused(exc: Exception) -> str:
    """Which fields of a job were wrong and how (pydantic's loc and type), never their values
    (the job's code is the user's)."""
    if isinstance(exc, ValidationError):
        return "; ".join(
            f"{'.'.join(str(part) for part in error['loc']) or 'job'}: {error['type']}"
            for error in exc.errors(include_input=False, include_url=False)[:5]
        )
    return str(exc).splitlines()[0][:300]


def parse_lanes(text: str) -> dict[Lane, int]:
    """``light=2,heavy=1`` -> ``{"light": 2, "heavy": 1}``; raises ValueError on anything else."""
    lanes: dict[Lane, int] = {}
    for part in text.split(","):
        name, _, count = part.strip().partition("=")
        if name not in ("light", "heavy", "torch", "accelerator"):
            raise ValueError(f"unknown lane {name!r}: light, heavy, torch or accelerator")
        try:
            n = int(count or "1")
        except ValueError:
            raise ValueError(f"lane {name}: {count!r} is not a number of workers") from None
        if n < 1:
            raise ValueError(f"lane {name}: at least one worker")
        if name == "accelerator" and n != 1:
            raise ValueError("lane accelerator: one worker (one run holds the chip at a time)")
        lanes[name] = n  # type: ignore[index]
    return lanes


def lanes_problem(lanes: Mapping[Lane, int]) -> str | None:
    """Why this host cannot take ``lanes``, or None: the ``accelerator`` lane needs an
    accelerator here (``accelerators.attached``: its device nodes, or ``JAXSCOPE_ACCELERATOR``)."""
    if "accelerator" in lanes and accelerators.attached() is None:
        return (
            "--lanes accelerator: this host has no accelerator (no TPU, NVIDIA or AMD device "
            f"node in /dev; {accelerators.ACCELERATOR_ENV} names one)"
        )
    return None


class PoolHost:
    """One host's takers, heartbeat and sweeper on the queue ``redis``."""

    def __init__(
        self,
        redis: Redis,
        lanes: Mapping[Lane, int],
        limits: Limits,
        *,
        host_id: str,
        per_client: int,
        warm: int = 1,
    ) -> None:
        self.redis = redis
        self.lanes = dict(lanes)
        self.host_id = host_id
        self.per_client = per_client
        self.pool = WorkerPool(limits, size=warm, max_workers=sum(self.lanes.values()))
        self._details: set[asyncio.Task[None]] = set()
        # The runs this host holds (started, not ended): its heartbeat lists them, so that the
        # sweeper ends one this host dropped.
        self._live: set[str] = set()
        self.refused = 0  # malformed jobs seen (for tests and health)
        # Each lane's workers on all live hosts (their heartbeats), refreshed each heartbeat:
        # the share's bound (this host's own lanes until the first count).
        self.capacity: dict[Lane, int] = dict(self.lanes)

    def share(self, lane: Lane) -> int:
        """The runs one client may hold at once (all lanes, all hosts) when it takes a job of
        ``lane``: ``per_client``, but at most half the lane's workers on all live hosts (at
        least one), so that one client never holds every worker of a lane while another's job
        waits: with 2 light workers in all, a client holds one and the other goes to the next
        client's job (the first client's next job is put back at the lane's end)."""
        return max(1, min(self.per_client, self.capacity.get(lane, 0) // 2))

    async def _count_capacity(self) -> None:
        """Sum each lane's workers over the live hosts' heartbeats (``host:<id>``: a host's
        lanes as JSON); a heartbeat that is not such a map is skipped."""
        capacity: dict[Lane, int] = {}
        keys = [key async for key in self.redis.scan_iter(match=host_key("*"), count=1000)]
        values = await self.redis.mget(keys) if keys else []
        for raw in values:
            try:
                lanes = json.loads(raw) if raw is not None else {}
            except ValueError:
                continue
            if not isinstance(lanes, dict):
                continue
            for lane, count in lanes.items():
                if lane in LANES and isinstance(count, int) and 0 < count <= 10_000:
                    capacity[lane] = capacity.get(lane, 0) + count
        for lane, count in self.lanes.items():  # this host's own, whatever Redis says
            capacity[lane] = max(capacity.get(lane, 0), count)
        self.capacity = capacity

    async def serve(self, started: asyncio.Event | None = None) -> None:
        """Take runs until cancelled; ``started`` is set after the first heartbeat."""
        # The chip's warm spare only on a host that serves the accelerator lane: elsewhere no
        # run asks for the chip (every JAX run there runs on the CPU devices, ``_run``).
        self.pool.start(accelerator_spare="accelerator" in self.lanes)
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            asyncio.get_running_loop().add_signal_handler(signal.SIGUSR1, _log_tasks)
        tasks: list[asyncio.Task[None]] = []
        try:
            await self._until_up(self._setup)
            tasks.append(asyncio.create_task(self._heartbeat()))
            for lane, count in self.lanes.items():
                for _ in range(count):
                    tasks.append(asyncio.create_task(self._taker(lane)))
            log.info("pool host %s takes %s", self.host_id, self.lanes)
            if started is not None:
                started.set()
            await asyncio.gather(*tasks)
        finally:
            for task in [*tasks, *self._details]:
                await stop_task(task)
            with contextlib.suppress(RedisError, OSError):
                await self.redis.delete(host_key(self.host_id))
            await self.pool.close()

    async def _setup(self) -> None:
        await ensure_groups(self.redis, tuple(self.lanes))
        await self._beat()
        await self._count_capacity()

    async def _until_up(self, step: Callable[[], Awaitable[None]]) -> None:
        """Await ``step()`` until Redis answers (logged once per outage)."""
        delay = RETRY_MIN_S
        warned = False
        while True:
            try:
                await step()
                if warned:
                    log.warning("the run queue answers again")
                    await drop_idle(self.redis)
                return
            except (RedisError, OSError) as exc:
                if not warned:
                    log.warning("the run queue is unreachable (%s): retrying", exc)
                    warned = True
                await asyncio.sleep(delay)
                delay = min(delay * 2, RETRY_MAX_S)

    async def _beat(self) -> None:
        ttl = int(HOST_TTL_S * 1000)
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.set(host_key(self.host_id), json.dumps(self.lanes), px=ttl)
            pipe.set(runs_key(self.host_id), json.dumps(sorted(self._live)), px=ttl)
            await pipe.execute()

    async def _heartbeat(self) -> None:
        while True:
            await asyncio.sleep(HEARTBEAT_S)
            try:
                await self._beat()
                await self._count_capacity()
                await sweep(self.redis, self.host_id)
            except (RedisError, OSError) as exc:
                log.warning("heartbeat: the run queue is unreachable (%s)", exc)
            except Exception:  # bad data must not stop the heartbeat: log, go on
                log.exception("heartbeat: the sweep failed")

    async def _taker(self, lane: Lane) -> None:
        stream = lane_key(lane)
        while True:
            read: list[StreamEntry] = []

            async def take() -> None:
                nonlocal read
                try:
                    read = entries_of(
                        await self.redis.xreadgroup(
                            GROUP, self.host_id, {stream: ">"}, count=1, block=1000
                        )
                    )
                except RedisError as exc:
                    if "NOGROUP" in str(exc):  # Redis restarted without its data
                        await ensure_groups(self.redis, (lane,))
                        read = []
                        return
                    raise

            await self._until_up(take)
            for entry_id, fields in read:
                try:
                    await self._take(lane, entry_id, fields)
                except (RedisError, OSError) as exc:
                    log.warning("run queue error while taking a run: %s", exc)
                except Exception:  # one bad job must not stop the taker: log, go on
                    log.exception("taking job %r on lane %s failed", entry_id, lane)

    async def _take(self, lane: Lane, entry_id: bytes, fields: dict[bytes, bytes]) -> None:
        stream = lane_key(lane)
        raw = fields.get(b"job", b"")
        try:
            job = Job.model_validate_json(raw)
            if job.lane != lane:
                raise ValueError(f"a {job.lane} job on the {lane} lane")
            problem = lane_problem(job)
            if problem is not None:
                raise ValueError(problem)
        except (ValidationError, ValueError) as exc:
            self.refused += 1
            why = _why_refused(exc)
            log.error("refused a malformed job %s on lane %s: %s", entry_id.decode(), lane, why)
            await self.redis.xack(stream, GROUP, entry_id)
            return
        holding = int(await self.redis.hincrby(CLIENTS, job.client, 1))
        if holding > self.share(lane):
            await self.redis.hincrby(CLIENTS, job.client, -1)
            # Let the other clients by: back at the lane's end (behind the jobs queued after
            # it, which this taker reads next), told why once.
            first = fields.get(b"deferred") is None
            await self.redis.xadd(stream, {"job": raw, "deferred": b"1"})
            await self.redis.xack(stream, GROUP, entry_id)
            if first:
                queued = RunQueued(
                    run_id=job.run.run_id, position=1, waiting=1, reason="client_share"
                )
                await self.redis.xadd(events_key(job.key), {"e": queued.model_dump_json()})
            else:
                await asyncio.sleep(SHARE_BACKOFF_S)
            return
        self._live.add(job.key)  # listed before it starts: never missing from a heartbeat
        try:
            started = await start_run(self.redis, job, self.host_id)
        except BaseException:
            self._live.discard(job.key)
            raise
        if not started:
            # Started already (a job delivered twice): never run twice.
            self._live.discard(job.key)
            await self.redis.hincrby(CLIENTS, job.client, -1)
            await self.redis.xack(stream, GROUP, entry_id)
            return
        try:
            await self.redis.xack(stream, GROUP, entry_id)
        except (RedisError, OSError) as exc:
            await self._lost(job, exc)
            return
        await self._run(job)

    async def _run(self, job: Job) -> None:
        session = Session(self.pool, EXHIBITS, report_starts=True)
        key = job.key
        # The lane says where a JAX run runs (design 0071): the chip for the accelerator lane
        # (``lane_problem`` checked that the run asks for it), the CPU devices for the others,
        # whatever the host has (design 0069's default, None, would take the chip).
        run = job.run if job.lane == "accelerator" else job.run.model_copy(update={"device": "cpu"})

        async def emit(event: EventModel) -> None:
            text = event.model_dump_json()
            if is_terminal(event):
                await end_run(self.redis, key, job.client, text)
            else:
                await self.redis.xadd(events_key(key), {"e": text})

        ctl = asyncio.create_task(self._control(job, session, emit))
        try:
            await session.run(run, emit)
        except (RedisError, OSError) as exc:
            # The run's events cannot be written: stop it, and end it (once the queue answers
            # again) so that its page hears of it and its client's share is given back.
            log.warning("run %s: the run queue went away mid-run (%s)", key, exc)
            await stop_task(ctl)
            await session.close()
            await self._lost(job, exc)
            return
        finally:
            self._live.discard(key)
        if session.details_worker is None:
            ctl.cancel()
            await session.close()
            return
        # Details kept: the ctl reader answers them beside the takers until released.
        task = asyncio.create_task(self._keep_details(session, ctl))
        self._details.add(task)
        task.add_done_callback(self._details.discard)

    async def _lost(self, job: Job, exc: BaseException) -> None:
        """End ``job``'s run with ``host_lost`` once the queue answers again (nothing written
        when it ended already: its terminal event got through, or a sweeper ended it)."""
        self._live.discard(job.key)
        message = (
            f"the run queue stopped answering while this run ran on {self.host_id} ({exc}): "
            "the run was stopped and its result is lost. Run it again"
        )

        async def end() -> None:
            failed = RunFailed(
                kind="host_lost",
                message=message,
                run_id=job.run.run_id,
                seq=await next_seq(self.redis, job.key),
            )
            if await end_run(self.redis, job.key, job.client, failed.model_dump_json()):
                log.warning("run %s: ended with host_lost (the queue was away)", job.key)

        await self._until_up(end)

    async def _keep_details(self, session: Session, ctl: asyncio.Task[None]) -> None:
        try:
            while session.details_worker is not None and not ctl.done():
                await asyncio.sleep(0.5)
        finally:
            await stop_task(ctl)
            await session.close()

    async def _control(self, job: Job, session: Session, emit: Emit) -> None:
        """Read the run's ``ctl`` stream from its start (a cancel sent while the job waited is
        seen): ``cancel``, ``detail``, ``release``; anything else is ignored."""
        last = b"0"
        answering: set[asyncio.Task[None]] = set()
        stream = ctl_key(job.key)
        while True:
            try:
                read = entries_of(await self.redis.xread({stream: last}, count=50, block=1000))
            except (RedisError, OSError):
                await asyncio.sleep(RETRY_MIN_S)
                continue
            for entry_id, fields in read:
                last = entry_id
                text = fields.get(b"c", b"").decode("utf-8", "replace")
                if text == RELEASE:
                    session.release_details()
                    return
                try:
                    request = REQUEST_ADAPTER.validate_json(text)
                except ValidationError:
                    continue
                if not isinstance(request, (CancelRequest, DetailRequest)):
                    continue
                if request.run_id != job.run.run_id:
                    continue
                if isinstance(request, CancelRequest):
                    session.cancel(request.run_id)
                else:
                    task = asyncio.create_task(session.detail(request, emit))
                    answering.add(task)
                    task.add_done_callback(answering.discard)
