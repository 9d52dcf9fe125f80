"""The review exhibit's backend half: run the user's training step as the user runs it and
answer the code review questions from what happened (``docs/design/0033-review.md``).

The steps: ``f(*call)`` for each tuple of the snippet's ``calls`` (the caches exhibit's contract),
else ``f(*args, **kwargs)`` :data:`STEPS` times; ``f`` runs as written (a jit object is called as
one; a Python step calls its jits and eager ops). While the steps run, every jit object of the
snippet is watched (``watching_jit_calls``: first calls, jits made during the run, JAX's trace
and compile events per function), device-to-host reads and numpy/Python random calls from the
snippet are recorded, and each step's executables are counted from a profiler trace. Then the
second step is run again under a disallowing host-to-device transfer guard until it finishes
(each line found is allowed on the next run), and each jitted function is traced once more for
its ``args_info`` and its constants. Findings: ``findings.py``.
"""

from __future__ import annotations

import inspect
import itertools
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import jax
import numpy as np
from jaxscope.exhibit_api import (
    InvalidSnippet,
    ProbeContext,
    StageTimed,
    argument_trees,
    aval_view,
    baked_constants,
    blame_line,
    block_until_ready,
    device_to_host_reads,
    executions,
    guarded,
    is_jitted,
    is_tracer_error,
    is_transfer_guard_error,
    jitted_donates,
    jitted_fun,
    jitted_name,
    jitted_statics,
    random_calls,
    setting_line,
    stage_timers,
    structure_change,
    user_frames,
    watching_jit_calls,
)

from . import findings as found
from .events import NameCount, ReviewArg, ReviewArgsRead, ReviewJitArgs, ReviewStepRan

# Steps run when the snippet has no ``calls`` (the same arguments each time), and the most
# steps taken from ``calls``.
STEPS = 2
MAX_STEPS = 8
# The most host-to-device transfers looked for (one rerun of the step each).
MAX_TRANSFERS = 8


Call = tuple[tuple[Any, ...], dict[str, Any]]


def _steps(ctx: ProbeContext) -> list[Call]:
    snippet = ctx.snippet
    calls = snippet.namespace.get("calls")
    if calls is None:
        return [(tuple(snippet.args), dict(snippet.kwargs))] * STEPS
    if not isinstance(calls, (list, tuple)) or not calls:
        raise blame_line(
            InvalidSnippet(f"`calls` must be a non-empty list of argument tuples, got {calls!r}"),
            setting_line(snippet.source, "calls"),
        )
    return [
        (tuple(c) if isinstance(c, (list, tuple)) else (c,), dict(snippet.kwargs))
        for c in list(calls)[:MAX_STEPS]
    ]


