"""A snippet ``in_axes`` that JAX refuses is blamed on the line that sets it, with JAX's own
message (before: on ``def f``, as JAX raised it before calling ``f``)."""

from __future__ import annotations

from pathlib import Path

import jax
import pytest
from jaxscope.sandbox.probe_api import BLAME_ATTR, setting_line
from jaxscope.sandbox.snippet import load_snippet

from exhibits.conftest import Runner

EXAMPLE = (Path(__file__).parent / "examples" / "vmap_sin.py").read_text()


@pytest.mark.parametrize("value", ["(0, 1, 2)", "5", '"bogus"'])
def test_a_bad_in_axes_points_at_its_line(value: str, probe_runner: Runner) -> None:
    source = EXAMPLE.replace("in_axes = (0, None)", f"in_axes = {value}")
    assert source != EXAMPLE
    ns = load_snippet(source).namespace
    with pytest.raises((ValueError, TypeError)) as plain:
        jax.vmap(ns["f"], in_axes=ns["in_axes"])(*ns["args"])
    with pytest.raises(type(plain.value)) as ours:
        probe_runner("wrapped_fun", source)
    assert str(ours.value) == str(plain.value)
    line = setting_line(source, "in_axes")
    assert line is not None and source.splitlines()[line - 1].startswith("in_axes =")
    assert getattr(ours.value, BLAME_ATTR)[0] == line
