"""shard_map's ``shard_map_checked`` shows the exception with the shared readings of
``jaxscope.user_text`` (as ``run_failed``): its class and message cut as run_failed's are, the
checks' messages (``jaxscope.internals.shard_map_checks``) too, and an exception whose
``__str__`` raises keeps its class, and ``run_failed`` its line (the exhibit no longer fails
with the RuntimeError of that ``__str__``)."""

from __future__ import annotations

from jaxscope.sandbox.errors import describe_failure
from jaxscope.user_text import MAX_MESSAGE_CHARS, MESSAGE_CUT_NOTE

from exhibits import error_text_cases as cases
from exhibits.conftest import run_probe
from exhibits.shard_map.events import ShardMapChecked

SOURCE = f"""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P

mesh = jax.make_mesh((4, 2), ("x", "y"), axis_types=(AxisType.Auto,) * 2)
{cases.EXCEPTION_CLASSES}
def f(a):
    raise WHAT

in_specs = (P("x", "y"),)
out_specs = P("x", "y")
args = (jnp.ones((8, 4)),)
"""
RAISE_LINE = cases.line_of(SOURCE, "    raise WHAT")  # in f

# JAX's own out_specs message names f: a 2M-character name makes it that long.
LONG_NAME = """
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P

mesh = jax.make_mesh((4, 2), ("x", "y"), axis_types=(AxisType.Auto,) * 2)

def f(a):
    return a.sum()

f.__name__ = f.__qualname__ = "g" * 2_000_000
in_specs = (P("x", "y"),)
out_specs = P("x")
args = (jnp.ones((8, 4)),)
"""


def _body_failed(what: str, raised: str) -> tuple[ShardMapChecked, BaseException]:
    """The verdict of an f that raises, and the exception the run then ends with (the user's,
    as run_failed shows it)."""
    ctx, exc = cases.run_raising("shard_map", SOURCE.replace("WHAT", what), raised)
    (checked,) = ctx.of_type(ShardMapChecked)
    assert not checked.ok and checked.check == "body"
    return checked, exc


def test_an_exception_whose_str_raises_keeps_its_class_and_line() -> None:
    checked, raised = _body_failed("E()", "E")  # not the RuntimeError of its __str__
    assert checked.error_class == "E"
    assert checked.message == cases.UNDESCRIBED
    failed = describe_failure(raised, None)
    assert failed.source is not None and failed.source.line == RAISE_LINE


def test_a_huge_message_and_class_name_are_cut_as_run_failed_cuts_them() -> None:
    checked, _ = _body_failed("Huge()", "Huge")
    assert checked.message == cases.CUT_MESSAGE
    checked, _ = _body_failed("Long()", cases.LONG_CLASS)
    assert checked.error_class == cases.CUT_CLASS


def test_a_check_message_naming_a_huge_function_name_is_cut() -> None:
    checked = run_probe("shard_map", LONG_NAME).one(ShardMapChecked)
    assert checked.check == "out_rank"  # still matched to JAX's error, both cut alike
    (out_rank,) = [c for c in checked.checks if c.name == "out_rank"]
    for message in (out_rank.message, checked.message):
        assert message is not None and message.endswith(MESSAGE_CUT_NOTE)
        assert len(message) == MAX_MESSAGE_CHARS + len(MESSAGE_CUT_NOTE)
        assert "g" * 1000 in message
