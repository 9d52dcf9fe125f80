"""A pool of warm sandbox workers (asyncio, in the server or CLI process), with a cap.

The pool keeps ``size`` idle workers warm (JAX imported, backend up, probes imported). Each worker
it hands out is replaced in the background; a caller arriving while the pool is still warming
waits for the first ready worker. With ``size=0`` workers are spawned on demand (the CLI).
Workers are never returned to the pool: a session keeps its worker and kills it at the end, so no
state leaks from one user to another.

``max_workers`` caps leased + idle + starting workers (each costs ~220 MB resident): warm spares
are only kept within the cap, and a caller that needs a worker while the cap is reached waits in
a first-come queue until a leased worker dies or is closed (a run is never refused for
capacity: without a timeout it waits until it gets one or is cancelled; with one it gets
:class:`PoolBusy`). :meth:`WorkerPool.queue_position` and :meth:`WorkerPool.estimate_s` tell a
waiting caller where it stands. Sizes default to what the machine holds
(:func:`jaxscope.settings.auto_sizes`).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import statistics
import time
from collections.abc import Callable

from jaxscope.protocol import WorkerKind
from jaxscope.sandbox import accelerators
from jaxscope.sandbox.kinds import exhibit_limits, worker_kind
from jaxscope.sandbox.worker import WorkerProcess, WorkerStartError
from jaxscope.settings import RESERVED_MEMORY_BYTES, Limits, _available_memory_bytes

log = logging.getLogger(__name__)

DEFAULT_MAX_WORKERS = 8
# The most workers of a pool beside the main one (``WorkerPool.for_exhibit``): torch workers
# hold ~0.9 GB resident each (design 0025).
OTHER_KIND_MAX_WORKERS = 2
# What one worker of a kind beside the main pool's may take resident (design 0057): a torch run
# was measured at 3.8 GB. The workers of such a kind, in all the pools of it together, stay
# within the pool's ``memory_budget_bytes`` at these sizes (at least one always may start).
KIND_MEMORY_BYTES: dict[WorkerKind, int] = {
    "jax": 768 * 2**20,
    "torch": 4 * 2**30,
    "tf": 2 * 2**30,  # TensorFlow + JAX, design 0066
    "tpu_compile": 1 * 2**30,  # JAX + libtpu: 0.4 GB resident after a small compile, design 0067
    "accelerator": 2 * 2**30,  # JAX + the chip's runtime (libtpu); one at a most, design 0069
}
# A first worker start's typical seconds per kind (JAX and torch: the kind's template imports
# JAX or torch_xla and the probes, then forks; design 0053), until this server has measured a
# start of that kind (:meth:`WorkerPool.start_estimate_s`).
FIRST_START_S: dict[WorkerKind, float] = {
    "jax": 3.0,
    "torch": 10.0,
    "tf": 30.0,  # TensorFlow + JAX: 27-38 s measured on a loaded 2-core machine (design 0053)
    "tpu_compile": 8.0,
    "accelerator": 15.0,  # opening the TPU v5e took 13.5 s in a fresh process (design 0056)
}
# The kinds of which one worker at most is alive on a host, in all its pools together: one
# process at a time may hold an accelerator (libtpu's lock file; design 0069).
SINGLE_HOLDER: frozenset[WorkerKind] = frozenset({"accelerator"})
# Seconds a new accelerator worker waits for the last holder of the chip to exit.
HOLDER_EXIT_S = 10.0
# How many of a kind's last measured starts its estimate is the median of: a JAX template's
# first start (imports) and its forks (a fraction of a second) mix, and one slow start on a
# loaded machine moves a median less than a mean.
START_SAMPLES = 5
# Safety net for the wake-ups below (a worker that exits on its own is noticed by polling).
_POLL_S = 0.5
# How long after a lease the replacement spare starts when nobody else waits (design 0080). A
# spare's start (the template's fork, the child's namespaces and warm-up: ~60 ms of CPU, and the
# server reading its ready line) would otherwise share the 2 cores of a small box with the run
# that was just leased, during its trace, the part a user waits for (``bench/latency.py``
# measured ~10 ms of a ~35 ms trace-to-jaxpr); a run takes longer than this to finish, so the
# spare is still ready before the session's next run. A caller waiting in the queue gets its
# worker started at once, as before.
REFILL_DELAY_S = 0.1


class PoolBusy(RuntimeError):
    """Every one of the pool's ``max_workers`` workers stayed leased for the caller's timeout."""


class WorkerPool:
    """``size`` warm idle workers with ``limits``, at most ``max_workers`` workers in all;
    :meth:`acquire` hands one out."""

    def __init__(
        self,
        limits: Limits,
        size: int = 2,
        max_workers: int = DEFAULT_MAX_WORKERS,
        kind: WorkerKind = "jax",
        memory_budget_bytes: int | None = None,
    ) -> None:
        if max_workers < 1:
            raise ValueError(f"max_workers must be at least 1, not {max_workers}")
        self.limits = limits
        self.kind: WorkerKind = kind
        # The pools of workers of another kind or other limits (``for_exhibit``), made on the
        # first run that needs one: a JAX-only user never starts a torch worker.
        self._others: dict[tuple[WorkerKind, Limits], WorkerPool] = {}
        # The memory the workers of those pools may take together (None: what the machine has
        # available when the first of them is made, less RESERVED_MEMORY_BYTES), and the pool
        # that made this one (None for the main pool): a start there asks it (_room_to_start).
        self.memory_budget_bytes = memory_budget_bytes
        self._parent: WorkerPool | None = None
        # The most workers of this pool one client may hold (tenancy.py), where it is stricter
        # than the client's share of the whole pool: half of a pool beside the main one.
        self.client_share: int | None = None
        self.size = size
        self.max_workers = max_workers
        self._idle: collections.deque[WorkerProcess | BaseException] = collections.deque()
        self._starting: set[asyncio.Task[None]] = set()
        self._leased: set[WorkerProcess] = set()
        # Callers waiting for a worker, first come first served.
        self._queue: collections.deque[object] = collections.deque()
        # Per waiting caller: whether it may take a worker now (its client's share).
        self._eligible: dict[object, Callable[[], bool]] = {}
        # _first_eligible's answer for the state numbered _generation: every waiter asks it on
        # every wake-up, and each answer walks the queue (a client's share walks its sessions).
        self._generation = 0
        self._first: tuple[int, object | None] | None = None
        self._changed = asyncio.Event()
        self._closed = False
        # Leased workers kept only for a finished run's details, oldest first, with the call
        # that releases each: the first to go when a caller needs a slot at the cap.
        self._kept: dict[WorkerProcess, Callable[[], None]] = {}
        self.spawned = 0
        self.handed_out = 0
        # Running means (exponential, seconds) of how long a leased worker is held and how long
        # one takes to start: the queue's estimate.
        self.mean_hold_s: float | None = None
        self.mean_start_s: float | None = None
        # The workers of a SINGLE_HOLDER kind ever leased from this pool or the pools beside it
        # (kept on the main pool) that may not have exited yet: a new one waits for them.
        self._holders: set[WorkerProcess] = set()
        # The last START_SAMPLES measured starts (s) per worker kind, in all the pools of this
        # server (kept on the main pool): :meth:`start_estimate_s`.
        self._starts: dict[WorkerKind, collections.deque[float]] = {}

    def start(self, *, accelerator_spare: bool = True) -> None:
        """Begin warming ``size`` workers in the background (call inside the event loop); on a
        host with an accelerator, the main pool of a server (``size`` > 0) also starts the
        accelerator's warm spare, so that the first run finds the chip opened (design 0069),
        unless ``accelerator_spare`` is False (a queue's pool host without the accelerator
        lane: design 0071)."""
        self._fill()
        spare = accelerator_spare and self.size > 0
        if self._parent is None and spare and accelerators.attached() is not None:
            self._beside("accelerator", self.limits)

    def for_exhibit(
        self, exhibit_id: str, options: object = None, device: str | None = None
    ) -> WorkerPool:
        """The pool whose workers run ``exhibit_id`` with run ``options`` (a ``RunOptions``;
        None: the defaults): this one, or (an exhibit or option of another worker kind, or
        limits of its own, ``sandbox/kinds.py``) a pool kept beside it, made and started on the
        first call (inside the event loop). Such a pool keeps at most one warm spare and
        :data:`OTHER_KIND_MAX_WORKERS` workers (a torch worker holds ~0.9 GB); an accelerator's
        pool one worker, which is its warm spare until a run takes it (``device``:
        ``RunRequest.device``; design 0069)."""
        kind = worker_kind(exhibit_id, options, device)
        # One pool for a single-holder kind, whatever an exhibit's own limits: a spare idle in
        # a second pool of the kind would keep the chip from the runs waiting in the first.
        limits = (
            self.limits if kind in SINGLE_HOLDER else exhibit_limits(exhibit_id, self.limits, kind)
        )
        if (kind, limits) == (self.kind, self.limits):
            return self
        return self._beside(kind, limits)

    def _beside(self, kind: WorkerKind, limits: Limits) -> WorkerPool:
        """The pool of ``kind`` and ``limits`` kept beside this one, made and started now when
        there is none yet."""
        key = (kind, limits)
        pool = self._others.get(key)
        if pool is None:
            pool = WorkerPool(
                limits,
                size=min(self.size, 1),
                max_workers=min(self.max_workers, OTHER_KIND_MAX_WORKERS, self.kind_cap(kind)),
                kind=kind,
            )
            pool._parent = self
            pool.client_share = max(1, pool.max_workers // 2)
            self._others[key] = pool
            pool.start()
        return pool

    def kind_cap(self, kind: WorkerKind) -> int:
        """The most workers of ``kind`` the pools beside this one hold together: as many as
        ``memory_budget_bytes`` holds at :data:`KIND_MEMORY_BYTES` each, at least one."""
        if kind in SINGLE_HOLDER:
            return 1
        if self.memory_budget_bytes is None:
            self.memory_budget_bytes = max(0, _available_memory_bytes() - RESERVED_MEMORY_BYTES)
        return max(1, self.memory_budget_bytes // KIND_MEMORY_BYTES[kind])

    def _room_to_start(self) -> bool:
        """Whether one more worker may start here: always in the main pool; in a pool beside
        it, while the workers of its kind in all those pools stay within the kind's cap."""
        parent = self._parent
        if parent is None:
            return True
        same = [p for p in parent._others.values() if p.kind == self.kind]
        return sum(p._total() for p in same) < parent.kind_cap(self.kind)

    def _starting_count(self) -> int:
        return sum(not task.done() for task in self._starting)

    def _leased_count(self) -> int:
        # A leased worker counts until it is killed or found dead (its memory is then freed).
        self._leased = {w for w in self._leased if w.alive}
        return len(self._leased)

    def _total(self) -> int:
        return self._leased_count() + len(self._idle) + self._starting_count()

    def _fill(self) -> None:
        # Warm spares for the waiting callers plus ``size`` more, within the cap.
        while (
            not self._closed
            and len(self._idle) + self._starting_count() < self.size + len(self._queue)
            and self._total() < self.max_workers
            and self._room_to_start()
        ):
            self._spawn()

    def _spawn(self) -> None:
        self.spawned += 1
        task = asyncio.ensure_future(self._start_one())
        self._starting.add(task)
        task.add_done_callback(self._starting.discard)

    def _wake(self) -> None:
        # Whatever changed (a worker ready or gone, a caller in or out of the queue) may change
        # who is eligible: the next _first_eligible computes it again.
        self._generation += 1
        self._changed.set()

    @staticmethod
    def _mean(old: float | None, new: float) -> float:
        return new if old is None else 0.8 * old + 0.2 * new

    def _held(self, since: float) -> Callable[[], None]:
        def gone() -> None:
            self.mean_hold_s = self._mean(self.mean_hold_s, time.monotonic() - since)
            # A slot is free: keep the warm spares up even when nobody waits right now.
            self._fill()
            self._wake()

        return gone

    def queue_position(self, ticket: object) -> int | None:
        """1-based place of the caller ``ticket`` (passed to :meth:`acquire`) in the queue, or
        None when it is not waiting."""
        try:
            return self._queue.index(ticket) + 1
        except ValueError:
            return None

    def waiting(self) -> int:
        """How many callers wait for a worker."""
        return len(self._queue)

    def estimate_s(self, position: int) -> float | None:
        """About how long (s) the caller at ``position`` waits: workers free up at
        ``max_workers`` per mean hold time, and one then takes a mean start time; None until a
        worker has been held once."""
        if self.mean_hold_s is None:
            return None
        start = self.mean_start_s or 0.0
        return position * self.mean_hold_s / self.max_workers + start

    def starting(self) -> bool:
        """Whether a worker of this pool is being started now."""
        return self._starting_count() > 0

    def start_estimate_s(self) -> float:
        """About how long (s) a worker of this pool's kind takes to start: the median of this
        server's last :data:`START_SAMPLES` measured starts of that kind (in any of its pools),
        or before the first the typical one (:data:`FIRST_START_S`: a JAX template's import of
        JAX and the probes, a torch worker's import of torch_xla, on a loaded 2-core machine)."""
        starts = (self._parent or self)._starts.get(self.kind)
        return statistics.median(starts) if starts else FIRST_START_S[self.kind]

    def _measured_start(self, seconds: float) -> None:
        """Record a worker start of this pool's kind that took ``seconds``."""
        self.mean_start_s = self._mean(self.mean_start_s, seconds)
        root = self._parent or self
        root._starts.setdefault(self.kind, collections.deque(maxlen=START_SAMPLES)).append(seconds)

    async def _start_one(self) -> None:
        if self.kind in SINGLE_HOLDER:
            # The chip is free once its last holder has exited, not when it was told to: a
            # process that opens it before then fails on libtpu's lock file (design 0069).
            root = self._parent or self
            for old in [w for w in root._holders if not w.alive]:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(old.proc.wait(), HOLDER_EXIT_S)
                root._holders.discard(old)
        started = time.monotonic()
        try:
            worker = await WorkerProcess.spawn(self.limits, self.kind)
        except Exception as exc:
            log.error("worker failed to start: %s", exc)
            self._idle.append(exc)
            self._wake()
            return
        self._measured_start(time.monotonic() - started)
        if self._closed:
            await worker.close()
            return
        self._idle.append(worker)
        self._wake()

    async def acquire(
        self,
        timeout: float | None = None,
        eligible: Callable[[], bool] | None = None,
        ticket: object | None = None,
        on_lease: Callable[[WorkerProcess], None] | None = None,
    ) -> WorkerProcess:
        """A warm worker (waits while the pool warms up, or while it is full). Callers are
        served first come, first served among those ``eligible()`` at that moment (a caller
        whose client holds its share of workers, ``tenancy.py``, is passed over, not blocking
        the others; it keeps its place for when it is eligible again). Raises
        :class:`WorkerStartError` when the worker started for this call could not start, and
        :class:`PoolBusy` when no worker came within ``timeout`` seconds (never without a
        ``timeout``: a run waits until it gets one or is cancelled). ``ticket``: any object
        naming the caller in :meth:`queue_position`; ``on_lease(worker)`` is called the moment
        the worker is leased, before any other waiter is looked at (the caller's client counts
        it toward its share from then on)."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        me = object() if ticket is None else ticket
        self._queue.append(me)
        if eligible is not None:
            self._eligible[me] = eligible
        self._wake()
        try:
            while True:
                if self._closed:
                    raise WorkerStartError("the worker pool is closed")
                if self._idle and self._first_eligible() is me:
                    item = self._idle.popleft()
                    if isinstance(item, BaseException):
                        raise WorkerStartError(str(item)) from item
                    if not item.alive:
                        await item.close()
                        continue
                    return self._lease_to(item, on_lease)
                self._reclaim_kept()
                self._fill()
                wait_s = _POLL_S
                if deadline is not None:
                    remaining = deadline - loop.time()
                    if remaining <= 0:
                        raise PoolBusy(
                            f"all {self.max_workers} sandbox workers are busy; try again"
                        )
                    wait_s = min(wait_s, remaining)
                self._changed.clear()
                # asyncio.timeout, not wait_for: Python 3.11's wait_for returns the inner
                # result when a cancel comes in the loop turn after a wake-up (`_wake` set the
                # event), dropping the cancel: the caller went on waiting, and a worker it got
                # later was leased to nobody (Session._abandon had given up on it).
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(wait_s):
                        await self._changed.wait()
        finally:
            self._queue.remove(me)
            self._eligible.pop(me, None)
            self._refill()
            self._wake()

    def lease_now(
        self,
        eligible: Callable[[], bool] | None = None,
        on_lease: Callable[[WorkerProcess], None] | None = None,
    ) -> WorkerProcess | None:
        """A warm spare at once, when one is idle and nobody waits (what :meth:`acquire` would
        hand out without waiting, without its futures: ~0.4 ms of a small run's way to its
        worker, design 0080); None otherwise (the caller then awaits :meth:`acquire`)."""
        if self._closed or self._queue or not self._idle:
            return None
        item = self._idle[0]
        if isinstance(item, BaseException) or not item.alive:
            return None  # acquire raises or closes it
        if eligible is not None and not eligible():
            return None
        self._idle.popleft()
        worker = self._lease_to(item, on_lease)
        self._refill()
        self._wake()
        return worker

    def _refill(self) -> None:
        # After a lease: spares for the callers still waiting at once, the warm spare after
        # REFILL_DELAY_S (not beside the leased run's trace).
        if self._queue or self.size == 0:
            self._fill()
        else:
            asyncio.get_running_loop().call_later(REFILL_DELAY_S, self._fill)

    def _lease_to(
        self, item: WorkerProcess, on_lease: Callable[[WorkerProcess], None] | None
    ) -> WorkerProcess:
        self._leased.add(item)
        if self.kind in SINGLE_HOLDER:
            (self._parent or self)._holders.add(item)
        item.add_gone_callback(self._held(time.monotonic()))
        self.handed_out += 1
        if on_lease is not None:
            on_lease(item)
        return item

    def keep(self, worker: WorkerProcess, release: Callable[[], None]) -> None:
        """``worker`` (leased) now only holds a finished run's details: ``release()`` kills it
        when a caller needs its slot (the details are then gone, which the page is told)."""
        self._kept[worker] = release

    def unkeep(self, worker: WorkerProcess) -> None:
        """``worker`` is no longer kept for details (its session released it)."""
        self._kept.pop(worker, None)

    def _reclaim_kept(self) -> None:
        # A run waiting for a slot beats a finished run's details: the oldest kept worker goes.
        if self._idle or self._starting_count() or self._total() < self.max_workers:
            return
        if self._first_eligible() is None:  # no waiter may take the slot now (its share)
            return
        self._kept = {w: r for w, r in self._kept.items() if w.alive}
        if self._kept:
            worker = next(iter(self._kept))
            release = self._kept.pop(worker)
            log.info("worker %d kept for details released: a run needs its slot", worker.pid)
            release()

    def _first_eligible(self) -> object | None:
        """The earliest waiting caller that may take a worker now (computed once per change of
        the pool's state: a queue of n waiters costs O(n) per change, not O(n²))."""
        if self._first is not None and self._first[0] == self._generation:
            return self._first[1]
        first: object | None = None
        for ticket in self._queue:
            check = self._eligible.get(ticket)
            if check is None or check():
                first = ticket
                break
        self._first = (self._generation, first)
        return first

    def must_wait(self, position: int) -> bool:
        """Whether the caller at ``position`` waits for a busy pool: more callers are ahead of
        it (itself included) than idle and starting workers, and no more can start (the cap)."""
        idle = sum(isinstance(item, WorkerProcess) and item.alive for item in self._idle)
        ready_soon = idle + self._starting_count()
        return position > ready_soon and self._total() >= self.max_workers

    def is_eligible(self, ticket: object) -> bool:
        """Whether the waiting caller ``ticket`` may take a worker now (its client is within
        its share)."""
        check = self._eligible.get(ticket)
        return check is None or check()

    def full(self) -> bool:
        """Whether a caller would have to wait: no idle worker and ``max_workers`` in use."""
        idle = any(isinstance(item, WorkerProcess) and item.alive for item in self._idle)
        return not idle and self._total() >= self.max_workers

    def state(self) -> dict[str, int]:
        """``size``, ``max`` workers, ``leased``, ``idle`` and ``starting`` workers, callers
        ``waiting``, and totals ``spawned``/``handed_out``."""
        return {
            "size": self.size,
            "max": self.max_workers,
            "leased": self._leased_count(),
            "idle": sum(isinstance(item, WorkerProcess) for item in self._idle),
            "starting": self._starting_count(),
            "waiting": len(self._queue),
            "spawned": self.spawned,
            "handed_out": self.handed_out,
        }

    async def close(self) -> None:
        """Stop warming and kill every idle worker (of the pools beside it too)."""
        for other in self._others.values():
            await other.close()
        self._closed = True
        self._wake()
        for task in list(self._starting):
            task.cancel()
        for task in list(self._starting):
            with contextlib.suppress(BaseException):
                await task
        while self._idle:
            item = self._idle.popleft()
            if isinstance(item, WorkerProcess):
                await item.close()
