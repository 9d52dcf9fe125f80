"""The CLI's snippet input (issue 12, point 6, item 6): ``jaxscope run EXHIBIT -`` (and FILE)
reads at most ``MAX_CODE_CHARS + 1`` characters and refuses longer code with exit status 2 and
a clear message, without reading the rest (an endless stdin ends too); code of exactly the limit
still runs."""

from __future__ import annotations

import contextlib
import subprocess
import threading
import time
from pathlib import Path

from jaxscope.protocol import MAX_CODE_CHARS

from tests.harness import REPO
from tests.test_cli import JAXSCOPE, jaxscope
from tests.test_server import SIN

FEED_BYTES = 256 * 2**20
REFUSAL = f"is longer than {MAX_CODE_CHARS:,} characters, the most jaxscope accepts"


def at_limit(extra: int = 0) -> str:
    """A good snippet padded with a comment of 2-byte characters to ``MAX_CODE_CHARS + extra``
    characters (the limit counts characters, not bytes)."""
    return SIN + "#" + "\u00e9" * (MAX_CODE_CHARS + extra - len(SIN) - 1)


def pipe(code: str, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [JAXSCOPE, "run", "tracing", "-", *argv],
        input=code,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=120,
        cwd=REPO,
    )


def test_stdin_one_character_over_the_limit_is_refused() -> None:
    done = pipe(at_limit(+1))
    assert done.returncode == 2, done.stderr
    assert f"the code on stdin {REFUSAL}" in done.stderr
    assert done.stdout == ""


def test_file_over_the_limit_is_refused(tmp_path: Path) -> None:
    big = tmp_path / "big.py"
    big.write_text(at_limit(+1000), encoding="utf-8")
    done = jaxscope("run", "tracing", str(big))
    assert done.returncode == 2, done.stderr
    assert f"the code on {big} {REFUSAL}" in done.stderr


def test_endless_stdin_is_refused_without_reading_it_all() -> None:
    proc = subprocess.Popen(
        [JAXSCOPE, "run", "tracing", "-"],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd=REPO,
    )
    stdin, stderr = proc.stdin, proc.stderr
    assert stdin is not None and stderr is not None
    written = 0
    deadline = time.monotonic() + 60

    def feed() -> None:
        nonlocal written
        chunk = b"# " + b"x" * 65_533 + b"\n"
        with contextlib.suppress(OSError):  # BrokenPipeError: the CLI stopped reading, exited
            # "Endless": far more than any snippet, bounded so that a regression (reading it
            # all) fails the test rather than the machine.
            while time.monotonic() < deadline and written < FEED_BYTES:
                stdin.write(chunk)
                written += len(chunk)
            stdin.close()

    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    try:
        rc = proc.wait(timeout=60)
    finally:
        proc.kill()
        feeder.join(10)
        with contextlib.suppress(OSError):
            stdin.close()
    err = stderr.read().decode()
    stderr.close()
    assert rc == 2, err
    assert f"the code on stdin {REFUSAL}" in err
    assert written < FEED_BYTES  # it stopped reading long before the feed ended


def test_code_of_exactly_the_limit_still_runs() -> None:
    done = pipe(at_limit(0), "--json")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1].startswith('{"seq"')
    assert '"type":"run_finished"' in done.stdout.splitlines()[-1]
