"""transpose's failing ``transpose_stepped`` (``jaxscope.internals.transpose_walk``: the step
whose rule raised) shows the exception with the shared readings of ``jaxscope.user_text`` (as
``run_failed``): its class and message cut as run_failed's are, and an exception whose
``__str__`` raises keeps its class and the step its line (the walk no longer fails with the
RuntimeError of that ``__str__``; the run ends with the user's exception, at its line).

The user's exception is raised by a ``custom_vjp`` bwd, the rule of the ``custom_lin`` step."""

from __future__ import annotations

import pytest
from jaxscope.sandbox.errors import describe_failure
from jaxscope.sandbox.snippet import load_snippet
from jaxscope.user_text import MAX_MESSAGE_CHARS, MESSAGE_CUT_NOTE

from exhibits.conftest import FakeContext
from exhibits.transpose.events import TransposeStepped

SOURCE = """
import jax
import jax.numpy as jnp

class E(Exception):
    def __str__(self):
        raise RuntimeError("str fails")

    def __repr__(self):
        raise RuntimeError("str fails")

class Huge(Exception):
    def __str__(self):
        return "A" * 2_000_000

Long = type("E" * 100_000, (Exception,), {})

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
LINES = SOURCE.splitlines()
RAISE_LINE = LINES.index("    raise WHAT") + 1  # in g_bwd
CALL_LINE = LINES.index("    return g(x).sum()") + 1  # the custom_vjp call: the step's eqn


def _failing_step(what: str, raised: str) -> tuple[TransposeStepped, BaseException]:
    """The walk's failing step, and the exception the run then ends with."""
    from exhibits.transpose import probe

    ctx = FakeContext(snippet=load_snippet(SOURCE.replace("WHAT", what)))
    with pytest.raises(Exception) as info:
        probe.run(ctx)
    assert type(info.value).__name__ == raised  # the user's, as run_failed shows it
    *ran, last = ctx.of_type(TransposeStepped)
    assert all(s.error_class is None for s in ran)
    assert last.primitive == "custom_lin"
    return last, info.value


def test_an_exception_whose_str_raises_keeps_its_class_and_line() -> None:
    step, raised = _failing_step("E()", "E")  # not the RuntimeError of its __str__
    assert step.error_class == "E"
    assert step.error == "(the exception could not be described: RuntimeError)"
    assert step.source is not None and step.source.line == CALL_LINE
    failed = describe_failure(raised, None)
    assert failed.source is not None and failed.source.line == RAISE_LINE


def test_a_huge_message_and_class_name_are_cut_as_run_failed_cuts_them() -> None:
    step, _ = _failing_step("Huge()", "Huge")
    assert step.error == "A" * MAX_MESSAGE_CHARS + MESSAGE_CUT_NOTE
    step, _ = _failing_step("Long()", "E" * 100_000)
    cut = "E" * MAX_MESSAGE_CHARS + MESSAGE_CUT_NOTE
    assert step.error_class == cut and step.error == cut  # no message: the class in its place
