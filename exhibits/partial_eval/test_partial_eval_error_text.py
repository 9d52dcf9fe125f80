"""partial_eval's ``remat_unavailable`` shows the exception ``jax.grad`` raised with the shared
readings of ``jaxscope.user_text`` (as ``run_failed``): its class and message cut as
run_failed's are, and an exception whose ``__str__`` raises keeps its class (the exhibit no
longer fails with the RuntimeError of that ``__str__``). The event has no line to keep.

The user's ``f`` raises its own exception only in the remat table's ``jax.grad`` (its second
trace: the split above traced it once)."""

from __future__ import annotations

from exhibits import error_text_cases as cases
from exhibits.conftest import run_probe
from exhibits.partial_eval.events import JaxprSplit, RematUnavailable

SOURCE = f"""
import jax.numpy as jnp
{cases.EXCEPTION_CLASSES}
traced = []

def f(x):
    traced.append(1)
    if len(traced) > 1:
        raise WHAT
    return jnp.sin(x).sum()

args = (jnp.ones(3),)
"""


def _unavailable(what: str) -> RematUnavailable:
    ctx = run_probe("partial_eval", SOURCE.replace("WHAT", what))
    ctx.one(JaxprSplit)  # the split stands
    unavailable = ctx.one(RematUnavailable)
    assert unavailable.reason == "grad_fails"
    return unavailable


def test_an_exception_whose_str_raises_keeps_its_class() -> None:
    unavailable = _unavailable("E()")
    assert unavailable.error_class == "E"  # not the RuntimeError of its __str__
    assert unavailable.message == cases.UNDESCRIBED


def test_a_huge_message_and_class_name_are_cut_as_run_failed_cuts_them() -> None:
    assert _unavailable("Huge()").message == cases.CUT_MESSAGE
    cut = cases.CUT_CLASS
    unavailable = _unavailable("Long()")  # no message: the class name in its place, cut too
    assert unavailable.error_class == cut and unavailable.message == cut
