"""Issue 33, classes 7 and 10, on the ``cases/UE*`` and ``cases/DN*`` snippets (each from a
public report cited in its docstring, broken and fixed): an error in the user's own ``f`` fails
the run at the user's line, and a call that fails in plain JAX (a donated array passed again)
fails in every exhibit as it does. The truth is the snippet run as a plain script in a fresh
process (``exhibits/plain_calls.py``); the exhibits run in-process (``run_probe``), a few
through ``jaxscope run`` for the exit status, the line and the fix on stderr."""

from __future__ import annotations

import ast
import json
import re
import traceback
from pathlib import Path

import numpy as np
import pytest
from jaxscope.protocol import RunOptions
from jaxscope.sandbox.probe_api import BLAME_ATTR, DURING_ATTR
from jaxscope.sandbox.snippet import load_snippet

from exhibits.conftest import CASES, jaxscope_run, run_probe
from exhibits.custom_vjp.events import CustomRuleChecked
from exhibits.plain_calls import plain_outcome, plain_outcomes
from exhibits.transform_order.events import TransformStackEvaluated
from testkit import sample


def snippet_line(exc: BaseException) -> int | None:
    """The deepest snippet line on ``exc``'s traceback, else the line a check blamed."""
    lines = [
        fr.lineno for fr in traceback.extract_tb(exc.__traceback__) if fr.filename == "<snippet>"
    ]
    if lines:
        return lines[-1]
    blamed = getattr(exc, BLAME_ATTR, None)
    return blamed[0] if isinstance(blamed, tuple) else None


# ---- class 10: a donated array passed again -----------------------------------------------

# case, the line that passes the deleted array (args or kwargs)
DONATED = [("DN01_solver_donated", 24), ("DN02_state_kwargs_donated", 25)]
# Exhibits that trace, lower or copy rather than call f: they finished on a deleted argument.
TRACING = ["tracing", "partial_eval", "cache_key", "dtypes", "xla_passes", "transform_order"]


@pytest.mark.parametrize(("case", "line"), DONATED)
def test_a_donated_argument_fails_as_plain_f_does(case: str, line: int) -> None:
    path = CASES / f"{case}_broken.py"
    plain = plain_outcome(path)
    assert not plain["ok"] and "deleted or donated" in plain["message"]
    with pytest.raises(Exception) as info:
        load_snippet(path.read_text())  # every exhibit loads its snippet so
    assert type(info.value).__name__ == plain["error_class"]
    assert str(info.value) == plain["message"]
    assert snippet_line(info.value) == line
    # the stage text says the call plain JAX makes: with **kwargs when the snippet has kwargs
    call = "f(*args, **kwargs)" if "kwargs" in case else "f(*args)"
    assert getattr(info.value, DURING_ATTR).startswith(f"calling {call} with "), case


@pytest.mark.parametrize("exhibit", sample(TRACING, 1, key="issue33-donated"))
@pytest.mark.parametrize(("case", "line"), DONATED)
def test_the_donated_case_fails_in_an_exhibit_that_only_traces(
    exhibit: str, case: str, line: int
) -> None:
    path = CASES / f"{case}_broken.py"
    with pytest.raises(Exception) as info:
        run_probe(exhibit, path.read_text())
    assert "deleted or donated" in str(info.value) and snippet_line(info.value) == line
    fixed = CASES / f"{case}_fixed.py"
    assert plain_outcome(fixed)["ok"]
    assert run_probe(exhibit, fixed.read_text()).events  # finishes


def test_the_donated_case_through_the_cli() -> None:
    proc = jaxscope_run("tracing", CASES / "DN01_solver_donated_broken.py")
    assert proc.returncode == 1, proc.stderr
    assert "Buffer has been deleted or donated" in proc.stderr
    assert "at line 24" in proc.stderr and "fix: Use the donated call's result" in proc.stderr
    assert "donated or deleted while loading" in proc.stderr
    fixed = jaxscope_run("tracing", CASES / "DN01_solver_donated_fixed.py")
    assert fixed.returncode == 0, fixed.stderr


# ---- class 7: an error in f is f's own --------------------------------------------------

