"""control_flow's ``carry_checked`` shows the exception raised inside JAX's carry check with the
shared readings of ``jaxscope.user_text`` (as ``run_failed``): its class and message cut as
run_failed's are, and an exception whose ``__str__`` raises keeps its class and the scan's line
(the exhibit no longer fails with the RuntimeError of that ``__str__``).

The user's code raises inside the check: a carry whose pytree node's ``tree_unflatten`` raises
once the body ran (JAX's structure diff unflattens the input carry)."""

from __future__ import annotations

from exhibits import error_text_cases as cases
from exhibits.conftest import run_probe
from exhibits.control_flow.events import CarryChecked

SOURCE = f"""
import jax
import jax.numpy as jnp
from jax import lax
{cases.EXCEPTION_CLASSES}
armed = []

@jax.tree_util.register_pytree_node_class
class P:
    def __init__(self, x):
        self.x = x

    def tree_flatten(self):
        return (self.x,), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        if armed:
            raise WHAT
        return cls(*children)

def body(c, x):
    armed.append(1)
    return (c.x + x,), None

def f(xs):
    return lax.scan(body, P(jnp.float32(0.0)), xs)

args = (jnp.arange(4.0),)
"""
SCAN_LINE = cases.line_of(SOURCE, "    return lax.scan(body, P(jnp.float32(0.0)), xs)")  # in f


def _checked(what: str) -> CarryChecked:
    checked = run_probe("control_flow", SOURCE.replace("WHAT", what)).one(CarryChecked)
    assert not checked.ok
    return checked


def test_an_exception_whose_str_raises_keeps_its_class_and_line() -> None:
    checked = _checked("E()")
    assert checked.error_class == "E"  # not the RuntimeError of its __str__
    assert checked.message == cases.UNDESCRIBED
    assert checked.source is not None and checked.source.line == SCAN_LINE


def test_a_huge_message_and_class_name_are_cut_as_run_failed_cuts_them() -> None:
    assert _checked("Huge()").message == cases.CUT_MESSAGE
    assert _checked("Long()").error_class == cases.CUT_CLASS
