"""What `make test` runs of the suite, and what only `make test-all` runs (design 0058).

`make test` must fit CI's time (35 min on 2 cores, installs included), so a large parametrized
matrix runs a fixed, seeded sample of its cases and the full-size programs are marked ``full``;
`make test-all` (``JAXSCOPE_TEST_ALL=1``) runs every case. The sample is different per matrix
(its ``key``, usually the exhibit's or test's name) and the same from run to run, so a failure
in a sampled case reproduces.

:func:`run_cli` runs the ``jaxscope`` command's ``main`` in the test process: the same code path
as the console script but for the interpreter's start, so a test of ``jaxscope run`` pays a fork
of the process's warm template (kept per process, design 0053) instead of a Python start, the
CLI's imports and a template of its own (about 2 CPU-s each).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import io
import json
import os
import random
import subprocess
import sys
import zlib
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")


def whole_matrices() -> bool:
    """True when the whole matrix runs: `make test-all` sets ``JAXSCOPE_TEST_ALL=1``."""
    return os.environ.get("JAXSCOPE_TEST_ALL", "") not in ("", "0")


def sample(cases: Sequence[T], k: int, *, key: str) -> list[T]:
    """``k`` of ``cases`` (all of them under `make test-all`), chosen by a seed made from ``key``.

    The order of ``cases`` is kept, so pytest's ids read as before. ``k >= len(cases)`` keeps all.
    """
    if whole_matrices() or k >= len(cases):
        return list(cases)
    rng = random.Random(zlib.crc32(key.encode()))
    chosen = sorted(rng.sample(range(len(cases)), k))
    return [cases[i] for i in chosen]


def sampled_params(
    cases: Sequence[Sequence[object]], k: int, *, key: str, ids: Sequence[str]
) -> list[object]:
    """``pytest.param`` of every case (each a tuple of the test's arguments, named by ``ids``):
    the :func:`sample` of ``k`` plain, the others marked ``full``, so that `make test` reports
    them skipped by name and `make test-all` runs them."""
    import pytest

    chosen = {id(c) for c in sample(cases, k, key=key)}
    return [
        pytest.param(*case, id=name, marks=() if id(case) in chosen else pytest.mark.full)
        for case, name in zip(cases, ids, strict=True)
    ]


class _Stdin(io.TextIOWrapper):
    """A text stdin over bytes (the CLI reads ``sys.stdin.buffer``), never a terminal."""

    def isatty(self) -> bool:
        return False


def run_cli(
    *argv: str, stdin: str | bytes = b"", cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """``jaxscope ARGV...`` run by :func:`jaxscope.cli.main` in this process, in ``cwd`` (default:
    the repository's root), ``stdin`` as its standard input; stdout and stderr captured as text,
    as ``subprocess.run(..., capture_output=True, text=True)`` gives them. argparse's exit
    (status 2) is a return code as a process's would be. For what needs a process of its own
    (signals, a cold start, another environment), tests still start the console script."""
    from jaxscope.cli import main

    data = stdin.encode() if isinstance(stdin, str) else stdin
    out, err = io.StringIO(), io.StringIO()
    with (
        contextlib.chdir(cwd or Path(__file__).resolve().parent),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
        contextlib.ExitStack() as stack,
    ):
        fake_stdin = _Stdin(io.BytesIO(data), encoding="utf-8")
        stack.callback(setattr, sys, "stdin", sys.stdin)
        sys.stdin = fake_stdin
        status = _in_a_loopless_thread(lambda: _exit_status(main, list(argv)))
    return subprocess.CompletedProcess(["jaxscope", *argv], status, out.getvalue(), err.getvalue())


def _exit_status(main: Callable[[list[str]], int], argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)


def _in_a_loopless_thread(call: Callable[[], T]) -> T:
    """``call()``, in a thread of its own when this thread already runs an event loop: a test
    process that has run an e2e test holds Playwright's sync API loop for the rest of the
    session (pytest-xdist may give it backend tests after that), and ``asyncio.run`` (the
    CLI's, a test's) refuses to start inside a running loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return call()
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(call).result()


def fresh_json(script: str, *argv: str | Path, timeout: float = 300) -> Any:
    """The JSON value the last stdout line of ``python -c script *argv`` prints, run in a fresh
    process of this interpreter (a truth with nothing of the test process in it: no jaxscope
    import, no JAX state). Fails the test, with the process's stderr, when it exits non-zero."""
    proc = subprocess.run(
        [sys.executable, "-c", script, *map(str, argv)],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.splitlines()[-1])


def run_async(coro: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(coro)``, where a loop may already run (:func:`_in_a_loopless_thread`)."""
    return _in_a_loopless_thread(lambda: asyncio.run(coro))
