"""The prng exhibit's backend half: the key tree of the snippet's ``f`` and its key reuses.

How the tree is recorded: by wrapping the public ``jax.random`` functions for the run (the
module's attributes, and any name in the snippet's namespace bound to one of them by ``from
jax.random import split``), and restoring them in a ``finally``. Each wrapper calls JAX's own
function and records what it read and made with ``jax.random.key_data``, and the innermost
snippet frame on the Python stack as the call's line. JAX's own functions call each other
through ``jax._src.random``'s globals, not through ``jax.random``, so only the user's calls are
recorded (a depth count guards the rest). ``f`` runs under ``jax.disable_jit()`` for this, so
that keys inside a jitted ``f`` are concrete values with data to show; keys that are tracers
anyway (under ``vmap``) have no data (``None``).

Key reuse: ``f`` runs again, as written (jit and all), under ``jax.debug_key_reuse(True)``,
its stdout dropped: the first run already showed what ``f`` prints, and a user's script calls
``f`` once.
JAX's checker tracks only typed keys; it raises ``KeyReuseError`` at the second use. Its line
is the innermost snippet frame of the error's traceback or of its causes (under ``jit`` JAX
attaches the eqn's user traceback as the cause). The first use is the earlier consuming call of
the same key in the recorded tree. Raw ``uint32`` keys (``jax.random.PRNGKey``) are invisible to
the checker, so this module checks them itself over the recorded tree: the same key data
consumed twice by ``split``s or draws (the calls JAX's reuse rules consume a key in).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import io
import linecache
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

import jax
import numpy as np
from jaxscope.exhibit_api import SNIPPET_FILENAME, ProbeContext, block_until_ready

from . import advance
from .events import KeyReuseChecked, KeyReuseFinding, RandomCallRecorded, RandomOpKind

# The jax.random functions that make a key from a seed or from raw data.
SEED_OPS = frozenset({"key", "PRNGKey", "wrap_key_data"})
DERIVE_OPS: dict[str, RandomOpKind] = {"split": "split", "fold_in": "fold_in", "clone": "clone"}
# Functions taking a key that neither draw nor derive: they only read a key's metadata.
NOT_RECORDED = frozenset({"key_data", "key_impl", "key_dtype"})
# The calls sent as events: a loop of thousands of draws would flood the stepper. The reuse
# checks still see every call.
MAX_CALLS = 500


def op_kind(name: str) -> RandomOpKind | None:
    """What ``jax.random.<name>`` does to keys; None for a function not recorded."""
    if name in SEED_OPS:
        return "seed"
    if name in DERIVE_OPS:
        return DERIVE_OPS[name]
    if name in NOT_RECORDED or name.startswith("_"):
        return None
    fun = getattr(jax.random, name, None)
    if not callable(fun) or isinstance(fun, type):
        return None
    try:
        params = list(inspect.signature(fun).parameters)
    except (TypeError, ValueError):
        return None
    # Every draw (normal, uniform, bits, categorical, permutation...) takes the key first.
    return "draw" if params[:1] == ["key"] else None


def recorded_ops() -> dict[str, RandomOpKind]:
    """The public jax.random functions this exhibit wraps, with their kinds."""
    kinds = {name: op_kind(name) for name in dir(jax.random)}
    return {name: kind for name, kind in kinds.items() if kind is not None}


@dataclass
class Call:
    """One recorded call; ``key_obj``/``out_objs`` hold the key objects themselves, so that a
    later call reading the very same object is linked to it even without data (a tracer)."""

    op: str
    kind: RandomOpKind
    line: int | None
    key_in: list[int] | None
    keys_out: list[list[int]]
    typed: bool
    impl: str | None
    key_obj: Any = None
    out_objs: list[Any] = field(default_factory=list)

    @property
    def consumes(self) -> bool:
        # JAX's key-reuse rules (jax.experimental.key_reuse): random_split and random_bits sink
        # their key; random_fold_in, random_clone and seeding only make fresh keys.
        return self.kind in ("split", "draw")


def snippet_line() -> int | None:
    """The line of the innermost snippet frame on the current Python stack."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_filename == SNIPPET_FILENAME:
            return frame.f_lineno
        frame = frame.f_back  # type: ignore[assignment]
    return None


