"""transform_order's ``transform_stack_evaluated`` describes the user's exception as
``run_failed`` does (``jaxscope.sandbox.errors.describe_failure``): class and message cut as
run_failed's are (``jaxscope.user_text``), and an exception whose ``__str__`` raises keeps its
class and the line that raised it."""

from __future__ import annotations

from jaxscope.user_text import MAX_MESSAGE_CHARS, MESSAGE_CUT_NOTE

from exhibits.conftest import run_probe
from exhibits.transform_order.events import TransformStackEvaluated

SOURCE = """
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

def f(x):
    raise WHAT

args = (jnp.ones(3),)
"""


def _failed(what: str) -> list[TransformStackEvaluated]:
    ctx = run_probe("transform_order", SOURCE.replace("WHAT", what))
    failed = [e for e in ctx.of_type(TransformStackEvaluated) if not e.ok]
    assert failed
    return failed


def _raised_by_f(events: list[TransformStackEvaluated]) -> list[TransformStackEvaluated]:
    """The user's own stack (the first: the others are the exhibit's worked examples)."""
    return events[:1]


def test_an_exception_whose_str_raises_keeps_its_class_and_line() -> None:
    for event in _raised_by_f(_failed("E()")):
        assert event.error_class == "E"  # not the RuntimeError of its __str__
        assert event.message == "(the exception could not be described: RuntimeError)"
        assert event.source is not None and event.source.line == 18  # raise E()


def test_a_huge_message_and_class_name_are_cut_as_run_failed_cuts_them() -> None:
    for event in _raised_by_f(_failed("Huge()")):
        assert event.message == "A" * MAX_MESSAGE_CHARS + MESSAGE_CUT_NOTE
    for event in _raised_by_f(_failed("Long()")):
        assert event.error_class == "E" * MAX_MESSAGE_CHARS + MESSAGE_CUT_NOTE
