"""The gradient check's verdict on real user problems (issue 15, "Finite-difference check"): the
``cases/FD*`` snippets, each from a public report cited in its docstring, and the shared C22,
run through the real sandbox with ``jaxscope run transpose FILE --print fd_check``.

The truth is computed here with plain JAX and numpy: ``jax.grad(f)`` for the gradient, and
central differences in float64 of ``f`` on its arguments widened to float64 (numpy arrays under
``jax.enable_x64``) for the derivative. Each case is judged with a wide margin (a disagreement
is a NaN/Inf gradient where the difference is finite, or off by more than 10 times the dtype's
tolerance; an agreement within a quarter of it), so the verdict the CLI prints is checked, not
re-derived. A disagreement must make ``jaxscope run`` exit 3 with the headline on stderr; a
case whose elements cannot all be held to a difference must never read as agreement.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jaxscope.sandbox.snippet import load_snippet

from exhibits.conftest import CASES
from testkit import run_cli

REPO = CASES.parent
# The relative tolerance of each dtype (jaxscope.finite_diff.gradient_tolerance); the margins
# below keep every case far from it.
TOL = {"float32": 1e-4, "float16": 1e-2, "bfloat16": 6.25e-2}


@dataclass(frozen=True)
class Ran:
    """One ``jaxscope run transpose FILE --print fd_check``."""

    returncode: int
    fd_check: dict[str, Any]
    stderr: str


_RUNS: dict[str, Ran] = {}


def run(name: str) -> Ran:
    """The CLI on ``cases/<name>.py`` (once per session)."""
    if name not in _RUNS:
        proc = run_cli(
            "run", "transpose", str(CASES / f"{name}.py"), "--print", "fd_check", cwd=REPO
        )
        assert proc.stdout.strip(), proc.stderr
        _RUNS[name] = Ran(proc.returncode, json.loads(proc.stdout), proc.stderr)
    return _RUNS[name]


# ---- the truth: plain JAX and numpy ---------------------------------------------------------


@dataclass
class Truth:
    """``jax.grad`` of a case and float64 central differences of its upcast ``f``."""

    snippet: Any
    argnums: tuple[int, ...]
    grads: list[tuple[str, np.ndarray]]  # (key path, gradient leaf in its dtype)

    def widened(self) -> list[Any]:
        def wide(x: Any) -> Any:
            return np.asarray(x, np.float64) if jnp.issubdtype(x.dtype, jnp.floating) else x

        return [jax.tree.map(wide, a) for a in self.snippet.args]

    def sides(self, leaf: int, index: tuple[int, ...], h: float = 1e-6) -> tuple[float, ...]:
        """(left, right, central) differences in float64 at one element of the ``leaf``-th
        differentiated leaf (in ``argnums`` then ``jax.tree.leaves`` order)."""
        with jax.enable_x64(True):
            args = self.widened()
            where = [(i, j) for i in self.argnums for j in range(len(jax.tree.leaves(args[i])))]
            i, j = where[leaf]
            leaves, treedef = jax.tree.flatten(args[i])

            def f_at(delta: float) -> float:
                moved = [np.array(x, copy=True) for x in leaves]
                moved[j][index] += delta
                full = list(args)
                full[i] = jax.tree.unflatten(treedef, moved)
                return float(self.snippet.f(*full))

            f0, plus, minus = f_at(0.0), f_at(h), f_at(-h)
        return (f0 - minus) / h, (plus - f0) / h, (plus - minus) / (2 * h)

    def central(self, leaf: int, index: tuple[int, ...]) -> float:
        return self.sides(leaf, index)[2]


def truth(name: str) -> Truth:
    snippet = load_snippet((CASES / f"{name}.py").read_text())
    chosen = snippet.namespace.get("argnums")
    if chosen is None:
        argnums = tuple(range(len(snippet.args)))
    else:
        argnums = (chosen,) if isinstance(chosen, int) else tuple(chosen)
    grad = jax.grad(snippet.f, argnums=argnums)(*snippet.args)
    grads = []
    for k, i in enumerate(argnums):
        for path, leaf in jax.tree_util.tree_flatten_with_path(grad[k])[0]:
            grads.append((f"args[{i}]{jax.tree_util.keystr(path)}", np.asarray(leaf)))
    return Truth(snippet, argnums, grads)


def numpy_text(value: Any) -> str:
    """An element as numpy's array printout writes it (precision 6, a bare point completed)."""
    text = np.array2string(np.asarray(value).reshape(1), precision=6, floatmode="maxprec")
    text = text[1:-1].strip()
    return text + "0" if text.endswith(".") else text