def is_typed(key: Any) -> bool:
    """A typed key array (dtype ``key<impl>``), as opposed to a raw ``uint32`` array."""
    dtype = getattr(key, "dtype", None)
    return dtype is not None and bool(jax.numpy.issubdtype(dtype, jax.dtypes.prng_key))


def key_rows(key: Any) -> list[list[int]] | None:
    """``jax.random.key_data(key)`` as one list of ints per key (a batch of keys gives several
    rows); None for a tracer or anything that is no key."""
    try:
        data = jax.random.key_data(key)
    except (TypeError, ValueError):
        return None
    if isinstance(data, jax.core.Tracer):
        return None
    arr = np.asarray(data)
    if arr.ndim == 0:
        return None
    return [[int(x) for x in row] for row in arr.reshape(-1, arr.shape[-1])]


def impl_name(key: Any) -> str | None:
    """The PRNG implementation's name (``threefry2x32``) of a key (a raw key's: the default
    implementation, which is what ``jax.random.key_impl`` answers for one)."""
    try:
        return str(jax.random.key_impl(key))
    except (TypeError, ValueError):
        return None


class Recorder:
    """The calls of the wrapped jax.random functions, in order."""

    def __init__(self) -> None:
        self.calls: list[Call] = []
        self._depth = threading.local()

    def wrap(self, name: str, kind: RandomOpKind, fun: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fun)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            depth = getattr(self._depth, "n", 0)
            if depth:  # a jax.random function called by another: not the user's call
                return fun(*args, **kwargs)
            self._depth.n = 1
            try:
                out = fun(*args, **kwargs)
            finally:
                self._depth.n = 0
            self.record(name, kind, args, kwargs, out)
            return out

        return wrapper

    def record(
        self, name: str, kind: RandomOpKind, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any
    ) -> None:
        key = None if kind == "seed" else (args[0] if args else kwargs.get("key"))
        rows = key_rows(key) if key is not None else None
        made = out if kind != "draw" else None
        out_rows = key_rows(made) if made is not None else None
        self.calls.append(
            Call(
                op=name,
                kind=kind,
                line=snippet_line(),
                key_in=rows[0] if rows is not None and len(rows) == 1 else None,
                keys_out=out_rows or [],
                typed=is_typed(made if kind == "seed" else key),
                impl=impl_name(made if kind == "seed" else key),
                key_obj=key,
                out_objs=[made] if made is not None else [],
            )
        )

    def parent_of(self, index: int) -> int | None:
        """The last earlier call that made the key call ``index`` read: the same object, else
        the same key data among its keys out."""
        call = self.calls[index]
        if call.key_obj is None:
            return None
        for j in range(index - 1, -1, -1):
            if any(o is call.key_obj for o in self.calls[j].out_objs):
                return j
        if call.key_in is not None:
            for j in range(index - 1, -1, -1):
                if call.key_in in self.calls[j].keys_out:
                    return j
        return None


def snippet_globals(namespace: dict[str, Any]) -> list[dict[str, Any]]:
    """The dicts the snippet's functions look names up in: ``namespace`` (the snippet's copy)
    and the module dict its functions were defined in (their ``__globals__``, through
    ``jax.jit``'s ``__wrapped__``)."""
    found = {id(namespace): namespace}
    for value in list(namespace.values()):
        try:
            fun = inspect.unwrap(value) if callable(value) else None
        except ValueError:  # a __wrapped__ cycle
            fun = None
        code = getattr(fun, "__code__", None)
        if code is not None and code.co_filename == SNIPPET_FILENAME:
            glob = fun.__globals__  # type: ignore[union-attr]
            found[id(glob)] = glob
    return list(found.values())


