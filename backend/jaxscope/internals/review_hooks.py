"""Hooks for the ``review`` exhibit: what a training step does that a code reviewer asks about,
seen for real while the step runs (``docs/design/0033-review.md``).

* :func:`device_to_host_reads`: every read of a ``jax.Array``'s value from the snippet's code
  (``float``/``int``/``bool``, ``.item()``, ``.tolist()``, ``print``/``str``/``repr``/``format``,
  ``np.asarray``/``np.array``, ``jax.device_get``), with the snippet line. On the CPU backend
  ``jax.transfer_guard`` never fires for these (reference, headline finding 3), so the methods
  of ``jax._src.array.ArrayImpl`` are wrapped for the block, and numpy's ``asarray``/``array``
  (which read a ``jax.Array`` through the buffer protocol, past every Python method) and
  ``jax.device_get`` are wrapped in their modules: the snippet looks them up at call time.
* :func:`random_calls`: calls of ``numpy.random``'s and Python ``random``'s module functions
  from the snippet, and whether JAX was tracing then (``core.trace_ctx.trace`` is not the eval
  trace): drawn while tracing, the numbers are baked into the program.
* :func:`guarded`: ``jax.transfer_guard_host_to_device("disallow")`` for the block, except while a
  snippet line of ``allowed`` runs (a ``sys.settrace`` tracer on the snippet's frames only flips
  the guard per line), so that one run finds the next host-to-device transfer after those found.
* :func:`executions`: how many XLA executables a block launched, from a ``jax.profiler`` trace
  (``CommonPjRtLoadedExecutable::ExecuteHelperOnSingleDevice`` events): eager ops run through
  the C++ dispatch fast path, where no Python hook sees them.
* :func:`baked_constants`: the constants of a traced jaxpr (``ClosedJaxpr.consts``), with the
  snippet line of the first eqn that reads each, found with JAX's own
  ``jaxpr_util.eqns_using_var`` (what ``jax_captured_constants_report_frames`` prints).

Every patch is undone on exit, also when the block raises.
"""

from __future__ import annotations

import contextlib
import glob
import random as py_random
import resource
import sys
import tempfile
import threading
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import jax
import numpy as np
from jax._src import core, jaxpr_util
from jax._src.array import ArrayImpl

from jaxscope.internals.jit_watch import user_call_site
from jaxscope.internals.patching import patched
from jaxscope.internals.views import snippet_source
from jaxscope.snippet_model import SNIPPET_FILENAME

# ArrayImpl methods that read the array's value to the host, named as the user writes them.
READ_METHODS: dict[str, str] = {
    "__float__": "float()",
    "__int__": "int()",
    "__bool__": "bool() (an if/while on an array)",
    "__index__": "an index (operator.index)",
    "__complex__": "complex()",
    "item": ".item()",
    "tolist": ".tolist()",
    "__array__": "np.asarray() (__array__)",
    "__repr__": "repr()/print()",
    "__str__": "str()/print()",
    "__format__": "an f-string/format()",
}

# numpy.random's and Python random's module functions that draw numbers (or make a generator).
NUMPY_RANDOM = (
    "rand randn randint random random_sample normal uniform choice permutation shuffle "
    "binomial poisson standard_normal default_rng seed"
).split()
PY_RANDOM = (
    "random uniform gauss normalvariate randint randrange choice choices sample shuffle seed"
).split()

# The profiler's event for one launch of a compiled executable on one device (jaxlib 0.10.2).
EXECUTE_EVENT = "CommonPjRtLoadedExecutable::ExecuteHelperOnSingleDevice"


@dataclass(frozen=True)
class HostRead:
    """A device-to-host read from the snippet: ``op`` (``".item()"``, ``"float()"``...), the
    snippet ``line`` and ``function`` that made it, the array's ``aval`` (``f32[]``)."""

    op: str
    line: int
    function: str
    aval: str


@dataclass(frozen=True)
class RandomCall:
    """A ``numpy.random``/``random`` call from the snippet: ``api`` (``np.random.normal``), the
    snippet ``line`` and ``function``, and whether JAX was ``tracing`` then."""

    api: str
    line: int
    function: str
    tracing: bool


def _snippet_caller() -> tuple[int, str] | None:
    """``(line, function)`` of the frame that called the hooked function, when it is the
    snippet's (a read JAX's own code makes is not the user's)."""
    frame: types.FrameType | None = sys._getframe(2)
    if frame is not None and frame.f_code.co_filename == SNIPPET_FILENAME:
        return frame.f_lineno, frame.f_code.co_name
    return None


def _short(x: Any) -> str:
    return str(x.aval.str_short(short_dtypes=True))