# case, the plain transform the exhibit stands on (as a plain script writes it), the stack
TRANSFORM_ORDER = [
    (
        "UE01_transposed_weight",
        "jax.vmap(f, in_axes=in_axes)(*args)",
        "jax.vmap(jax.grad(f), in_axes=in_axes)(*args)",
    ),
    (
        "UE02_branch_under_jit",
        "jax.jit(jax.vmap(f, in_axes=in_axes))(*args)",
        "jax.jit(jax.vmap(jax.grad(f), in_axes=in_axes))(*args)",
    ),
]


@pytest.mark.parametrize(("case", "plain", "stack"), TRANSFORM_ORDER)
def test_transform_order_fails_at_the_line_of_fs_own_error(
    case: str, plain: str, stack: str
) -> None:
    broken = CASES / f"{case}_broken.py"
    truth, whole = plain_outcomes(broken, (plain, stack))
    assert not truth["ok"] and not whole["ok"]
    with pytest.raises(Exception) as info:
        run_probe("transform_order", broken.read_text())
    assert type(info.value).__name__ == truth["error_class"]
    assert str(info.value).splitlines()[0] == truth["message"].splitlines()[0]
    assert snippet_line(info.value) == truth["line"]
    # fixed: the stack runs, and its value is plain JAX's
    fixed = CASES / f"{case}_fixed.py"
    want = plain_outcomes(fixed, (plain, stack))[1]
    assert want["ok"]
    ctx = run_probe("transform_order", fixed.read_text())
    event = ctx.of_type(TransformStackEvaluated)[0]
    assert event.ok and [r.shape for r in event.result] == [
        list(_shape(leaf)) for leaf in want["leaves"]
    ]


def _shape(nested: object) -> tuple[int, ...]:
    shape: list[int] = []
    while isinstance(nested, list):
        shape.append(len(nested))
        nested = nested[0] if nested else None
    return tuple(shape)


def test_a_stack_that_fails_on_its_own_order_is_still_shown() -> None:
    """grad outside vmap on the fixed UE01: plain vmap(f) runs, the stack does not (a batched
    output is not a scalar): the exhibit's lesson, shown, the run finished."""
    fixed = CASES / "UE01_transposed_weight_fixed.py"
    plain, stack = TRANSFORM_ORDER[0][1:]
    assert plain_outcomes(fixed, (plain, stack))[0]["ok"]
    ctx = run_probe(
        "transform_order", fixed.read_text(), RunOptions.model_validate({"stack": ["grad", "vmap"]})
    )
    event = ctx.of_type(TransformStackEvaluated)[0]
    assert not event.ok and event.error_class == "TypeError"
    assert "Gradient only defined for scalar-output functions" in (event.message or "")


def test_custom_vjp_fails_at_the_line_of_fs_own_error() -> None:
    broken = CASES / "UE03_custom_vjp_branch_broken.py"
    eager, truth = plain_outcomes(broken, ("f(*args)", "jax.jit(f)(*args)"))
    assert not truth["ok"] and eager["ok"]  # eager f runs; jit(f) does not
    with pytest.raises(Exception) as info:
        run_probe("custom_vjp", broken.read_text())
    assert type(info.value).__name__ == truth["error_class"]
    assert snippet_line(info.value) == truth["line"] == 30
    fixed = CASES / "UE03_custom_vjp_branch_fixed.py"
    assert plain_outcome(fixed, "jax.jit(jax.grad(f))(*args)")["ok"]
    checked = run_probe("custom_vjp", fixed.read_text()).one(CustomRuleChecked)
    assert [a.ok for a in checked.attempts] == [True, True]


@pytest.mark.parametrize(
    ("exhibit", "case", "line"),
    sample(
        [
            ("transform_order", "UE01_transposed_weight", 17),
            ("custom_vjp", "UE03_custom_vjp_branch", 30),
        ],
        1,
        key="issue33-cli",
    ),
)
def test_the_cli_fails_the_broken_case_and_passes_the_fixed(
    exhibit: str, case: str, line: int
) -> None:
    broken = jaxscope_run(exhibit, CASES / f"{case}_broken.py", "--json")
    assert broken.returncode == 1, broken.stderr
    (failed,) = [
        e for e in map(json.loads, broken.stdout.splitlines()) if e["type"] == "run_failed"
    ]
    assert failed["source"]["line"] == line and "JAX raised" not in broken.stderr
    fixed = jaxscope_run(exhibit, CASES / f"{case}_fixed.py")
    assert fixed.returncode == 0, fixed.stderr