def f64_text(value: float) -> str:
    return numpy_text(np.float64(value))


def where(path: str, index: tuple[int, ...]) -> str:
    return f"{path}[{', '.join(map(str, index))}]" if index else path


def assert_disagrees_first_at(
    name: str, path: str, index: tuple[int, ...], gradient: Any, fd: float, of: int, checked: int
) -> None:
    """The CLI exits 3, its headline names ``path[index]`` with the gradient (in its dtype, as
    numpy prints it) and the finite difference, and ``of`` of ``checked`` disagree."""
    ran = run(name)
    assert ran.returncode == 3, ran.stderr
    c = ran.fd_check
    assert c["verdict"] == "disagree"
    assert c["checked"] == checked and c["disagree_count"] == of
    first = c["disagreements"][0]
    assert (first["path"], tuple(first["index"])) == (path, index)
    assert first["finite_difference"] == pytest.approx(fd, rel=1e-5, abs=1e-9)
    assert first["why"].startswith(f"the gradient is {numpy_text(gradient)}"), first["why"]
    assert f64_text(first["finite_difference"]) in first["why"]
    said = (
        f"The gradient disagrees with the float64 finite differences at {of:,} of {checked:,} "
        f"checked elements; first at {where(path, index)}: {first['why']}."
    )
    # then, only where a custom rule is on the path, the rule (test_rule_blame.py)
    assert c["headline"].startswith(said)
    assert c["headline"] == said or c["headline"][len(said) :].startswith(" The cotangent of ")
    # stderr: a finding, with the headline in full
    assert "the exhibit found a problem (GradientMismatch)" in ran.stderr
    assert f"  GradientMismatch: {c['headline']}" in ran.stderr.splitlines()


def assert_agrees(name: str, elements: int, precision: str, all_zero: bool = False) -> None:
    ran = run(name)
    assert ran.returncode == 0, ran.stderr
    c = ran.fd_check
    assert c["verdict"] == "agree" and c["disagreements"] == [] and c["not_compared"] == []
    assert c["checked"] == elements
    agrees = (
        "The gradient agrees with the float64 finite differences at every element "
        f"({elements:,}), within {precision} precision"
    )
    if all_zero:
        assert c["headline"].startswith(agrees + ": every element of the gradient and")
        assert "(a stationary point, or a vanishing gradient" in c["headline"]
    else:
        assert c["headline"] == agrees + "."
    assert "GradientMismatch" not in ran.stderr


# ---- the cases ------------------------------------------------------------------------------


def test_fd01_squared_norm_at_zero_is_nan_where_the_derivative_is_0() -> None:
    """jax-ml/jax#4177: grad of norm(x)**2 at x = 0 is [nan, nan]; ||x||^2 is smooth there with
    derivative 2x = 0."""
    t = truth("FD01_norm_sq_zero_broken")
    ((path, g),) = t.grads
    assert np.isnan(g).all()
    fd = [t.central(0, (i,)) for i in range(2)]
    assert fd == [0.0, 0.0]  # (h^2 - h^2) / 2h
    assert_disagrees_first_at("FD01_norm_sq_zero_broken", path, (0,), g[0], fd[0], 2, 2)
    assert "the float64 walk gives nan too" in run("FD01_norm_sq_zero_broken").fd_check["headline"]


def test_fd01_fixed_sum_of_squares_agrees() -> None:
    t = truth("FD01_norm_sq_zero_fixed")
    ((_, g),) = t.grads
    assert g.tolist() == [0.0, 0.0] == [t.central(0, (i,)) for i in range(2)]
    # x = 0 is the minimum: every value is 0, and the headline says so (GradientChecked.all_zero)
    assert_agrees("FD01_norm_sq_zero_fixed", 2, "float32", all_zero=True)


