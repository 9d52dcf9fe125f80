"""transpose's ``grad_attempted`` describes the user's exception as ``run_failed`` does
(``jaxscope.sandbox.errors.describe_failure``): its class and message cut as run_failed's are
(``jaxscope.user_text``), and an exception whose ``__str__`` raises keeps its class and the
line that raised it."""

from __future__ import annotations

from exhibits import error_text_cases as cases
from exhibits.transpose.events import GradAttempted

SOURCE = cases.F_RAISES


def _attempts(what: str, raised: str) -> list[GradAttempted]:
    """The grad attempts of a run whose every attempt fails (run() then re-raises the user's
    exception, which the runner reports as run_failed)."""
    ctx, _ = cases.run_raising("transpose", SOURCE.replace("WHAT", what), raised)
    return ctx.of_type(GradAttempted)


def test_an_exception_whose_str_raises_keeps_its_class_and_line() -> None:
    attempts = _attempts("E()", "E")  # not the RuntimeError of its __str__
    assert attempts
    for attempt in attempts:
        assert not attempt.ok
        assert attempt.error_class == "E"
        assert attempt.message == cases.UNDESCRIBED
        assert attempt.source is not None and attempt.source.line == cases.F_RAISE_LINE  # raise E()


def test_a_huge_message_is_cut_as_run_failed_cuts_it() -> None:
    attempts = _attempts("Huge()", "Huge")
    assert attempts
    for attempt in attempts:
        assert attempt.message == cases.CUT_MESSAGE


def test_a_huge_class_name_is_cut() -> None:
    attempts = _attempts("Long()", cases.LONG_CLASS)
    assert attempts
    for attempt in attempts:
        assert attempt.error_class == cases.CUT_CLASS
