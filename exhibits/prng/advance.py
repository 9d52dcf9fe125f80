"""Randomness that does not advance: the prng exhibit's check of what ``f`` drew, run as written.

State that should advance between calls (a key kept in a closure, a global or an object
attribute and replaced inside a jitted function; an NNX ``Rngs`` stream's count under plain
``jax.jit``, or under ``nnx.split``/``nnx.merge`` without returning the new state) is read when
JAX traces, and what the trace assigns is never written back: every call of the compiled program
draws from the same key, so dropout masks and noise repeat. JAX raises nothing (the program is
pure; only the user's intent was not).

How it is found, from what the run did: every public ``jax.random`` draw (``normal``,
``bernoulli``, ``uniform``...) is wrapped for the run of ``f`` as written (jit and all): each
call adds a ``jax.debug.callback`` of its key data, which runs at once eagerly and, inside a
trace, each time the compiled program runs (also for a key the trace read as a constant). Two
draws at the same line with equal key data mean the state did not advance; one staged call run
twice means the key was baked into (or traced by) a compiled program. The fix
follows from where the draw ran: inside Flax NNX code (an ``Rngs`` stream), ``nnx.jit`` or
returning the new state; inside a trace otherwise, passing the key in and returning the new one.
"""

from __future__ import annotations

import contextlib
import functools
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np
from jaxscope.exhibit_api import SNIPPET_FILENAME

from .events import FIX_MARK, KeyReuseFinding


@dataclass(frozen=True)
class Draw:
    """One draw as it ran: ``op`` (``bernoulli``), the snippet ``line`` that led to it, the key
    data it drew with (flattened), ``nnx`` whether Flax NNX code made the draw (an ``Rngs``
    stream: ``nnx.Dropout``), ``call`` the Python call of the draw function that staged it (a
    compiled program runs it again without Python: the same ``call`` twice)."""

    op: str
    line: int | None
    data: tuple[int, ...]
    nnx: bool
    call: int


def _where() -> tuple[int | None, bool]:
    """The innermost snippet line on the stack, and whether Flax NNX code is between it and the
    draw."""
    frame = sys._getframe(2)
    nnx = False
    while frame is not None:
        if frame.f_code.co_filename == SNIPPET_FILENAME:
            return frame.f_lineno, nnx
        if "/flax/nnx/" in frame.f_code.co_filename:
            nnx = True
        frame = frame.f_back  # type: ignore[assignment]
    return None, nnx


def _data(key: Any) -> Any:
    dtype = getattr(key, "dtype", None)
    typed = dtype is not None and bool(jax.numpy.issubdtype(dtype, jax.dtypes.prng_key))
    return jax.random.key_data(key) if typed else key


class DrawLog:
    """The draws of one run, in the order they ran."""

    def __init__(self) -> None:
        self.draws: list[Draw] = []
        self.depth = 0
        self.calls = 0

    def wrap(self, name: str, fun: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fun)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if self.depth:
                return fun(*args, **kwargs)
            key = args[0] if args else kwargs.get("key")
            if key is not None:
                line, nnx = _where()
                self.calls += 1
                # Eagerly the callback runs now; inside a trace it is part of the program and
                # runs each time the compiled program does (a key the trace read as a constant
                # too: a global, a closure, an attribute).
                jax.debug.callback(
                    functools.partial(self.add, name, line, nnx, self.calls), _data(key)
                )
            self.depth += 1
            try:
                return fun(*args, **kwargs)
            finally:
                self.depth -= 1

        return wrapper

    def add(self, op: str, line: int | None, nnx: bool, call: int, data: Any) -> None:
        values = tuple(int(v) for v in np.asarray(data).reshape(-1))
        self.draws.append(Draw(op, line, values, nnx, call))


@contextlib.contextmanager
def watching_draws(
    draw_ops: list[str], aliases: list[tuple[dict[str, Any], str, str]]
) -> Iterator[DrawLog]:
    """Wrap the draw functions of ``jax.random`` (and the snippet's names bound to them,
    ``aliases``: (globals, name, op)) for the block; restored in a ``finally``."""
    log = DrawLog()
    originals = {name: getattr(jax.random, name) for name in draw_ops}
    wrappers = {name: log.wrap(name, fun) for name, fun in originals.items()}
    try:
        for name, wrapper in wrappers.items():
            setattr(jax.random, name, wrapper)
        for glob, alias, name in aliases:
            glob[alias] = wrappers[name]
        yield log
    finally:
        for name, fun in originals.items():
            setattr(jax.random, name, fun)
        for glob, alias, name in aliases:
            glob[alias] = originals[name]


_KEY_IN_FIX = (
    "pass the key in as an argument and return the new one: key, sub = jax.random.split(key) "
    "inside, return key with the result, and pass the returned key to the next call"
)

# What JAX's KeyReuseError "Previously-consumed key passed to jit-compiled function" means in a
# loop, and its fix (appended to JAX's words).
JIT_KEY_NOT_ADVANCING = (
    ": randomness does not advance. The key this jitted call reads (an argument, or a key kept "
    "in a closure or object attribute that JAX read when it traced) was consumed by an earlier "
    f"call, so the call draws the same random numbers again.{FIX_MARK}{_KEY_IN_FIX}"
)


def _fix(draw: Draw, traced: bool) -> tuple[str, str]:
    """(why, fix) for a draw that repeated, from where it ran."""
    if draw.nnx:
        return (
            "an NNX Rngs stream drew it: the stream's count advanced inside the trace and was "
            "never written back (a module under plain jax.jit, or nnx.merge of a state that is "
            "not returned), so every call starts from the same count",
            "use nnx.jit (and nnx.grad / nnx.value_and_grad) instead of jax.jit, which write the "
            "Rngs count back after each call; or return the updated state (nnx.state(model), "
            "or nnx.split(model)[1]) from the jitted function and pass it to the next call",
        )
    if traced:
        return (
            "the key is read when JAX traces the jitted function (kept in a closure, a global or "
            "an object attribute, not passed in), and the new key assigned inside the trace is "
            "never written back, so every call of the compiled program draws with the same key",
            _KEY_IN_FIX,
        )
    return (
        "the same key was passed to this draw on each call",
        "split the key before each call (key, sub = jax.random.split(key)) and draw with sub",
    )


def not_advancing(draws: list[Draw]) -> list[KeyReuseFinding]:
    """One finding per (line, op) whose draws repeated key data: the first repeat."""
    found: list[KeyReuseFinding] = []
    runs: dict[int, int] = {}
    for draw in draws:
        runs[draw.call] = runs.get(draw.call, 0) + 1
    seen: dict[tuple[int | None, str], dict[tuple[int, ...], int]] = {}
    reported: set[tuple[int | None, str]] = set()
    for draw in draws:
        if draw.line is None:
            continue
        site = (draw.line, draw.op)
        counts = seen.setdefault(site, {})
        counts[draw.data] = counts.get(draw.data, 0) + 1
        if counts[draw.data] == 2 and site not in reported:
            reported.add(site)
            # Ran again without Python: a compiled program's baked or traced key.
            why, fix = _fix(draw, runs[draw.call] > 1)
            data = ", ".join(str(v) for v in draw.data[:2])
            found.append(
                KeyReuseFinding(
                    line=draw.line,
                    first_line=draw.line,
                    checker="jaxscope",
                    message=(
                        f"randomness does not advance: jax.random.{draw.op} at line {draw.line} "
                        f"drew with the same key (data [{data}, ...]) on two calls, so it gave "
                        f"the same random numbers; {why}.{FIX_MARK}{fix}"
                    ),
                )
            )
    return found
