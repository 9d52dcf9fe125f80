"""Error locations in hostile snippets (issue 12, point 6, items 3-4), through real workers.

Characters that ``str.splitlines()`` takes for line ends but Python does not (form feed, ``\\v``,
``\\x1c``-``\\x1e``, ``\\x85``, U+2028, U+2029) must not shift the quoted line; an exception
raised in a ``jax.pure_callback`` callback is located at the callback's line, and the server's
file paths never reach the user."""

from __future__ import annotations

import sys

import pytest
from jaxscope.protocol import EventModel, RunFailed, RunFinished

from tests.harness import REPO, SandboxHarness, assert_one_terminal
from tests.test_server import SIN

# Line ends to Python: only \n, \r\n and \r. Each of these is one to str.splitlines() alone.
NOT_LINE_ENDS = ["\x0c", "\x0b", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]


def failed_then_ok(sandbox: SandboxHarness, code: str, exhibit: str = "tracing") -> RunFailed:
    """Run ``code`` (it must fail) then a good snippet in the same session; the failure."""
    session = sandbox.session()
    try:
        events: list[EventModel] = sandbox.run(code, exhibit=exhibit, session=session, wall_s=60)
        failed = assert_one_terminal(events)
        assert isinstance(failed, RunFailed), failed
        after = assert_one_terminal(sandbox.run(SIN, session=session, wall_s=60))
        assert isinstance(after, RunFinished), after  # the session still serves
        return failed
    finally:
        sandbox.call(session.close())


@pytest.mark.parametrize("char", NOT_LINE_ENDS, ids=[f"U+{ord(c):04X}" for c in NOT_LINE_ENDS])
def test_control_character_before_the_raising_line(sandbox: SandboxHarness, char: str) -> None:
    code = (
        f"# a comment{char}with a control character\n"  # line 1
        f"label = 'a string{char}with it too'\n"  # line 2
        "def f(x):\n"  # line 3
        "    raise ValueError('boom')\n"  # line 4
        "args = (1.0,)\n"
    )
    failed = failed_then_ok(sandbox, code)
    assert (failed.kind, failed.error_class, failed.message) == (
        "user_exception",
        "ValueError",
        "boom",
    )
    assert failed.source is not None
    assert (failed.source.line, failed.source.function) == (4, "f")
    assert failed.traceback[-1].line == 4
    assert failed.traceback[-1].text == "raise ValueError('boom')"


def test_null_byte_after_a_bare_carriage_return_is_on_its_line(sandbox: SandboxHarness) -> None:
    # Python counts "\r" as a line end: the null byte is on line 2, column 5.
    failed = failed_then_ok(sandbox, "x = 1\ry = 2\0\n" + SIN)
    assert failed.kind == "syntax"
    assert failed.source is not None
    assert (failed.source.line, failed.source.column) == (2, 5)
    assert failed.traceback[-1].text == "y = 2 "


CALLBACK = """\
import jax
import jax.numpy as jnp

def check(v):
    raise ValueError("bad value on the host")

def host(v):
    check(v)
    return v

def f(x):
    y = jax.pure_callback(host, jax.ShapeDtypeStruct(x.shape, x.dtype), x)
    return y * 2

args = (jnp.ones(3),)
"""


def server_paths() -> list[str]:
    return [str(REPO), sys.prefix, sys.base_prefix, "site-packages"]


@pytest.mark.parametrize("exhibit", ["tracing", "stations"])
def test_callback_exception_is_blamed_on_the_callback_line(
    sandbox: SandboxHarness, exhibit: str
) -> None:
    failed = failed_then_ok(sandbox, CALLBACK, exhibit)
    assert failed.kind == "user_exception"
    assert failed.source is not None
    assert (failed.source.line, failed.source.function) == (5, "check")
    assert [(t.line, t.function) for t in failed.traceback][-2:] == [(8, "host"), (5, "check")]
    assert failed.traceback[-1].text == 'raise ValueError("bad value on the host")'
    assert "ValueError: bad value on the host" in failed.message
    assert failed.explanation is not None and "`check` raised this at line 5" in failed.explanation
    for text in (failed.message, failed.explanation):
        for path in server_paths():
            assert path not in text, (path, text)
    # JAX's frames are still named, by their short form.
    assert "jax/_src/callback.py" in failed.message
