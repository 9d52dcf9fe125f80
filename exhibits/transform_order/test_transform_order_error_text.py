"""transform_order's ``transform_stack_evaluated`` describes the user's exception as
``run_failed`` does (``jaxscope.sandbox.errors.describe_failure``): class and message cut as
run_failed's are (``jaxscope.user_text``), and an exception whose ``__str__`` raises keeps its
class and the line that raised it."""

from __future__ import annotations

from exhibits import error_text_cases as cases
from exhibits.conftest import run_probe
from exhibits.transform_order.events import TransformStackEvaluated

# f raises only under grad (its argument a tracer; plain f(*args) gets an array): the stack's
# failure, which the event describes. A raise that plain f(*args) makes too is f's own error
# and fails the run (issue 33, class 7: exhibits/test_plain_calls.py).
SOURCE = (
    cases.F_RAISES.replace(
        "import jax.numpy as jnp\n", "import jax\nimport jax.numpy as jnp\n"
    ).replace(
        "    raise WHAT\n",
        "    if isinstance(x, jax.core.Tracer):\n        raise WHAT\n    return x.sum()\n",
    )
    + 'stack = ["grad"]\n'
)
RAISE_LINE = cases.F_RAISE_LINE + 2  # one import and the if above it


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
        assert event.message == cases.UNDESCRIBED
        assert event.source is not None and event.source.line == RAISE_LINE  # raise E()


def test_a_huge_message_and_class_name_are_cut_as_run_failed_cuts_them() -> None:
    for event in _raised_by_f(_failed("Huge()")):
        assert event.message == cases.CUT_MESSAGE
    for event in _raised_by_f(_failed("Long()")):
        assert event.error_class == cases.CUT_CLASS