def test_fd02_ldexp_at_zero_is_a_finite_wrong_gradient() -> None:
    """jax-ml/jax#37992: d/dx ldexp(x, 1) is 2 everywhere; JAX gives 1 at x = 0."""
    t = truth("FD02_ldexp_zero_broken")
    ((path, g),) = t.grads
    fd = np.array([t.central(0, (i,)) for i in range(3)])
    np.testing.assert_allclose(fd, 2.0, rtol=1e-8)
    assert g.tolist() == [1.0, 2.0, 2.0]
    assert abs(g[0] - fd[0]) > 10 * TOL["float32"] * abs(fd[0])  # clearly past the tolerance
    assert_disagrees_first_at("FD02_ldexp_zero_broken", path, (0,), g[0], fd[0], 1, 3)
    first = run("FD02_ldexp_zero_broken").fd_check["disagreements"][0]
    assert first["kind"] == "off" and first["dtype"] == "float32"


def test_fd03_float16_norm_overflow_gives_a_silently_zero_gradient() -> None:
    """jax-ml/jax#39899: the float16 norm of 100 * ones((3, 3)) is inf and its gradient 0;
    the derivative is 100 / 300 at every element. The float64 walk is right, so its error
    figures are tiny: only the verdict, at float16 precision, tells."""
    t = truth("FD03_norm_float16_broken")
    ((path, g),) = t.grads
    assert g.dtype == np.float16 and (g == 0).all()
    fd = t.central(0, (0, 0))
    assert abs(fd - 1 / 3) < 1e-8
    assert_disagrees_first_at("FD03_norm_float16_broken", path, (0, 0), g[0, 0], fd, 9, 9)
    c = run("FD03_norm_float16_broken").fd_check
    assert c["disagreements"][0]["kind"] == "zero" and c["disagreements"][0]["dtype"] == "float16"
    assert "the same walk in float64 gives 0.333333, so float16 arithmetic lost it" in c["headline"]
    assert c["max_abs_err"] < 1e-9  # the rules are right: the figures alone would vouch for it


def test_fd03_fixed_float16_gradient_agrees_at_float16_precision() -> None:
    t = truth("FD03_norm_float16_fixed")
    ((_, g),) = t.grads
    assert g.dtype == np.float16 and float(g[0, 0]) == 0.333251953125
    assert numpy_text(g[0, 0]) == "0.3333"
    # the derivative of the norm (f's math; its float32 cast rounds the input at a float64 step)
    x = np.asarray(t.snippet.args[0], np.float64)
    e = np.zeros_like(x)
    e[0, 0] = 1e-6
    fd = (np.linalg.norm(x + e) - np.linalg.norm(x - e)) / 2e-6
    assert fd == pytest.approx(1 / 3, rel=1e-8)
    # float16's rounding of 1/3 is far inside float16's tolerance, far outside float32's
    assert TOL["float32"] * fd < abs(float(g[0, 0]) - fd) < TOL["float16"] * fd / 4
    assert_agrees("FD03_norm_float16_fixed", 9, "float16")
    assert run("FD03_norm_float16_fixed").fd_check["fd_dtype"] == "float32"  # the cast inside


def test_fd04_optax_clip_at_zero_updates_is_nan_where_the_clip_is_the_identity() -> None:
    """optax clip_by_global_norm differentiated at zero updates (optax#1752; tf#22048)."""
    t = truth("FD04_clip_zero_broken")
    ((path, g),) = t.grads
    assert np.isnan(g).all()
    fd = [t.central(0, (i,)) for i in range(3)]
    np.testing.assert_allclose(fd, [1.0, 2.0, 3.0], rtol=1e-8)
    assert_disagrees_first_at("FD04_clip_zero_broken", path, (0,), g[0], fd[0], 3, 3)


