"""Hostile inputs (issue 12): resource exhaustion and deaths.

Fork bombs (bounded by ``RLIMIT_NPROC`` per worker uid and by the pid namespace: all of it dies
with the run), memory bombs (``memory``), CPU loops in Python, in C and in XLA (``timeout``
naming the line), the CPU limit, deep recursion (``RecursionError`` at its line, or a C stack
overflow reported as a crash at its line), huge or pathological exceptions (bounded messages),
file descriptor and thread exhaustion, and the worker ending itself (``os._exit``, SIGSEGV,
SIGABRT, SIGKILL: ``worker_crashed``, naming the line where the worker could write its stack).
Each input: one terminal event of the expected kind, nothing left behind; for the bombs, another
session's run is served meanwhile."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import pytest
from jaxscope.settings import Limits

from testkit import sample
from tests.harness import SandboxHarness
from tests.hostile.hostile_kit import (
    OK_TAIL,
    Outcome,
    allowed_s,
    alongside,
    assert_nothing_left,
    assert_served_meanwhile,
    run,
)

WALL_S = 4.0
SLACK_S = 1.5


@pytest.fixture(scope="module")
def cpu_tight() -> Iterator[SandboxHarness]:
    """Workers with a 1 s CPU limit (and a long wall clock): the CPU limit ends the run."""
    harness = SandboxHarness(Limits(wall_s=20.0, cpu_s=1.0), size=1)
    yield harness
    harness.close()


@dataclass(frozen=True)
class Case:
    code: str
    kind: str  # the terminal: a RunFailed kind, or "finished"
    error_class: str | None = None
    lines: tuple[int, ...] | None = None  # the lines source may name (None: not checked)
    needle: str = ""  # in the message (or, for "finished", in the printed text)
    wall_s: float | None = WALL_S
    # The worker may not get to say its line in time (a fork bomb starves it of CPU).
    may_lose_line: bool = False


LIBC = "import ctypes, os, signal, sys, time\nlibc = ctypes.CDLL(None, use_errno=True)\n"

CASES: dict[str, Case] = {
    # --- processes -----------------------------------------------------------------------
    "fork_bomb": Case(
        LIBC + "while True:\n    libc.fork()\n",
        "timeout",
        lines=(3, 4),
        needle="wall-clock",
        may_lose_line=True,
    ),
    "fork_bomb_to_a_lowered_nproc": Case(
        LIBC + "import resource\n"
        "hard = resource.getrlimit(resource.RLIMIT_NPROC)[1]\n"
        "resource.setrlimit(resource.RLIMIT_NPROC, (len(os.listdir('/proc/self/task')) + 10,"
        " hard))\n"
        "made = 0\n"
        "while True:\n"
        "    pid = libc.fork()\n"
        "    if pid == 0:\n"
        "        while True:\n"
        "            libc.pause()\n"
        "    if pid < 0:\n"
        "        break\n"
        "    made += 1\n"
        "print('refused', made <= 20, os.strerror(ctypes.get_errno()))\n" + OK_TAIL,
        "finished",
        needle="refused True Resource temporarily unavailable",
        wall_s=10.0,
    ),
    # --- memory --------------------------------------------------------------------------
    "bytearray_8GiB": Case("x = bytearray(8 * 2**30)\n", "memory", "MemoryError", (1,)),
    "bytes_10GB": Case("x = bytes(10**10)\n", "memory", "MemoryError", (1,)),
    "list_of_chunks_grows": Case(
        "x = []\nwhile True:\n    x.append(bytes(2**26))\n", "memory", "MemoryError", (3,)
    ),
    "numpy_16GB": Case(
        "import numpy\nx = numpy.ones(2**31)\n", "memory", "MemoryError", (2,), "Unable to alloc"
    ),
    "jnp_8GB": Case(
        "import jax.numpy as jnp\nx = jnp.ones((1 << 31,))\nx.block_until_ready()\n",
        "memory",
        "JaxRuntimeError",
        (2, 3),
        "RESOURCE_EXHAUSTED",
    ),
    "string_doubling": Case(
        "s = 'x'\nwhile True:\n    s = s + s\n", "memory", "MemoryError", (3,), wall_s=10.0
    ),
    # --- CPU -----------------------------------------------------------------------------
    "python_loop": Case("x = 0\nwhile True:\n    x += 1\n", "timeout", lines=(2, 3)),
    "sleep_forever": Case("import time\ntime.sleep(10**6)\n", "timeout", lines=(2,)),
    "regex_backtracking_in_C": Case(
        "import re\nre.match('(a+)+$', 'a' * 64 + 'b')\n", "timeout", lines=(2,)
    ),
    "xla_while_loop": Case(
        "import jax\n"
        "step = lambda c: (c[0], c[1] + 1)\n"
        "loop = lambda: jax.lax.while_loop(lambda c: c[0] >= 0, step, (0, 0))\n"
        "jax.block_until_ready(jax.jit(loop)())\n",
        "timeout",
        lines=(3, 4),
    ),
    "threads_spin_while_main_waits": Case(
        "import threading, time\n"
        "def spin():\n    while True:\n        pass\n"
        "for _ in range(4):\n    threading.Thread(target=spin, daemon=True).start()\n"
        "while True:\n    time.sleep(0.1)\n",
        "timeout",
        lines=(3, 4, 7, 8),
    ),
    # --- recursion -----------------------------------------------------------------------
    "deep_recursion": Case(
        "def r(n):\n    return r(n + 1)\nr(0)\n", "user_exception", "RecursionError", (2,)
    ),
    "deep_recursion_raised_limit": Case(
        "import sys\nsys.setrecursionlimit(10**5)\ndef r(n):\n    return r(n + 1)\nr(0)\n",
        "user_exception",
        "RecursionError",
        (4,),
    ),
    "deep_json": Case(
        "import json\njson.loads('[' * 10**6)\n", "user_exception", "RecursionError", (2,)
    ),
    "deep_repr": Case(
        "x = []\nfor _ in range(10**6):\n    x = [x]\nrepr(x)\n",
        "user_exception",
        "RecursionError",
        (4,),
    ),
    "c_stack_overflow": Case(
        "import sys\nsys.setrecursionlimit(10**8)\n"
        "def r(n):\n    return list(map(r, [n + 1]))\nr(0)\n",
        "worker_crashed",
        # The overflow can hit inside the body (line 4) or as a frame of r is entered, before
        # its first instruction, when Python reports the def line (3): both name r.
        lines=(3, 4),
        needle="SIGSEGV",
        wall_s=10.0,
    ),
    # --- exceptions ----------------------------------------------------------------------
    "huge_message": Case(
        "raise ValueError('x' * 10**7)\n", "user_exception", "ValueError", (1,), "(truncated)"
    ),
    "huge_key_error": Case(
        "raise KeyError('k' * 10**7)\n", "user_exception", "KeyError", (1,), "(truncated)"
    ),
    "many_lines_message": Case(
        "raise RuntimeError('line\\n' * 10**6)\n",
        "user_exception",
        "RuntimeError",
        (1,),
        "(truncated)",
    ),
    "chain_of_100k_causes": Case(
        "e = None\nfor i in range(10**5):\n    try:\n        raise ValueError(i) from e\n"
        "    except ValueError as x:\n        e = x\nraise e\n",
        "user_exception",
        "ValueError",
        (4, 7),
    ),
    "exception_group_of_10k": Case(
        "raise ExceptionGroup('many', [ValueError(i) for i in range(10**4)])\n",
        "user_exception",
        "ExceptionGroup",
        (1,),
    ),
    "str_of_the_exception_never_returns": Case(
        "class E(Exception):\n    def __str__(self):\n        while True:\n            pass\n"
        "raise E()\n",
        "timeout",
        lines=(3, 4),
    ),
    # --- descriptors and threads ---------------------------------------------------------
    "file_descriptors": Case(
        "fs = [open('/dev/null') for _ in range(10**6)]\n",
        "user_exception",
        "OSError",
        (1,),
        "Too many open files",
    ),
    "threads": Case(
        "import threading, time\nfor _ in range(10**5):\n"
        "    threading.Thread(target=time.sleep, args=(60,), daemon=True).start()\n",
        "user_exception",
        "RuntimeError",
        (3,),
        "can't start new thread",
    ),
    # --- the worker ends itself ----------------------------------------------------------
    "os_exit": Case(
        "import os\nos._exit(3)\n", "worker_crashed", lines=(2,), needle="exited with code 3"
    ),
    "os_exit_in_a_function": Case(
        "import os\ndef leave():\n    os._exit(4)\nleave()\n",
        "worker_crashed",
        lines=(3,),
        needle="exited with code 4",
    ),
    "posix_exit": Case("import posix\nposix._exit(5)\n", "worker_crashed", needle="code 5"),
    "ctypes_exit": Case(LIBC + "libc._exit(6)\n", "worker_crashed", needle="exited with code 6"),
    "ctypes_segfault": Case(
        "import ctypes\nctypes.string_at(0)\n", "worker_crashed", lines=(2,), needle="SIGSEGV"
    ),
    "ctypes_segfault_in_a_function": Case(
        "import ctypes\ndef crash():\n    ctypes.string_at(0)\ncrash()\n",
        "worker_crashed",
        lines=(3,),
        needle="SIGSEGV",
    ),
    "ctypes_abort": Case(LIBC + "libc.abort()\n", "worker_crashed", lines=(3,), needle="SIGABRT"),
    "sigsegv_to_itself": Case(
        "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n",
        "worker_crashed",
        lines=(2,),
        needle="SIGSEGV",
    ),
    "sigkill_to_itself": Case(
        "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n",
        "worker_crashed",
        needle="SIGKILL",
    ),
}


def check(outcome: Outcome, case: Case) -> None:
    terminal = outcome.terminal
    if case.wall_s is not None:
        allowed = allowed_s(outcome, case.wall_s, SLACK_S)  # with a busy machine's waits
        assert outcome.run_s < allowed, f"the run took {outcome.run_s:.2f} s"
    if case.kind == "finished":
        outcome.finished()
        assert case.needle in outcome.printed, outcome.printed
        return
    failed = outcome.failed(case.kind)
    assert failed.error_class == case.error_class, failed
    assert case.needle in failed.message, failed.message
    assert len(failed.message) < 25_000
    if case.kind == "memory":
        assert failed.explanation is not None and "memory" in failed.explanation
    if case.lines is not None and not (case.may_lose_line and failed.source is None):
        assert failed.source is not None and failed.source.line in case.lines, failed
    del terminal


# `make test` serves another session beside a seeded sample of two of the three bombs (the fork
# bomb and the Python loop last 11 s each; the fork bomb ~30 s with its end); the bomb not
# sampled ends cleanly alone in test_exhaustion_and_deaths_end_cleanly; `make test-all` runs all
# three (testkit.py, design 0076).
_BOMBS_ALONGSIDE = ["fork_bomb", "list_of_chunks_grows", "python_loop"]
_ALONGSIDE_KEY = "test_another_session_is_served_during_a_bomb"
# A bomb served beside in `make test` is checked there as it is here (check() and nothing left,
# under an 11 s limit instead of 4): its run alone is `make test-all`'s. For the fork bomb, ~13 s
# and as long again of whatever test ran beside it, starved of CPU (suite round 2).
_SERVED_BESIDE = set(sample(_BOMBS_ALONGSIDE, 2, key=_ALONGSIDE_KEY))
_ALONE_IN_TEST_ALL = {"fork_bomb"} & _SERVED_BESIDE
# The fork bomb's runs share an xdist group with the test whose own instrument a fork bomb slows
# (test_accelerator_lane's /proc scan every 50 ms reads each of the bomb's ~4,000 processes: it
# took 33 s beside the bomb, 4 s alone): one test process runs them one after the other.
FORK_BOMB_GROUP = pytest.mark.xdist_group("fork_bomb")


def _marks(name: str, *marks: Any) -> tuple[Any, ...]:
    return (*marks, FORK_BOMB_GROUP) if name == "fork_bomb" else marks


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=_marks(n, *([pytest.mark.full] if n in _ALONE_IN_TEST_ALL else [])))
        for n in CASES
    ],
)
def test_exhaustion_and_deaths_end_cleanly(sandbox: SandboxHarness, name: str) -> None:
    case = CASES[name]
    outcome = run(sandbox, case.code, wall_s=case.wall_s)
    check(outcome, case)
    assert_nothing_left(outcome)


@pytest.mark.parametrize(
    "name",
    # testkit.sampled_params' sample, with the fork bomb's group mark
    [
        pytest.param(n, id=n, marks=_marks(n, *(() if n in _SERVED_BESIDE else [pytest.mark.full])))
        for n in _BOMBS_ALONGSIDE
    ],
)
def test_another_session_is_served_during_a_bomb(sandbox: SandboxHarness, name: str) -> None:
    case = CASES[name]
    if case.kind == "timeout":
        # the bomb lasts 11 s: the ordinary run, 1 s later, first starts a worker (2 s of CPU,
        # over 4 s beside a fork bomb and a second test process: CI saw it end after a 4 s
        # bomb) and must end before the bomb does
        case = replace(case, wall_s=WALL_S + 7.0)
    hostile, ok = alongside(sandbox, case.code, wall_s=case.wall_s, delay_s=1.0)
    check(hostile, case)
    assert_served_meanwhile(hostile, ok, ends_first=case.kind == "timeout")
    assert_nothing_left(hostile)
    assert_nothing_left(ok)


@pytest.mark.parametrize(
    "code",
    [
        "def spin():\n    while True:\n        pass\nspin()\n",
        "import threading\ndef spin():\n    while True:\n        pass\n"
        "threading.Thread(target=spin, daemon=True).start()\nspin()\n",
    ],
    ids=["one_thread", "two_threads"],
)
def test_the_cpu_limit_ends_a_spin(cpu_tight: SandboxHarness, code: str) -> None:
    outcome = run(cpu_tight, code)
    failed = outcome.failed("timeout")
    assert "CPU-time limit" in failed.message
    assert failed.source is not None and failed.source.function == "spin"
    assert outcome.run_s < 10.0  # well before the 20 s wall clock
    assert_nothing_left(outcome)