def _bound(
    f: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Callable[[], Any]:
    def call() -> Any:
        return f(*args, **kwargs)

    return call


def _counts(timed: list[StageTimed], stage: str) -> list[NameCount]:
    c = Counter(t.fun_name or "?" for t in timed if t.stage == stage)
    return [NameCount(name=n, count=k) for n, k in c.items()]


class _Recorder:
    """The first call of each jitted function (its arguments kept for the ``args_info`` trace)."""

    def __init__(self) -> None:
        self.first: dict[tuple[str, Any], tuple[Any, tuple[Any, ...], dict[str, Any], int | None]]
        self.first = {}
        # per jitted function: each call's line and its dynamic arguments' pytree structures
        self.trees: dict[str, list[tuple[int | None, dict[str, Any]]]] = {}

    def note(
        self, jitted: Any, args: tuple[Any, ...], kwargs: dict[str, Any], line: int | None
    ) -> None:
        fun = jitted_fun(jitted)
        key = (jitted_name(jitted), getattr(inspect.unwrap(fun), "__code__", fun))
        self.first.setdefault(key, (jitted, args, kwargs, line))

    def on_call(self, jitted: Any, args: tuple[Any, ...], kwargs: dict[str, Any], site: Any) -> Any:
        line = site[0] if site else None
        self.note(jitted, args, kwargs, line)
        nums, names = jitted_statics(jitted)
        trees = argument_trees(jitted_fun(jitted), args, kwargs, nums, names)
        self.trees.setdefault(jitted_name(jitted), []).append((line, trees))
        return jitted(*args, **kwargs)


def run(ctx: ProbeContext) -> None:
    """Run the steps, then the transfer guard passes, then the args table; emit the findings."""
    snippet = ctx.snippet
    f = snippet.f
    steps = _steps(ctx)
    recorder = _Recorder()
    namespace = getattr(f, "__globals__", snippet.namespace)
    if is_jitted(f):
        namespace = getattr(jitted_fun(f), "__globals__", snippet.namespace)
    tracer_error: BaseException | None = None
    step_reads: list[int] = []
    ran = 0
    with (
        ctx.stage("run"),
        watching_jit_calls(namespace, recorder.on_call, snippet.source) as watch,
        device_to_host_reads() as reads,
        random_calls() as randoms,
    ):
        for i, call in enumerate(steps):
            args, kwargs = _fresh(f, call)
            if is_jitted(f):
                recorder.note(f, args, kwargs, None)
            timed: list[StageTimed] = []
            before = len(reads)
            t0 = time.perf_counter()
            try:
                with stage_timers(timed.append):
                    _, n = executions(_bound(f, args, kwargs))
            except Exception as exc:
                if not is_tracer_error(exc):
                    raise
                tracer_error = exc
                break
            ran += 1
            step_reads.append(len(reads) - before)
            ctx.emit(
                ReviewStepRan(
                    index=i,
                    executables=n,
                    compiles=_counts(timed, "compile"),
                    traces=_counts(timed, "trace"),
                    host_reads=len(reads) - before,
                    wall_ms=round((time.perf_counter() - t0) * 1e3, 3),
                )
            )
    transfers: list[tuple[int | None, str]] = []
    complete = True
    if ran >= 2:
        with ctx.stage("call", call_index=1):
            transfers, complete = _transfers(f, steps[1])
    tables, constants = _tables(recorder) if tracer_error is None else ([], [])
    if tables:
        ctx.emit(ReviewArgsRead(functions=tables))
    ctx.emit(
        found.findings_found(
            steps=ran,
            reads=list(reads),
            step_reads=step_reads,
            randoms=list(randoms),
            created=list(watch.created),
            changed_statics=_static_changes(recorder, watch.compiles),
            traces=watch.traces,
            compiles=watch.compiles,
            guard_stops=transfers,
            guard_complete=complete,
            consts=constants,
            tracer_error=tracer_error,
            tracer_frames=user_frames(tracer_error.__traceback__) if tracer_error else [],
            namespace=namespace,
            source=snippet.source,
        )
    )


def _static_changes(recorder: _Recorder, compiles: Counter[str]) -> list[Any]:
    """``(function, line, StructureChange)`` for each jitted function JAX compiled more than
    once whose calls' input structures differed in a static part that is not equal (an NNX
    GraphDef's attribute such as a rebuilt optax transformation): the first such pair."""
    out: list[Any] = []
    for name, calls in recorder.trees.items():
        if compiles[name] < 2:
            continue
        for (_, before), (line, now) in itertools.pairwise(calls):
            changes = [
                structure_change(arg, tree, before[arg])
                for arg, tree in now.items()
                if arg in before
            ]
            change = next((c for c in changes if c is not None and c.inside), None)
            if change is not None:
                out.append((name, line, change))
                break
    return out


def _fresh(f: Callable[..., Any], call: Call) -> Call:
    """The call's arguments, with each ``jax.Array`` copied (and ready) when ``f`` is a jit
    object that donates: a donated buffer is deleted by the call, and a loop passes the new
    state in, not the donated one (as the caches exhibit does)."""
    if not (is_jitted(f) and jitted_donates(f)):
        return call

    def copy(x: Any) -> Any:
        return x.copy() if isinstance(x, jax.Array) else x

    fresh: Call = (jax.tree.map(copy, call[0]), jax.tree.map(copy, call[1]))
    block_until_ready(fresh)
    return fresh


def _on_device(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Call:
    """The step's own numpy arguments put on the device first: uploading the batch is the
    input pipeline's transfer, not the step's."""

    def put(x: Any) -> Any:
        return jax.device_put(x) if isinstance(x, np.ndarray) else x

    return jax.tree.map(put, args), jax.tree.map(put, kwargs)


def _transfers(f: Callable[..., Any], call: Call) -> tuple[list[tuple[int | None, str]], bool]:
    """``(line, JAX's message)`` of each host-to-device transfer of one more run of the step, in
    order, and whether the search finished: the run is repeated under :func:`guarded` with the
    lines found so far allowed, until it finishes (or a transfer has no snippet line: the
    arguments ``f`` was called with), at most :data:`MAX_TRANSFERS` times."""
    args, kwargs = _on_device(*_fresh(f, call))
    found_lines: set[int] = set()
    out: list[tuple[int | None, str]] = []
    for _ in range(MAX_TRANSFERS):
        try:
            with guarded(found_lines):
                block_until_ready(f(*args, **kwargs))
            return out, True
        except Exception as exc:
            if not is_transfer_guard_error(exc):
                return out, False  # another failure under the guard: nothing more is claimed
            frames = user_frames(exc.__traceback__)
            line = frames[-1].line if frames else None
            if line is not None and line in found_lines:
                return out, False  # stopped at a line already allowed: nothing new is claimed
            if line is not None and _constructing_flax_object(exc):
                # A Flax module, Rngs or optimizer made here puts its initial values on the
                # device once per object: the construction's transfer, not a step's copy.
                found_lines.add(line)
                continue
            out.append((line, str(exc).splitlines()[0]))
            if line is None:
                return out, False  # f's own arguments: no line to allow
            found_lines.add(line)
    return out, False  # MAX_TRANSFERS lines found: more may follow


def _constructing_flax_object(exc: BaseException) -> bool:
    """The transfer happened while a Flax object was being constructed (an ``__init__`` in
    Flax's code on the traceback: ``nnx.Linear``, ``nnx.Rngs``, ``nnx.Optimizer``)."""
    tb = exc.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if "/flax/" in code.co_filename and code.co_name == "__init__":
            return True
        tb = tb.tb_next
    return False


def _arg_names(fun: Any, n: int) -> list[str | None]:
    try:
        params = list(inspect.signature(fun).parameters.values())
    except (TypeError, ValueError):
        return [None] * n
    names: list[str | None] = [
        p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    return (names + [None] * n)[:n]


def _tables(recorder: _Recorder) -> tuple[list[ReviewJitArgs], list[Any]]:
    """Each recorded jitted function traced again on its first call's arguments: its static and
    dynamic arguments (``args_info``) and its jaxpr's constants."""
    tables = []
    constants = []
    for jitted, args, kwargs, line in recorder.first.values():
        traced = jitted.trace(*args, **kwargs)
        nums, _names = jitted_statics(jitted)
        static = {i % len(args) for i in nums} if args else set()
        avals = iter(traced.in_avals[0])  # the dynamic arguments only, in order
        rows = []
        for i, (name, a) in enumerate(
            zip(_arg_names(jitted_fun(jitted), len(args)), args, strict=True)
        ):
            if i in static:
                rows.append(ReviewArg(index=i, name=name, static=True, detail=repr(a)[:80]))
                continue
            views = [aval_view(v) for v in jax.tree.leaves(next(avals))]
            detail = ", ".join(("~" if v.weak_type else "") + v.short for v in views)
            rows.append(ReviewArg(index=i, name=name, static=False, detail=detail or "(no arrays)"))
        tables.append(ReviewJitArgs(function=jitted_name(jitted), line=line, args=rows))
        constants += [(jitted_name(jitted), c) for c in baked_constants(traced.jaxpr)]
    return tables, constants
