"""flax_params's ``flax_error_raised`` shows the user's exception with the shared readings of
``jaxscope.user_text`` (as ``run_failed``): its class and message cut as run_failed's are, and
an exception whose ``__str__`` raises keeps its class and line (the exhibit no longer fails with
the RuntimeError of that ``__str__``, nor when it checks an error it does not show)."""

from __future__ import annotations

import pytest
from jaxscope.user_text import MAX_MESSAGE_CHARS, MESSAGE_CUT_NOTE

from exhibits import error_text_cases as cases
from exhibits.flax_params.events import FlaxErrorRaised
from exhibits.flax_params.test_flax_params import run

SOURCE = f"""
import flax.errors
import flax.linen as nn
import jax.numpy as jnp
{cases.exception_classes("flax.errors.FlaxError")}

class Plain(TypeError):
    def __str__(self):
        raise RuntimeError("str fails")


class Net(nn.Module):
    @nn.compact
    def __call__(self, x):
        raise WHAT


model = Net()
args = (jnp.ones((2, 4), jnp.float32),)
"""
RAISE_LINE = cases.line_of(SOURCE, "        raise WHAT")  # in Net.__call__


def _raised(what: str) -> FlaxErrorRaised:
    (error,) = run(SOURCE.replace("WHAT", what)).of_type(FlaxErrorRaised)
    assert error.phase == "init"
    return error


def test_an_exception_whose_str_raises_keeps_its_class_and_line() -> None:
    error = _raised("E('m')")
    assert error.error_class == "snippet.E"  # not the RuntimeError of its __str__
    assert error.message == cases.UNDESCRIBED
    assert error.line == RAISE_LINE


def test_an_unshown_exception_whose_str_raises_propagates_unchanged() -> None:
    with pytest.raises(Exception) as raised:
        run(SOURCE.replace("WHAT", "Plain()"))
    assert type(raised.value).__name__ == "Plain"


def test_a_huge_message_and_class_name_are_cut_as_run_failed_cuts_them() -> None:
    assert _raised("Huge('m')").message == cases.CUT_MESSAGE
    full = "snippet." + cases.LONG_CLASS
    assert _raised("Long('m')").error_class == full[:MAX_MESSAGE_CHARS] + MESSAGE_CUT_NOTE