def test_fd05_custom_vjp_with_a_sign_error() -> None:
    """jax-ml/jax#13048: the tutorial's bwd returns -sin(x) * g for y; d/dy is sin(x)."""
    t = truth("FD05_custom_vjp_sign_broken")
    (px, gx), (py, gy) = t.grads
    assert float(gy) == pytest.approx(-np.sin(2.0), rel=1e-6)
    fd_x, fd_y = t.central(0, ()), t.central(1, ())
    assert fd_y == pytest.approx(np.sin(2.0), rel=1e-8)
    assert float(gx) == pytest.approx(fd_x, rel=1e-5)  # d/dx is right: args[0] agrees
    assert_disagrees_first_at("FD05_custom_vjp_sign_broken", py, (), gy, fd_y, 1, 2)
    assert px == "args[0]" and py == "args[1]"


def test_fd06_float16_log_softmax_gradient_is_minus_inf() -> None:
    """jax-ml/jax#40409: 65,537 float16 logits; the gradient 1 - n softmax(x) is small and
    finite, JAX's float16 gradient is -inf everywhere. The array is sampled, and the first
    element (the largest logit) is differenced and named."""
    t = truth("FD06_log_softmax_f16_broken")
    ((path, g),) = t.grads
    assert g.dtype == np.float16 and np.isneginf(g.astype(np.float32)).all()
    x = np.asarray(t.snippet.args[0], np.float64)
    softmax = np.exp(x - x.max()) / np.exp(x - x.max()).sum()
    exact = 1 - x.size * softmax
    fd = t.central(0, (0,))
    assert fd == pytest.approx(exact[0], rel=1e-4)
    c = run("FD06_log_softmax_f16_broken").fd_check
    assert c["elements"] == x.size and c["fd_sampled"] < x.size  # sampled, not all
    n = c["checked"]
    assert_disagrees_first_at("FD06_log_softmax_f16_broken", path, (0,), g[0], fd, n, n)
    # the -inf gradients past the sample are left out, not silently passed
    assert c["not_compared_count"] == x.size - n
    assert {r["reason"] for r in c["not_compared"]} == {"not_sampled"}


def test_fd07_bfloat16_weights_agree_at_bfloat16_precision() -> None:
    """jax-ml/jax#30337: bfloat16 weights get bfloat16 gradients, right to bfloat16 precision;
    held to float32's tolerance they would be called wrong."""
    t = truth("FD07_bf16_weights_fixed")
    ((_, g),) = t.grads
    assert str(g.dtype) == "bfloat16"
    fd = np.array([[t.central(0, (i, j)) for j in range(3)] for i in range(4)])
    err = np.abs(g.astype(np.float64) - fd).max() / np.abs(fd).max()
    assert TOL["float32"] < err < TOL["bfloat16"] / 4
    assert_agrees("FD07_bf16_weights_fixed", 12, "bfloat16")


def test_fd08_flax_bfloat16_compute_is_not_held_to_meaningless_differences() -> None:
    """google/flax#2384: Dense(dtype=bfloat16) over float32 parameters. Widened to float64, the
    parameters are still rounded to bfloat16 inside Dense: f is flat at a float64 step, so no
    finite difference can check the gradient there; the verdict must say so, not disagree."""
    t = truth("FD08_flax_bf16_compute")
    kernel = next(i for i, (p, _) in enumerate(t.grads) if p.endswith("['Dense_0']['kernel']"))
    g = t.grads[kernel][1]
    assert g.dtype == np.float32 and np.isfinite(g).all() and np.abs(g).max() > 0
    left, right, central = t.sides(kernel, (0, 0))
    assert left == right == central == 0.0  # flat at h = 1e-6: bfloat16 rounding inside
    ran = run("FD08_flax_bf16_compute")
    assert ran.returncode == 0, ran.stderr
    c = ran.fd_check
    assert c["verdict"] == "incomplete" and c["disagreements"] == []
    assert c["fd_dtype"] == "bfloat16"
    assert "rounded" in {r["reason"] for r in c["not_compared"]}
    assert c["headline"].startswith("Not fully checked:")


def test_c22_where_sqrt_nan_gradient_disagrees() -> None:
    """The shared C22: jnp.where over sqrt; the gradient is nan left of the guard, where f is
    flat (derivative 0)."""
    t = truth("C22_where_sqrt_broken")
    ((path, g),) = t.grads
    assert np.isnan(g[:2]).all() and g[2] == 0.25
    fd0 = t.central(0, (0,))
    assert fd0 == 0.0
    assert_disagrees_first_at("C22_where_sqrt_broken", path, (0,), g[0], fd0, 1, 2)


