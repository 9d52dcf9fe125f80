"""transpose's failing ``transpose_stepped`` (``jaxscope.internals.transpose_walk``: the step
whose rule raised) shows the exception with the shared readings of ``jaxscope.user_text`` (as
``run_failed``): its class and message cut as run_failed's are, and an exception whose
``__str__`` raises keeps its class and the step its line (the walk no longer fails with the
RuntimeError of that ``__str__``; the run ends with the user's exception, at its line).

The user's exception is raised by a ``custom_vjp`` bwd, the rule of the ``custom_lin`` step."""

from __future__ import annotations

from jaxscope.sandbox.errors import describe_failure

from exhibits import error_text_cases as cases
from exhibits.transpose.events import TransposeStepped

SOURCE = cases.BWD_RAISES


def _failing_step(what: str, raised: str) -> tuple[TransposeStepped, BaseException]:
    """The walk's failing step, and the exception the run then ends with (the user's, as
    run_failed shows it)."""
    ctx, exc = cases.run_raising("transpose", SOURCE.replace("WHAT", what), raised)
    *ran, last = ctx.of_type(TransposeStepped)
    assert all(s.error_class is None for s in ran)
    assert last.primitive == "custom_lin"
    return last, exc


def test_an_exception_whose_str_raises_keeps_its_class_and_line() -> None:
    step, raised = _failing_step("E()", "E")  # not the RuntimeError of its __str__
    assert step.error_class == "E"
    assert step.error == cases.UNDESCRIBED
    assert step.source is not None and step.source.line == cases.BWD_CALL_LINE
    failed = describe_failure(raised, None)
    assert failed.source is not None and failed.source.line == cases.BWD_RAISE_LINE


def test_a_huge_message_and_class_name_are_cut_as_run_failed_cuts_them() -> None:
    step, _ = _failing_step("Huge()", "Huge")
    assert step.error == cases.CUT_MESSAGE
    step, _ = _failing_step("Long()", cases.LONG_CLASS)
    # no message: the class in its place
    assert step.error_class == cases.CUT_CLASS and step.error == cases.CUT_CLASS