@contextmanager
def recording(namespace: dict[str, Any]) -> Iterator[Recorder]:
    """Wrap the public jax.random functions (and the snippet's names bound to them) for the
    duration; restored in a ``finally`` so the process is left as it was found."""
    recorder = Recorder()
    kinds = recorded_ops()
    originals = {name: getattr(jax.random, name) for name in kinds}
    wrappers = {name: recorder.wrap(name, kinds[name], fun) for name, fun in originals.items()}
    by_id = {id(fun): name for name, fun in originals.items()}
    aliases = [
        (glob, k, by_id[id(v)])
        for glob in snippet_globals(namespace)
        for k, v in list(glob.items())
        if id(v) in by_id
    ]
    try:
        for name, wrapper in wrappers.items():
            setattr(jax.random, name, wrapper)
        for glob, alias, name in aliases:
            glob[alias] = wrappers[name]
        yield recorder
    finally:
        for name, fun in originals.items():
            setattr(jax.random, name, fun)
        for glob, alias, name in aliases:
            glob[alias] = originals[name]


def error_line(exc: BaseException) -> int | None:
    """The innermost snippet line in ``exc``'s traceback, else in its causes' (under ``jit``
    JAX's ``JaxStackTraceBeforeTransformation`` cause carries the eqn's user frames)."""
    seen: set[int] = set()
    err: BaseException | None = exc
    while err is not None and id(err) not in seen:
        seen.add(id(err))
        line = None
        tb: TracebackType | None = err.__traceback__
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == SNIPPET_FILENAME:
                line = tb.tb_lineno
            tb = tb.tb_next
        if line is not None:
            return line
        err = err.__cause__ or err.__context__
    return None


def first_use(calls: list[Call], line: int | None) -> int | None:
    """The line of the earlier consuming call of the key that the consuming call at ``line``
    read again: the first such pair in the recorded tree."""
    for i, call in enumerate(calls):
        if not call.consumes or call.line != line:
            continue
        for earlier in calls[:i]:
            if not earlier.consumes:
                continue
            same_obj = call.key_obj is not None and earlier.key_obj is call.key_obj
            same_data = call.key_in is not None and earlier.key_in == call.key_in
            if same_obj or same_data:
                return earlier.line
    return None


def raw_reuses(calls: list[Call]) -> list[KeyReuseFinding]:
    """jaxscope's own check for raw uint32 keys: a split or draw reading key data that an
    earlier split or draw already consumed. One finding per (line, first line)."""
    found: list[KeyReuseFinding] = []
    pairs: set[tuple[int | None, int | None]] = set()
    consumed: dict[tuple[int, ...], int | None] = {}
    for call in calls:
        if not call.consumes or call.typed or call.key_in is None:
            continue
        data = tuple(call.key_in)
        if data in consumed:
            pair = (call.line, consumed[data])
            if pair not in pairs:
                pairs.add(pair)
                found.append(KeyReuseFinding(line=pair[0], first_line=pair[1], checker="jaxscope"))
        else:
            consumed[data] = call.line
    return found