@contextlib.contextmanager
def device_to_host_reads() -> Iterator[list[HostRead]]:
    """Within the block, record each read of a ``jax.Array``'s value made from a snippet line
    (module docstring); the outermost hooked call only (``print`` calls ``__str__`` which reads
    ``_value``: one read). Yields the list, filled as the block runs."""
    reads: list[HostRead] = []
    depth = [0]

    def wrap(name: str, original: Callable[..., Any]) -> Callable[..., Any]:
        op = READ_METHODS[name]

        def hooked(self: Any, *a: Any, **kw: Any) -> Any:
            if depth[0] == 0:
                site = user_call_site()
                if site is not None:
                    reads.append(HostRead(op, site[0], site[1], _short(self)))
            depth[0] += 1
            try:
                return original(self, *a, **kw)
            finally:
                depth[0] -= 1

        return hooked

    def wrap_numpy(api: str, original: Callable[..., Any]) -> Callable[..., Any]:
        def hooked(*a: Any, **kw: Any) -> Any:
            # the value may come by keyword (np.asarray(a=x), np.array(object=x)): the hook
            # takes what the original takes
            obj = a[0] if a else kw.get("a", kw.get("object"))
            site = _snippet_caller()
            if site is not None and depth[0] == 0:
                arrays = [x for x in jax.tree.leaves(obj) if isinstance(x, jax.Array)]
                if arrays and not isinstance(arrays[0], core.Tracer):
                    reads.append(HostRead(api, site[0], site[1], _short(arrays[0])))
            depth[0] += 1
            try:
                return original(*a, **kw)
            finally:
                depth[0] -= 1

        return hooked

    methods = {n: wrap(n, getattr(ArrayImpl, n)) for n in READ_METHODS if hasattr(ArrayImpl, n)}
    with contextlib.ExitStack() as stack:
        stack.enter_context(patched(ArrayImpl, **methods))
        stack.enter_context(
            patched(
                np,
                asarray=wrap_numpy("np.asarray()", np.asarray),
                array=wrap_numpy("np.array()", np.array),
            )
        )
        stack.enter_context(patched(jax, device_get=wrap_numpy("jax.device_get()", jax.device_get)))
        yield reads


def is_tracing() -> bool:
    """JAX is tracing a function now (the current trace is not the eval trace)."""
    return not isinstance(core.trace_ctx.trace, core.EvalTrace)


@contextlib.contextmanager
def random_calls() -> Iterator[list[RandomCall]]:
    """Within the block, record each call of a ``numpy.random`` or ``random`` module function
    (:data:`NUMPY_RANDOM`, :data:`PY_RANDOM`) made from a snippet line. Yields the list."""
    calls: list[RandomCall] = []

    def wrap(api: str, original: Callable[..., Any]) -> Callable[..., Any]:
        def hooked(*a: Any, **kw: Any) -> Any:
            site = _snippet_caller()
            if site is not None:
                calls.append(RandomCall(api, site[0], site[1], is_tracing()))
            return original(*a, **kw)

        return hooked

    np_fns = {n: wrap(f"np.random.{n}", getattr(np.random, n)) for n in NUMPY_RANDOM}
    py_fns = {n: wrap(f"random.{n}", getattr(py_random, n)) for n in PY_RANDOM}
    with patched(np.random, **np_fns), patched(py_random, **py_fns):
        yield calls


@contextlib.contextmanager
def guarded(allowed: set[int]) -> Iterator[None]:
    """Within the block, host-to-device transfers raise (``jax_transfer_guard_host_to_device``
    ``"disallow"``) except while a snippet line in ``allowed`` runs. The guard's global value and
    the trace function are put back on exit."""
    option = "jax_transfer_guard_host_to_device"
    before = getattr(jax.config, option)
    state = ["disallow"]

    def put(value: str) -> None:
        if state[0] != value:
            state[0] = value
            jax.config.update(option, value)

    def local(frame: types.FrameType, event: str, arg: Any) -> Any:
        if event == "line":
            put("allow" if frame.f_lineno in allowed else "disallow")
        elif event == "return":
            # back to the innermost snippet frame below this one (JAX's code may lie between:
            # value_and_grad calling the user's loss), whose line runs again
            caller = frame.f_back
            while caller is not None and caller.f_code.co_filename != SNIPPET_FILENAME:
                caller = caller.f_back
            if caller is not None:
                put("allow" if caller.f_lineno in allowed else "disallow")
        return local

    def global_trace(frame: types.FrameType, event: str, arg: Any) -> Any:
        if frame.f_code.co_filename == SNIPPET_FILENAME:
            return local(frame, event, arg)
        return None

    old_trace = sys.gettrace()
    jax.config.update(option, "disallow")
    sys.settrace(global_trace)
    try:
        yield
    finally:
        sys.settrace(old_trace)
        jax.config.update(option, before)


def is_transfer_guard_error(exc: BaseException) -> bool:
    """``exc`` is the error a disallowing transfer guard raises (jaxlib's text)."""
    return "Disallowed host-to-device transfer" in str(exc)


