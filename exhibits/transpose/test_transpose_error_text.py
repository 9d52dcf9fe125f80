"""transpose's ``grad_attempted`` describes the user's exception as ``run_failed`` does
(``jaxscope.sandbox.errors.describe_failure``): its class and message cut as run_failed's are
(``jaxscope.user_text``), and an exception whose ``__str__`` raises keeps its class and the
line that raised it."""

from __future__ import annotations

import pytest
from jaxscope.user_text import MAX_MESSAGE_CHARS, MESSAGE_CUT_NOTE

from exhibits.conftest import FakeContext, run_probe
from exhibits.transpose.events import GradAttempted

UNDESCRIBABLE = """
import jax.numpy as jnp

class E(Exception):
    def __str__(self):
        raise RuntimeError("str fails")

    def __repr__(self):
        raise RuntimeError("str fails")

def f(x):
    raise E()

args = (jnp.ones(3),)
"""

HUGE = """
import jax.numpy as jnp

class Huge(Exception):
    def __str__(self):
        return "A" * 2_000_000

Long = type("E" * 100_000, (Exception,), {})

def f(x):
    raise WHAT

args = (jnp.ones(3),)
"""


def _attempts(source: str, raised: str) -> list[GradAttempted]:
    """The grad attempts of a run whose every attempt fails (run() then re-raises the user's
    exception, which the runner reports as run_failed)."""
    with pytest.raises(Exception) as info:
        run_probe("transpose", source)
    assert type(info.value).__name__ == raised
    return list(_last_attempts)


_last_attempts: list[GradAttempted] = []


@pytest.fixture(autouse=True)
def _record(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep the events of a run that raises (run_probe loses its context then)."""
    from exhibits import conftest

    _last_attempts.clear()
    real = conftest.FakeContext.emit

    def emit(self: FakeContext, event: object) -> None:
        if isinstance(event, GradAttempted):
            _last_attempts.append(event)
        real(self, event)  # type: ignore[arg-type]

    monkeypatch.setattr(conftest.FakeContext, "emit", emit)


def test_an_exception_whose_str_raises_keeps_its_class_and_line() -> None:
    attempts = _attempts(UNDESCRIBABLE, "E")  # not the RuntimeError of its __str__
    assert attempts
    for attempt in attempts:
        assert not attempt.ok
        assert attempt.error_class == "E"
        assert attempt.message == "(the exception could not be described: RuntimeError)"
        assert attempt.source is not None and attempt.source.line == 12  # raise E()


def test_a_huge_message_is_cut_as_run_failed_cuts_it() -> None:
    attempts = _attempts(HUGE.replace("WHAT", "Huge()"), "Huge")
    assert attempts
    for attempt in attempts:
        assert attempt.message == "A" * MAX_MESSAGE_CHARS + MESSAGE_CUT_NOTE


def test_a_huge_class_name_is_cut() -> None:
    attempts = _attempts(HUGE.replace("WHAT", "Long()"), "E" * 100_000)
    assert attempts
    for attempt in attempts:
        assert attempt.error_class == "E" * MAX_MESSAGE_CHARS + MESSAGE_CUT_NOTE