def run(ctx: ProbeContext) -> None:
    """Record the key tree of ``f(*args)``, emit it call by call, then check key reuse."""
    snippet = ctx.snippet
    with ctx.stage("trace"):
        with recording(snippet.namespace) as recorder, jax.disable_jit():
            snippet.f(*snippet.args, **snippet.kwargs)
    for i, call in enumerate(recorder.calls[:MAX_CALLS]):
        ctx.emit(
            RandomCallRecorded(
                index=i,
                op=call.op,
                kind=call.kind,
                line=call.line,
                code=linecache.getline(SNIPPET_FILENAME, call.line).strip() or None
                if call.line is not None
                else None,
                key_in=call.key_in,
                keys_out=call.keys_out,
                typed=call.typed,
                consumes=call.consumes,
                parent=recorder.parent_of(i),
                impl=call.impl,
            )
        )
    findings: list[KeyReuseFinding] = []
    typed_keys = any(c.typed for c in recorder.calls)
    draws = any(c.kind == "draw" for c in recorder.calls)
    repeated: list[KeyReuseFinding] = []
    # JAX's checker tracks typed keys only: with none (and no draw to watch), running f again
    # would find nothing.
    if typed_keys or draws:
        reused, repeated = as_written(ctx, recorder.calls, typed_keys, draws)
        findings += reused
    # A raw key consumed twice by the same line is the same repeat, seen without the jit: the
    # run-as-written finding (its cause and fix) takes its place.
    repeated_lines = {f.line for f in repeated}
    findings += [
        f for f in raw_reuses(recorder.calls) if not (f.line == f.first_line in repeated_lines)
    ]
    lines = {f.line for f in findings}
    findings += [f for f in repeated if f.line not in lines]
    ctx.emit(
        KeyReuseChecked(
            findings=findings,
            typed_keys=typed_keys,
            raw_keys=any(not c.typed for c in recorder.calls),
            calls_left_out=max(0, len(recorder.calls) - MAX_CALLS),
        )
    )


def draw_watch(
    namespace: dict[str, Any],
) -> tuple[list[str], list[tuple[dict[str, Any], str, str]]]:
    """The draw functions of ``jax.random`` and the snippet's names bound to them (globals,
    name, function name), for :func:`advance.check`."""
    draw_ops = [name for name, kind in recorded_ops().items() if kind == "draw"]
    by_id = {id(getattr(jax.random, name)): name for name in draw_ops}
    aliases = [
        (glob, k, by_id[id(v)])
        for glob in snippet_globals(namespace)
        for k, v in list(glob.items())
        if id(v) in by_id
    ]
    return draw_ops, aliases


def as_written(
    ctx: ProbeContext, calls: list[Call], typed_keys: bool, draws: bool
) -> tuple[list[KeyReuseFinding], list[KeyReuseFinding]]:
    """Run ``f`` as written (jit and all) once more, its stdout dropped (the first run showed
    it): under ``jax.debug_key_reuse(True)`` when it uses typed keys (the ``KeyReuseError`` it
    raises, at most one: the run stops there, is the first list), and with its draws watched
    (``advance.py``: draws that repeated their key across calls, the second list). One run, not
    two: a run of ``f`` may leave state behind (a key attribute replaced inside a trace holds a
    tracer afterwards) that a further run would trip over, as no fresh process would."""
    snippet = ctx.snippet
    draw_ops, aliases = draw_watch(snippet.namespace) if draws else ([], [])
    with ctx.stage("run"), advance.watching_draws(draw_ops, aliases) as log:
        try:
            # jax.debug.print's callbacks print through sys.stdout too; they have run when
            # block_until_ready returns (and the draws' callbacks by the effects barrier).
            with (
                jax.debug_key_reuse(typed_keys),
                contextlib.redirect_stdout(io.StringIO()),
            ):
                block_until_ready(snippet.f(*snippet.args, **snippet.kwargs))
                jax.effects_barrier()  # type: ignore[no-untyped-call]
        except jax.errors.KeyReuseError as exc:
            line = error_line(exc)
            message = str(exc).split("\n")[0]
            first = first_use(calls, line)
            if "jit-compiled function" in message and first in (None, line):
                # No earlier line consumed it (eager draws are jit-compiled too, and those name
                # their first line): a jitted call reads a key an earlier call of the same line
                # consumed, the key did not advance between calls (advance.py's case).
                message += advance.JIT_KEY_NOT_ADVANCING
            return [
                KeyReuseFinding(
                    line=line,
                    first_line=first,
                    checker="jax.debug_key_reuse",
                    message=message,
                )
            ], advance.not_advancing(log.draws)
    return [], advance.not_advancing(log.draws)