# The profiler holds every launch's host events in memory until ``stop_trace`` (measured here:
# ~2.2 KB of address space per eager launch, ~70 MB/s for an eager loop, and ``stop_trace``'s
# export needs about half as much again). An endless eager loop under ``executions`` then ran
# the worker out of its address space (``std::bad_alloc``, reported as "memory") before it
# reached its time limit. The profile may take this share of the room left below
# ``RLIMIT_AS`` (or PROFILE_MAX_BYTES without one): past it the trace is stopped, the step runs
# on unprofiled (an endless one reaches the time limit, the truthful one), and a step that does
# finish is reported as too long to count (:class:`TooManyLaunches`).
PROFILE_ROOM_SHARE = 1 / 3
PROFILE_MAX_BYTES = 1 << 30
PROFILE_POLL_S = 0.1


class TooManyLaunches(RuntimeError):
    """A step launched so many executables that its profile was stopped to keep memory."""


def _address_space_bytes() -> int:
    """This process's address space now (``VmSize``), from ``/proc/self/statm``."""
    with open("/proc/self/statm", "rb") as statm:
        return int(statm.read().split()[0]) * resource.getpagesize()


def _profile_room(now: int) -> int:
    """Bytes of address space the profile may grow by, from ``now`` (see above)."""
    soft = resource.getrlimit(resource.RLIMIT_AS)[0]
    if soft == resource.RLIM_INFINITY or soft <= 0:
        return PROFILE_MAX_BYTES
    return max(0, min(PROFILE_MAX_BYTES, int((soft - now) * PROFILE_ROOM_SHARE)))


def executions(block: Callable[[], Any]) -> tuple[Any, int]:
    """``(block(), n)``: ``n`` XLA executables launched while ``block`` ran (its outputs waited
    for), counted from a ``jax.profiler`` trace written to a temporary directory."""
    # No Python tracer (ProfileOptions' default level 1 records every Python call: an eager
    # step of 20,000 ops ran 27x slower and held ~20 KB per op, and a long eager loop ran the
    # worker out of memory); the launches are host TraceMe events, which it does not need.
    options = jax.profiler.ProfileOptions()
    options.python_tracer_level = 0
    with tempfile.TemporaryDirectory(prefix="jaxscope-review-") as directory:
        base = _address_space_bytes()
        room = _profile_room(base)
        lock = threading.Lock()
        stopped = threading.Event()  # the watch stopped the trace (memory)
        done = threading.Event()  # the block ended: the watch ends

        def watch() -> None:
            while not done.wait(PROFILE_POLL_S):
                if _address_space_bytes() - base > room:
                    with lock:
                        if not done.is_set():
                            jax.profiler.stop_trace()
                            stopped.set()
                    return

        jax.profiler.start_trace(directory, profiler_options=options)
        watcher = threading.Thread(target=watch, name="jaxscope-profile-watch", daemon=True)
        watcher.start()
        try:
            out = block()
            jax.block_until_ready(out)
        finally:
            with lock:
                done.set()
                if not stopped.is_set():
                    jax.profiler.stop_trace()
            watcher.join()
        if stopped.is_set():
            raise TooManyLaunches(
                "this step launched too many executables to count: jaxscope counts a step's "
                "launches with JAX's profiler, which holds every launch in memory, and stopped "
                f"it after {room / 2**20:,.0f} MiB to keep the worker's memory. Jit the step "
                "(one launch instead of one per eager op), or run fewer eager ops per step."
            )
        n = 0
        for path in glob.glob(f"{directory}/**/*.xplane.pb", recursive=True):
            data = jax.profiler.ProfileData.from_file(path)
            for plane in data.planes:
                for line in plane.lines:
                    n += sum(1 for ev in line.events if ev.name == EXECUTE_EVENT)
    return out, n


@dataclass(frozen=True)
class BakedConstant:
    """A constant of a traced jaxpr: ``aval`` (``f32[32,16]``), ``nbytes``, whether it is a
    ``numpy`` array (else a ``jax.Array`` or scalar), the snippet ``line``/``function`` of the
    first eqn that reads it (``None``: no eqn with a snippet line), and ``value`` (the array)."""

    aval: str
    nbytes: int
    numpy: bool
    line: int | None
    function: str | None
    value: Any = field(repr=False)


def baked_constants(closed_jaxpr: Any) -> list[BakedConstant]:
    """The constants of ``closed_jaxpr`` (a ``jax.stages.Traced``'s ``.jaxpr``), in order."""
    out = []
    for var, const in zip(closed_jaxpr.jaxpr.constvars, closed_jaxpr.consts, strict=True):
        source = None
        for eqn in jaxpr_util.eqns_using_var(closed_jaxpr.jaxpr, var):
            source = snippet_source(eqn.source_info.traceback)
            if source is not None:
                break
        out.append(
            BakedConstant(
                aval=str(var.aval.str_short(short_dtypes=True)),
                nbytes=int(getattr(const, "nbytes", 0)),
                # literals.TypedNdArray: an np.ndarray view of the user's numpy array
                numpy=isinstance(const, np.ndarray),
                line=source.line if source else None,
                function=source.function if source else None,
                value=const,
            )
        )
    return out
