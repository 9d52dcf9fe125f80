"""Test support for the ``*_error_text.py`` tests (control_flow, custom_vjp, flax_params,
partial_eval, shard_map, transform_order, transpose): the snippet text of the user's hostile
exceptions, and what the shared readings of ``jaxscope.user_text`` (as ``run_failed``) make of
them.

``exception_classes(base)``: the classes a snippet raises (its ``raise WHAT``, which a test
replaces): ``E``, whose ``__str__`` and ``__repr__`` raise; ``Huge``, whose message is 2,000,000
characters; ``Long``, whose class name is ``LONG_CLASS`` (100,000 characters). ``F_RAISES`` and
``BWD_RAISES``: two snippets that raise them, shared by the exhibits that run the same user code.
Tests import this module as ``cases``.
"""

from __future__ import annotations

import importlib
from typing import Any

import pytest
from jaxscope.sandbox.snippet import load_snippet
from jaxscope.user_text import MAX_MESSAGE_CHARS, MESSAGE_CUT_NOTE

from exhibits.conftest import FakeContext


def exception_classes(base: str = "Exception") -> str:
    """Snippet text defining ``E``, ``Huge`` and ``Long``, subclasses of ``base``."""
    return f"""
class E({base}):
    def __str__(self):
        raise RuntimeError("str fails")

    def __repr__(self):
        raise RuntimeError("str fails")

class Huge({base}):
    def __str__(self):
        return "A" * 2_000_000

Long = type("E" * 100_000, ({base},), {{}})
"""


EXCEPTION_CLASSES = exception_classes()

# f raises (transform_order, transpose).
F_RAISES = f"""
import jax.numpy as jnp
{EXCEPTION_CLASSES}
def f(x):
    raise WHAT

args = (jnp.ones(3),)
"""

# A custom_vjp bwd raises, once f is differentiated (custom_vjp's rule check, transpose's walk:
# the rule of the custom_lin step).
BWD_RAISES = f"""
import jax
import jax.numpy as jnp
{EXCEPTION_CLASSES}
@jax.custom_vjp
def g(x):
    return jnp.sin(x)

def g_fwd(x):
    return jnp.sin(x), x

def g_bwd(r, ct):
    raise WHAT

g.defvjp(g_fwd, g_bwd)

def f(x):
    return g(x).sum()

args = (jnp.ones(3),)
"""

# What an E() shows: its class kept, its message this (not the RuntimeError of its __str__).
UNDESCRIBED = "(the exception could not be described: RuntimeError)"
LONG_CLASS = "E" * 100_000  # Long's name, as the run ends with it
CUT_MESSAGE = "A" * MAX_MESSAGE_CHARS + MESSAGE_CUT_NOTE  # Huge()'s message, cut
CUT_CLASS = LONG_CLASS[:MAX_MESSAGE_CHARS] + MESSAGE_CUT_NOTE  # Long's name, cut


def line_of(source: str, line: str) -> int:
    """The line number (from 1, as events give it) of the snippet line ``line`` in ``source``."""
    return source.splitlines().index(line) + 1


F_RAISE_LINE = line_of(F_RAISES, "    raise WHAT")  # in f
BWD_RAISE_LINE = line_of(BWD_RAISES, "    raise WHAT")  # in g_bwd
BWD_CALL_LINE = line_of(BWD_RAISES, "    return g(x).sum()")  # the custom_vjp call, in f


def run_raising(exhibit: str, source: str, raised: str) -> tuple[FakeContext, BaseException]:
    """Run ``exhibits.<exhibit>.probe`` on ``source`` in-process, as ``run_probe`` does, for a
    run that ends with the user's exception (class name ``raised``, as run_failed shows it): the
    context, with the events emitted before it raised, and that exception."""
    probe: Any = importlib.import_module(f"exhibits.{exhibit}.probe")
    ctx = FakeContext(snippet=load_snippet(source), exhibit=exhibit)
    with pytest.raises(Exception) as info:
        probe.run(ctx)
    assert type(info.value).__name__ == raised
    return ctx, info.value
