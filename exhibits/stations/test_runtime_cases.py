"""A call that fails in plain JAX fails in the exhibit (issue 15): the ``cases/RT*`` snippets,
each from a public report cited in its docstring, where ``jax.jit(f)(*args)`` raises at run
time (a donated array passed again, a host callback that raises). Plain JAX is asked here, in
this process; then ``jaxscope run`` on each exhibit that executes ``f``: it must fail with the
same error class, on the user's line, with a why, and print no output. The fixed case's output
must equal plain JAX's.
"""

from __future__ import annotations

import json
import subprocess

import jax
import numpy as np
import pytest
from jaxscope.sandbox.snippet import load_snippet

from exhibits.conftest import CASES, jaxscope_run


def plain_error(name: str) -> BaseException:
    """What plain ``jax.jit(f)(*args)`` raises on the case (loaded fresh, as a script would)."""
    snippet = load_snippet((CASES / f"{name}.py").read_text())
    with pytest.raises(Exception) as info:
        np.asarray(jax.jit(snippet.f)(*snippet.args))  # waits for the result
    return info.value


def cli(exhibit: str, name: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return jaxscope_run(exhibit, CASES / f"{name}.py", *extra)


@pytest.mark.parametrize(
    ("name", "error_class", "says", "line", "why"),
    [
        (
            "RT01_donated_reused_broken",
            "RuntimeError",
            "Array has been deleted",
            None,
            "donated to an earlier call",
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