def test_c22_fixed_kink_at_zero_is_never_agreement() -> None:
    """C22 fixed: the gradient is finite, but at x = 0 the one-sided differences are 0 and
    1/sqrt(h): a kink, no derivative to hold the gradient to: the verdict is incomplete."""
    t = truth("C22_where_sqrt_fixed")
    ((path, g),) = t.grads
    assert np.isfinite(g).all()
    left, right, _ = t.sides(0, (1,))
    assert left == 0.0 and right > 100
    ran = run("C22_where_sqrt_fixed")
    assert ran.returncode == 0, ran.stderr
    c = ran.fd_check
    assert c["verdict"] == "incomplete" and c["checked"] == 2
    assert [(r["path"], r["index"], r["reason"]) for r in c["not_compared"]] == [
        (path, [1], "kink")
    ]
    assert c["headline"].startswith(f"Not fully checked: 1 element was left out, first {path}[1]")


def test_print_verdict_and_summary_mode() -> None:
    """``--print verdict``: the verdict, the headline and the first disagreement; the summary
    mode exits 3 too and lists the artefact."""
    path = str(CASES / "FD02_ldexp_zero_broken.py")
    proc = run_cli("run", "transpose", path, "--print", "verdict", cwd=REPO)
    assert proc.returncode == 3, proc.stderr
    verdict = json.loads(proc.stdout)
    fd_check = run("FD02_ldexp_zero_broken").fd_check
    assert verdict["ok"] is False and verdict["verdict"] == "disagree"
    assert verdict["headline"] == fd_check["headline"]
    assert verdict["first"] == fd_check["disagreements"][0]
    proc = run_cli("run", "transpose", path, cwd=REPO)
    assert proc.returncode == 3 and "verdict" in proc.stdout
    assert "GradientMismatch" in proc.stderr


# A zero gradient where the derivative is small but not zero: a custom_jvp that drops its
# tangent (the derivative of 1e-5 * sum(b) is 1e-5 everywhere).
DROPPED_TANGENT = """
import jax
import jax.numpy as jnp


@jax.custom_jvp
def scaled(b):
    return 1e-5 * b


@scaled.defjvp
def scaled_jvp(primals, tangents):
    (b,), (db,) = primals, tangents
    return scaled(b), jnp.zeros_like(db)


def f(b):
    return jnp.sum(scaled(b))


args = (jnp.ones(3),)
"""


def test_a_zero_gradient_where_the_derivative_is_small_disagrees() -> None:
    """Held to the leaf's own scale, a zero gradient where the derivative is 1e-5 disagrees (an
    absolute tolerance of 1e-4 would have passed it)."""
    from exhibits.conftest import run_probe
    from exhibits.transpose.events import GradientChecked

    snippet = load_snippet(DROPPED_TANGENT)
    g = np.asarray(jax.grad(snippet.f)(*snippet.args))
    assert g.tolist() == [0.0, 0.0, 0.0]
    with jax.enable_x64(True):
        b = np.ones(3)
        e = np.array([1e-6, 0.0, 0.0])
        fd = (float(snippet.f(b + e)) - float(snippet.f(b - e))) / 2e-6
    assert fd == pytest.approx(1e-5, rel=1e-6)
    check = run_probe("transpose", DROPPED_TANGENT).one(GradientChecked)
    assert check.verdict == "disagree" and check.disagree_count == 3
    first = check.disagreements[0]
    assert (first.index, first.gradient, first.kind) == ([0], 0.0, "zero")
    assert first.finite_difference == pytest.approx(fd, rel=1e-6)
    assert "first at args[0][0]: the gradient is 0.0 where the finite difference is 1e-05" in (
        check.headline
    )


DROPOUT = """\
import jax
import jax.numpy as jnp

def f(w):
    keep = jax.random.bernoulli(jax.random.key(0), 0.5, (8,))  # a dropout mask
    return jnp.sum(jnp.where(keep, w, 0.0) ** 2)

args = (jnp.linspace(0.1, 1.0, 8),)
"""


