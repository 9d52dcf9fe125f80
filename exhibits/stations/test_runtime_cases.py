"""A call that fails in plain JAX fails in the exhibit (issue 15): the ``cases/RT*`` snippets,
each from a public report cited in its docstring, where ``jax.jit(f)(*args)`` raises at run
time (a donated array passed again, a host callback that raises). Plain JAX is asked here, in
this process; then ``jaxscope run`` on each exhibit that executes ``f``: it must fail with the
same error class, on the user's line, with a why, and print no output. The fixed case's output
must equal plain JAX's.
"""

from __future__ import annotations

import json
import runpy
import subprocess
from pathlib import Path
from typing import Any

import jax
import numpy as np
import pytest
from jaxscope.sandbox.snippet import load_snippet

from exhibits.conftest import CASES, jaxscope_run


def plain_error(name: str) -> BaseException:
    """What plain ``f(*args)`` raises on the case, ``jax.jit(f)(*args)`` for an ``f`` that is
    not jitted (loaded fresh, as a script would). RT01's ``f`` is jitted and donates: the
    script's own call refuses the deleted buffer (issue 33: every exhibit fails as it does)."""
    snippet = load_snippet_unchecked(CASES / f"{name}.py")
    call = snippet["f"] if hasattr(snippet["f"], "lower") else jax.jit(snippet["f"])
    with pytest.raises(Exception) as info:
        np.asarray(call(*snippet["args"]))  # waits for the result
    return info.value


def load_snippet_unchecked(path: Path) -> dict[str, Any]:
    """The snippet's namespace, executed as a script (``load_snippet`` itself now fails on a
    deleted argument, as plain ``f(*args)`` does)."""
    return runpy.run_path(str(path), run_name="snippet")


def cli(exhibit: str, name: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return jaxscope_run(exhibit, CASES / f"{name}.py", *extra)


@pytest.mark.parametrize(
    ("name", "error_class", "says", "line", "why"),
    [
        (
            "RT01_donated_reused_broken",
            "ValueError",
            "Buffer has been deleted or donated",
            21,  # the args line: the argument whose buffer is gone
            "donated to an earlier jitted call",
        ),
        (
            "RT02_callback_raises_broken",
            "JaxRuntimeError",
            "ValueError: negative input",
            18,
            "a Python callback that JAX called",
        ),
    ],
)
@pytest.mark.parametrize("exhibit", ["stations", "vmap", "nan_finder"])
def test_a_runtime_failure_of_plain_jax_fails_the_run(
    exhibit: str, name: str, error_class: str, says: str, line: int | None, why: str
) -> None:
    raised = plain_error(name)
    assert type(raised).__name__ == error_class and says in str(raised)
    proc = cli(exhibit, name, "--json")
    assert proc.returncode == 1, proc.stderr
    events = [json.loads(x) for x in proc.stdout.splitlines() if x.strip()]
    failed = [e for e in events if e["type"] == "run_failed"]
    # eager dispatch (vmap's walk) raises the callback's own class; jit wraps it
    assert len(failed) == 1 and failed[0]["error_class"] in (error_class, says.split(":")[0])
    assert says.split(": ")[-1] in failed[0]["message"]
    if failed[0]["error_class"] == error_class:  # the user's own raise needs no why
        assert why in (failed[0]["explanation"] or "")
    if line is not None:
        assert failed[0]["source"]["line"] == line
    # no output plain JAX would not have produced
    assert not [e for e in events if e["type"] == "program_executed"]


def test_the_fixed_donation_runs_as_plain_jax_does() -> None:
    snippet = load_snippet((CASES / "RT01_donated_reused_fixed.py").read_text())
    want = np.asarray(jax.jit(snippet.f)(*snippet.args))
    proc = cli("stations", "RT01_donated_reused_fixed", "--json")
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(x) for x in proc.stdout.splitlines() if x.strip()]
    (executed,) = [e for e in events if e["type"] == "program_executed"]
    (out,) = executed["outputs"]
    assert out["shape"] == list(want.shape) and out["dtype"] == str(want.dtype)
    got = np.array(json.loads(out["preview"]))
    np.testing.assert_allclose(got, want, rtol=1e-6)
