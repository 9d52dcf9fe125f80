"""``jaxscope diff EXHIBIT A.py B.py --print ARTEFACT`` (issue 18): the unified diff of one
artefact of two snippets, checked against ``difflib`` over JAX's own texts computed here."""

from __future__ import annotations

import difflib
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp

JAXSCOPE = str(Path(sys.executable).parent / "jaxscope")

A = "import jax.numpy as jnp\n\ndef f(x):\n    return jnp.sin(x) * 2.0\n\nargs = (jnp.ones(3),)\n"
B = (
    "import jax.numpy as jnp\n\ndef f(x):\n    y = jnp.cos(jnp.sin(x))\n    return y * 2.0\n\n"
    "args = (jnp.ones(3),)\n"
)


def diff(tmp_path: Path, a: str, b: str, *extra: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "a.py").write_text(a)
    (tmp_path / "b.py").write_text(b)
    return subprocess.run(
        [JAXSCOPE, "diff", "tracing", str(tmp_path / "a.py"), str(tmp_path / "b.py"), *extra],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_two_versions_print_the_unified_diff_of_jaxs_texts(tmp_path: Path) -> None:
    proc = diff(tmp_path, A, B, "--print", "jaxpr")
    assert proc.returncode == 1, proc.stderr  # different, as diff(1) says
    x = jnp.ones(3)
    a = str(jax.make_jaxpr(lambda x: jnp.sin(x) * 2.0)(x))
    b = str(jax.make_jaxpr(lambda x: jnp.cos(jnp.sin(x)) * 2.0)(x))
    want = difflib.unified_diff(
        a.splitlines(keepends=True),
        b.splitlines(keepends=True),
        fromfile=str(tmp_path / "a.py"),
        tofile=str(tmp_path / "b.py"),
    )
    assert proc.stdout == "".join(line if line.endswith("\n") else line + "\n" for line in want)
    assert "+    c:f32[3] = cos b" in proc.stdout


def test_the_same_artefact_is_no_diff(tmp_path: Path) -> None:
    proc = diff(tmp_path, A, A, "--print", "jaxpr")
    assert (proc.returncode, proc.stdout) == (0, "")


def test_a_failing_run_or_an_unknown_artefact_is_trouble(tmp_path: Path) -> None:
    proc = diff(tmp_path, A, A, "--print", "nope")
    assert proc.returncode == 2 and "has no artefact 'nope'" in proc.stderr
    broken = A.replace("jnp.sin(x)", "jnp.sin(x) + undefined_name")
    proc = diff(tmp_path, A, broken, "--print", "jaxpr")
    assert proc.returncode == 2
    assert "b.py failed" in proc.stderr and "NameError" in proc.stderr


def test_a_flag_of_another_exhibit_or_an_overlong_file_is_refused_as_run_refuses_it(
    tmp_path: Path,
) -> None:
    """``diff`` checks its flags and files as ``run`` does: ``--in-axes`` is not the tracing
    exhibit's (``run`` refuses it; ``diff`` ran both files and dropped it), and a file past
    the code limit is refused by name before anything runs."""
    from jaxscope.protocol import MAX_CODE_CHARS

    (tmp_path / "a.py").write_text(A)
    run = subprocess.run(
        [JAXSCOPE, "run", "tracing", str(tmp_path / "a.py"), "--in-axes", "1"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 2 and "not of tracing" in run.stderr
    proc = diff(tmp_path, A, B, "--print", "jaxpr", "--in-axes", "1")
    assert (proc.returncode, proc.stdout) == (2, "")
    assert "jaxscope diff: --in-axes is an option of" in proc.stderr
    assert "not of tracing" in proc.stderr
    long = A + "#" * MAX_CODE_CHARS + "\n"
    proc = diff(tmp_path, A, long, "--print", "jaxpr")
    assert (proc.returncode, proc.stdout) == (2, "")
    assert f"the code on {tmp_path / 'b.py'} is longer than {MAX_CODE_CHARS:,}" in proc.stderr