def test_a_function_whose_float64_run_draws_other_bits_is_not_checked(tmp_path: Path) -> None:
    # plain JAX: with x64 on, the same key draws another mask, so f is another function there
    ns = load_snippet(DROPOUT)
    value32 = float(ns.f(*ns.args))
    with jax.enable_x64(True):
        value64 = float(ns.f(jnp.asarray(np.asarray(ns.args[0], np.float64))))
    assert abs(value64 - value32) > 0.05 * max(1.0, abs(value32))
    path = tmp_path / "dropout.py"
    path.write_text(DROPOUT)
    proc = run_cli("run", "transpose", str(path), "--print", "fd_check")
    assert proc.returncode == 0, proc.stderr  # no GradientMismatch about the wrong function
    check = json.loads(proc.stdout)
    assert check["verdict"] == "incomplete" and check["disagree_count"] == 0
    assert check["headline"].startswith("Not checked: f's value at args is")
    assert f"{value32:.6g} in float32 but {value64:.6g} in float64" in check["headline"]


# A map that forgets its input: each iteration multiplies the derivative by cos(x) * 1e-20, so
# after 20 the gradient is far under the smallest float64 (5e-324) and f(x ± h) is 1 + 20 * 1e-20
# rounded: the same float64 for every x (the loop_20k example does this in 5,000 gentler steps).
FORGETFUL = """
import jax.numpy as jnp
import numpy as np

ITERATIONS = {iterations}


def f(x):
    for _ in range(ITERATIONS):
        x = jnp.sin(x) * 1e-20 + 1.0
    return jnp.sum(x)


args = (np.linspace(0.1, 2.0, 4, dtype=np.float32),)
"""


def _forgetful_numpy(x: np.ndarray, iterations: int) -> float:
    for _ in range(iterations):
        x = np.sin(x) * 1e-20 + 1.0
    return float(np.sum(x))


def test_an_agreement_between_zeros_says_the_gradient_vanishes() -> None:
    from exhibits.conftest import run_probe
    from exhibits.transpose.events import GradientChecked

    source = FORGETFUL.format(iterations=20)
    snippet = load_snippet(source)
    x = np.asarray(snippet.args[0])
    # the truth: jax.grad in float32 and float64, and numpy's central differences in float64
    assert not np.any(np.asarray(jax.grad(snippet.f)(x)) != 0)
    with jax.enable_x64(True):
        g64 = np.asarray(jax.grad(snippet.f)(np.asarray(x, np.float64)))
    assert g64.dtype == np.float64 and not np.any(g64 != 0)
    x64 = np.asarray(x, np.float64)
    for i in range(x.size):
        for h in (6e-6, 2**-7):
            e = np.zeros(x.size)
            e[i] = h * max(1.0, abs(x64[i]))
            assert _forgetful_numpy(x64 + e, 20) == _forgetful_numpy(x64 - e, 20)
    check = run_probe("transpose", source).one(GradientChecked)
    assert check.verdict == "agree" and check.checked == 4 and check.all_zero
    assert [leaf.max_abs for leaf in check.leaves] == [0.0]
    assert check.headline == (
        "The gradient agrees with the float64 finite differences at every element (4), within "
        "float32 precision: every element of the gradient and of the finite difference is 0 — "
        "f is flat at these inputs at float64 precision (a stationary point, or a vanishing "
        "gradient: an underflow, a map that forgets its input)."
    )


def test_an_agreement_that_is_not_all_zero_keeps_its_headline() -> None:
    from exhibits.conftest import run_probe
    from exhibits.transpose.events import GradientChecked

    # one iteration of sin(x) * 0.5 + 1: the derivative 0.5 * cos(x), nowhere 0 on [0.1, 2]
    source = FORGETFUL.format(iterations=1).replace("1e-20", "0.5")
    snippet = load_snippet(source)
    g = np.asarray(jax.grad(snippet.f)(np.asarray(snippet.args[0])))
    assert np.all(g != 0)
    check = run_probe("transpose", source).one(GradientChecked)
    assert check.verdict == "agree" and not check.all_zero
    assert check.headline == (
        "The gradient agrees with the float64 finite differences at every element (4), within "
        "float32 precision."
    )
