"""custom_vjp's ``custom_rule_checked`` shows the exception a rule raised with the shared
readings of ``jaxscope.user_text`` (as ``run_failed``): its class and message cut as
run_failed's are, and an exception whose ``__str__`` raises keeps its class and the line that
raised it (the exhibit no longer fails with the RuntimeError of that ``__str__``)."""

from __future__ import annotations

from exhibits import error_text_cases as cases
from exhibits.conftest import run_probe
from exhibits.custom_vjp.events import CustomRuleChecked

SOURCE = cases.BWD_RAISES


def _checked(what: str) -> CustomRuleChecked:
    return run_probe("custom_vjp", SOURCE.replace("WHAT", what)).one(CustomRuleChecked)


def test_an_exception_whose_str_raises_keeps_its_class_and_line() -> None:
    checked = _checked("E()")
    texts = [(a.error_class, a.message, a.source) for a in checked.attempts]
    texts += [(p.error_class, p.error_message, p.source) for p in checked.problems]
    assert len(texts) >= 3  # eager, jit, the problem
    for error_class, message, source in texts:
        assert error_class == "E"
        assert message == cases.UNDESCRIBED
        assert source is not None and source.line == cases.BWD_RAISE_LINE


def test_a_huge_message_and_class_name_are_cut_as_run_failed_cuts_them() -> None:
    checked = _checked("Huge()")
    messages = [a.message for a in checked.attempts] + [p.error_message for p in checked.problems]
    assert messages and all(m == cases.CUT_MESSAGE for m in messages)
    checked = _checked("Long()")
    classes = [a.error_class for a in checked.attempts] + [p.error_class for p in checked.problems]
    assert classes and all(c == cases.CUT_CLASS for c in classes)