# case, exhibit, the matmul's line: a product whose contracted axes differ (dot_general)
MATMULS = [
    ("UE01_transposed_weight", "transform_order", 17),
    ("UE05_torch_linear_kernel", "tracing", 22),
]


@pytest.mark.parametrize(("case", "exhibit", "line"), MATMULS)
def test_a_mismatched_matmul_gets_a_fix_that_runs(
    case: str, exhibit: str, line: int, tmp_path: Path
) -> None:
    """The why names both operands' shapes, the fix rewrites the product, and the first fix,
    written into a copy of the broken case at that line, makes the run exit 0 (issue 33 audit:
    UE01 printed neither)."""
    broken = CASES / f"{case}_broken.py"
    proc = jaxscope_run(exhibit, broken)
    assert proc.returncode == 1, proc.stderr
    assert "dot_general requires contracting dimensions" in proc.stderr
    assert f"at line {line}" in proc.stderr
    why = next(t for t in proc.stderr.splitlines() if t.startswith("  why: "))
    fix = next(t for t in proc.stderr.splitlines() if t.startswith("  fix: "))
    operands = re.search(r"Here `([^`]+)` has shape [^`]+ and `([^`]+)` has shape", why)
    assert operands is not None, why
    product = f"{operands[1]} @ {operands[2]}"
    rewrite = next(c for c in re.findall(r"`([^`]+)`", fix) if "@" in c)
    lines = broken.read_text().splitlines(keepends=True)
    assert product in lines[line - 1]
    lines[line - 1] = lines[line - 1].replace(product, rewrite, 1)
    copy = tmp_path / f"{case}_fix_applied.py"
    copy.write_text("".join(lines))
    fixed = jaxscope_run(exhibit, copy)
    assert fixed.returncode == 0, fixed.stderr


def test_the_caches_calls_are_made_as_a_script_makes_them() -> None:
    """caches' ``calls`` mode: the second call of a donated buffer fails as plain JAX's does
    (it got a fresh copy of the buffer before, and the run finished)."""
    sequence = "[jax.block_until_ready(f(*c)) for c in calls]"
    broken = CASES / "DN03_calls_donated_broken.py"
    (truth,) = plain_outcomes(broken, (sequence,))
    assert not truth["ok"] and "deleted or donated" in truth["message"]
    with pytest.raises(Exception) as info:
        run_probe("caches", broken.read_text())
    assert type(info.value).__name__ == truth["error_class"]
    assert str(info.value) == truth["message"]
    # JAX refused the buffer before add_one ran (no frame of the snippet): the line at fault is
    # the `calls` line that passes it again (20), not add_one's `def` (13), and the call is named
    assert snippet_line(info.value) == 20
    assert getattr(info.value, DURING_ATTR) == "in call 2 of your `calls`"
    fixed = CASES / "DN03_calls_donated_fixed.py"
    assert plain_outcomes(fixed, (sequence,))[0]["ok"]
    assert run_probe("caches", fixed.read_text()).events


def test_a_donation_inside_an_unjitted_f_fails_as_the_script_does() -> None:
    """DN04: f calls a donating jit twice on the same array. A script's f(*args) raises at the
    second call; stations traces f under jax.jit (where donation does nothing) and printed the
    outputs. The runner calls such an f once as plain JAX does, before the exhibit."""
    broken = CASES / "DN04_donated_inside_broken.py"
    truth = plain_outcome(broken)
    assert not truth["ok"] and truth["line"] == 24
    proc = jaxscope_run("stations", broken, "--print", "output")
    assert proc.returncode == 1 and proc.stdout == "", proc.stderr
    assert f"{truth['error_class']}: {truth['message'].splitlines()[0]}" in proc.stderr
    assert "at line 24 in f" in proc.stderr and "fix: Use the donated call's result" in proc.stderr
    fixed = CASES / "DN04_donated_inside_fixed.py"
    want = plain_outcome(fixed)
    assert want["ok"]
    out = jaxscope_run("stations", fixed, "--print", "output")
    assert out.returncode == 0, out.stderr
    printed = out.stdout.strip().split("\n", 1)[1]  # under the "output: float32[4, 4]" line
    got = np.asarray(ast.literal_eval(printed), np.float32)
    np.testing.assert_array_equal(got, np.asarray(want["leaves"][0], np.float32))
