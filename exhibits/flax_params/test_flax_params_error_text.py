"""flax_params's ``flax_error_raised`` shows the user's exception with the shared readings of
``jaxscope.user_text`` (as ``run_failed``): its class and message cut as run_failed's are, and
an exception whose ``__str__`` raises keeps its class and line (the exhibit no longer fails with
the RuntimeError of that ``__str__``, nor when it checks an error it does not show)."""

from __future__ import annotations

import pytest
from jaxscope.user_text import MAX_MESSAGE_CHARS, MESSAGE_CUT_NOTE

from exhibits.flax_params.events import FlaxErrorRaised
from exhibits.flax_params.test_flax_params import run

SOURCE = """
import flax.errors
import flax.linen as nn
import jax.numpy as jnp


class E(flax.errors.FlaxError):
    def __str__(self):
        raise RuntimeError("str fails")

    def __repr__(self):
        raise RuntimeError("str fails")


class Plain(TypeError):
    def __str__(self):
        raise RuntimeError("str fails")


class Huge(flax.errors.FlaxError):
    def __str__(self):
        return "A" * 2_000_000


Long = type("E" * 100_000, (flax.errors.FlaxError,), {})


class Net(nn.Module):
    @nn.compact
    def __call__(self, x):
        raise WHAT


model = Net()
args = (jnp.ones((2, 4), jnp.float32),)
"""
RAISE_LINE = 31  # raise WHAT, in Net.__call__


def _raised(what: str) -> FlaxErrorRaised:
    (error,) = run(SOURCE.replace("WHAT", what)).of_type(FlaxErrorRaised)
    assert error.phase == "init"
    return error


def test_an_exception_whose_str_raises_keeps_its_class_and_line() -> None:
    error = _raised("E('m')")
    assert error.error_class == "snippet.E"  # not the RuntimeError of its __str__
    assert error.message == "(the exception could not be described: RuntimeError)"
    assert error.line == RAISE_LINE


def test_an_unshown_exception_whose_str_raises_propagates_unchanged() -> None:
    with pytest.raises(Exception) as raised:
        run(SOURCE.replace("WHAT", "Plain()"))
    assert type(raised.value).__name__ == "Plain"


def test_a_huge_message_and_class_name_are_cut_as_run_failed_cuts_them() -> None:
    assert _raised("Huge('m')").message == "A" * MAX_MESSAGE_CHARS + MESSAGE_CUT_NOTE
    full = "snippet." + "E" * 100_000
    assert _raised("Long('m')").error_class == full[:MAX_MESSAGE_CHARS] + MESSAGE_CUT_NOTE
