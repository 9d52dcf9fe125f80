"""A matrix product whose contracted axes differ in size (JAX: "dot_general requires contracting
dimensions to have the same shape") gets a why that names both operands' shapes and the sizes,
and only fixes the shapes allow (issue 33 audit, class 7: UE01 printed no why/fix). Truth: the
matmul shape rule is numpy's (``np.matmul`` on arrays of those shapes), and every printed fix,
written into the snippet in place of the product, makes plain JAX run."""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import numpy as np
import pytest
from jaxscope.dot_errors import Product, fixes, matmul_shape
from jaxscope.explainers import ErrorContext, explain
from jaxscope.sandbox.errors import classify
from jaxscope.sandbox.snippet import load_snippet

from testkit import run_cli

DOT = "jaxscope.dot_errors.dot_general_shapes"
HEAD = "import jax, jax.numpy as jnp\nfrom jax import lax\n"


def _numpy_matmul(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
    try:
        return tuple(np.matmul(np.ones(a), np.ones(b)).shape)
    except ValueError:
        return None


def test_the_matmul_shape_rule_is_numpys() -> None:
    shapes = [(3,), (2,), (2, 3), (3, 2), (3, 3), (4, 2, 3), (1, 3, 2), (5, 1, 3, 2), (4, 3, 4)]
    for a, b in itertools.product(shapes, repeat=2):
        assert matmul_shape(a, b) == _numpy_matmul(a, b), (a, b)


def _jit(s: Any) -> Any:
    return jax.jit(s.f)(*s.args)


def _vmap_rows(s: Any) -> Any:
    return jax.vmap(s.f, in_axes=(0, None))(*s.args)


def _failed(code: str, call: Callable[[Any], Any]) -> tuple[str, str]:
    snippet = load_snippet(HEAD + code)
    with pytest.raises(TypeError, match="dot_general requires") as info:
        call(snippet)
    found = explain(info.value, ErrorContext(stage="trace", f=snippet.f))
    assert found is not None and found[0] == DOT
    failed = classify(info.value, "trace", snippet.f)
    assert failed.explanation == found[1].explanation and failed.fix == found[1].fix
    assert failed.explanation is not None and failed.fix is not None
    return failed.explanation, failed.fix


def _offered(fix: str) -> list[str]:
    """The rewritten products a fix offers (its backticked code with an ``@``)."""
    return list(dict.fromkeys(c for c in re.findall(r"`([^`]+)`", fix) if "@" in c))


# code (f's product on one line), the call, the product as written, the operands' shapes as
# the why must name them, the fixes that must be offered
CASES = [
    (  # UE01's shape: a vector times an (out, in) weight, per example under vmap
        "def f(x, w):\n    return x @ w\nargs = (jnp.ones((8, 3)), jnp.ones((2, 3)))\n",
        _vmap_rows,
        "x @ w",
        ("(3,)", "(2, 3)"),
        ["x @ w.T", "w @ x"],
    ),
    (  # a PyTorch nn.Linear weight (out, in) as a Dense kernel (UE05)
        "def f(x, kernel):\n    return jnp.dot(x, kernel)\n"
        "args = (jnp.ones((2, 3)), jnp.ones((4, 3)))\n",
        _jit,
        "jnp.dot(x, kernel)",
        ("(2, 3)", "(4, 3)"),
        ["x @ kernel.T"],
    ),
    (  # the left operand transposed: x.T @ y
        "def f(x, y):\n    return x @ y\nargs = (jnp.ones((5, 2)), jnp.ones((5, 3)))\n",
        _jit,
        "x @ y",
        ("(5, 2)", "(5, 3)"),
        ["x.T @ y"],
    ),
    (  # images not flattened before the dense layer
        "def f(img, w):\n    return jnp.tanh(img @ w)\n"
        "args = (jnp.ones((8, 4, 7)), jnp.ones((28, 10)))\n",
        _jit,
        "img @ w",
        ("(8, 4, 7)", "(28, 10)"),
        ["img.reshape(*img.shape[:-2], -1) @ w"],
    ),
    (  # the second of two products on one line, of dict entries
        "def f(p, x):\n    h = x @ p['w1'] @ p['w2']\n    return h\n"
        "args = ({'w1': jnp.ones((3, 4)), 'w2': jnp.ones((5, 4))}, jnp.ones((2, 3)))\n",
        _jit,
        "x @ p['w1'] @ p['w2']",
        ("(2, 4)", "(5, 4)"),
        ["(x @ p['w1']) @ p['w2'].T"],
    ),
    (  # the operands the wrong way round: no single transpose fits, b @ a does (issue 33
        # audit: this was "no transpose ... lines up equal sizes")
        "def f(a, b):\n    return a @ b\nargs = (jnp.ones((3, 4)), jnp.ones((5, 3)))\n",
        _jit,
        "a @ b",
        ("(3, 4)", "(5, 3)"),
        ["b @ a", "a.T @ b.T"],
    ),
    (  # the same with a batch axis
        "def f(a, b):\n    return a @ b\nargs = (jnp.ones((2, 3, 4)), jnp.ones((2, 5, 3)))\n",
        _jit,
        "a @ b",
        ("(2, 3, 4)", "(2, 5, 3)"),
        ["b @ a", "a.mT @ b.mT"],
    ),
]


@pytest.mark.parametrize(
    ("code", "call", "product", "shapes", "wanted"), CASES, ids=[c[2] for c in CASES]
)
def test_the_why_names_the_shapes_and_every_fix_runs(
    code: str,
    call: Callable[[Any], Any],
    product: str,
    shapes: tuple[str, str],
    wanted: list[str],
) -> None:
    why, fix = _failed(code, call)
    left, right = shapes
    assert f"shape {left}" in why and f"shape {right}" in why, why
    offered = _offered(fix)
    assert offered == wanted, fix
    for rewrite in offered:
        # the fix, written where the product was: plain JAX runs it
        snippet = load_snippet(HEAD + code.replace(product, rewrite, 1))
        jax.block_until_ready(call(snippet))  # type: ignore[no-untyped-call]


def test_no_fix_is_offered_when_no_transpose_fits() -> None:
    why, fix = _failed(
        "def f(x, w):\n    return x @ w\nargs = (jnp.ones((2, 3)), jnp.ones((4, 5)))\n", _jit
    )
    assert "shape (2, 3)" in why and "shape (4, 5)" in why
    assert _offered(fix) == [] and "wrong size" in fix
    for a, b in [((3, 2), (4, 5)), ((2, 3), (5, 4))]:  # the transposes numpy refuses too
        assert _numpy_matmul(a, b) is None


def _transposes(x: tuple[int, ...]) -> list[tuple[int, ...]]:
    return [x] if len(x) < 2 else [x, (*x[:-2], x[-1], x[-2])]


def test_wrong_size_is_said_only_when_no_transpose_or_order_fits() -> None:
    """ "No transpose or reshape fits" holds by numpy: neither operand order of any transposes
    of the two multiplies (the claim was made for (3, 4) @ (5, 3), which b @ a fixes)."""
    shapes = [(3,), (4,), (3, 4), (5, 3), (4, 5), (2, 3), (2, 3, 4), (2, 5, 3), (3, 5, 4)]
    for a, b in itertools.product(shapes, repeat=2):
        if _numpy_matmul(a, b) is not None:
            continue
        p = Product("a", "b", a, b)
        fits = [
            (x, y)
            for ta, tb in itertools.product(_transposes(a), _transposes(b))
            for x, y in ((ta, tb), (tb, ta))
            if _numpy_matmul(x, y) is not None
        ]
        assert fixes(p) or not fits, (a, b, fits)  # "no rewrite fits" only when none does
        for fix in fixes(p):
            assert _numpy_matmul(fix.left_shape, fix.right_shape) == fix.result


def test_an_n_d_dot_is_not_explained_as_matmul() -> None:
    """``jnp.dot`` of a 3-d operand pairs no batch axes: (2, 3, 4) dot (3, 5, 4) transposed fits
    (plain JAX: (2, 3, 3, 5)), so the handler must not say no transpose fits, nor offer an
    ``@`` rewrite of a different product; it names the sizes only."""
    code = (
        "def f(a, b):\n    return jnp.dot(a, b)\n"
        "args = (jnp.ones((2, 3, 4)), jnp.ones((3, 5, 4)))\n"
    )
    why, fix = _failed(code, _jit)
    assert "sizes (4,)" in why and "(5,)" in why
    assert "wrong size" not in fix and "No transpose" not in why
    snippet = load_snippet(HEAD + code.replace("jnp.dot(a, b)", "jnp.dot(a, b.mT)"))
    assert _jit(snippet).shape == (2, 3, 3, 5)


def test_a_product_it_cannot_read_gets_the_sizes_from_the_message() -> None:
    # the operands come from a call: the handler does not run it again, and names the sizes
    why, fix = _failed(
        "def g(n):\n    return jnp.ones((n, 3))\n"
        "def f(x):\n    return g(2) @ g(x.shape[0])\nargs = (jnp.ones(4),)\n",
        _jit,
    )
    assert "sizes (3,)" in why and "(4,)" in why
    assert "x @ w.T" in fix  # advice in words, no rewrite of the user's code


def test_batch_axes_that_differ_are_explained() -> None:
    why, fix = _failed(
        "def f(a, b):\n    return lax.dot_general(a, b, (((2,), (1,)), ((0,), (0,))))\n"
        "args = (jnp.ones((4, 2, 3)), jnp.ones((5, 3, 2)))\n",
        _jit,
    )
    assert "batch axes" in why and "(4,)" in why and "(5,)" in why
    assert "dimension_numbers" in fix


# ---- per-example operands under jax.vmap (issue 33 audit, class 7: a wrong in_axes was told
# "one of the operands has the wrong size ... a wrong `features` argument") -------------------

V1 = (  # /tmp/breakit33/v1.py: f(x, w) runs; vmap over x's axis 1 gives each example (8,)
    "def f(x, w):\n    return x @ w\n"
    "x = jnp.ones((8, 3))\nw = jnp.ones((3, 2))\nargs = (x, w)\nin_axes = (1, None)\n"
)


def _vmap(in_axes: Any) -> Callable[[Any], Any]:
    return lambda s: jax.vmap(s.f, in_axes=in_axes)(*s.args)


def _in_axes_offered(fix: str) -> list[str]:
    return re.findall(r"`in_axes=([^`]+)`", fix)


def test_a_wrong_in_axes_gets_the_in_axes_that_makes_the_product_run() -> None:
    why, fix = _failed(V1, _vmap((1, None)))
    assert "`x` has shape (8,) per example" in why and "axis 1 of the argument `x`" in why
    assert "whole shape is (8, 3)" in why and "`w` has shape (3, 2) (not mapped" in why
    assert "wrong size" not in fix and "features" not in fix
    assert _in_axes_offered(fix) == ["(0, None)"]
    snippet = load_snippet(HEAD + V1)
    out = _vmap((0, None))(snippet)  # the printed in_axes, in plain JAX
    np.testing.assert_allclose(out, np.ones((8, 3)) @ np.ones((3, 2)))
    assert "(3,) @ (3, 2), which gives (2,)" in fix


def test_an_in_axes_is_offered_only_when_the_mapped_sizes_agree() -> None:
    """Mapping x over axis 0 would make its batch 8 against y's 3: jax.vmap refuses that, so
    no in_axes is offered (and no transpose fits: the per-example wording, not 'features')."""
    code = (
        "def f(x, w, y):\n    return x @ w + y\n"
        "args = (jnp.ones((8, 3)), jnp.ones((3, 2)), jnp.ones((3,)))\n"
    )
    why, fix = _failed(code, _vmap((1, None, 0)))
    assert "per example" in why and _in_axes_offered(fix) == [] and "features" not in fix
    assert "in_axes" in fix and "per-example" in fix
    with pytest.raises(ValueError, match="inconsistent sizes"):
        _vmap((0, None, 0))(load_snippet(HEAD + code))


def test_a_reassigned_parameter_gets_no_in_axes() -> None:
    # `x` in f is no longer the argument jax.vmap mapped: no in_axes is computed for it
    code = (
        "def f(x, w):\n    x = x * 2\n    return x @ w\n"
        "args = (jnp.ones((8, 3)), jnp.ones((3, 2)))\n"
    )
    why, fix = _failed(code, _vmap((1, None)))
    assert "per example" in why and _in_axes_offered(fix) == []
    assert "a batch of shape (8, 3) that `jax.vmap` maps over its axis 1" in why


def test_the_in_axes_fix_holds_under_grad_inside_vmap() -> None:
    code = "def f(x, w):\n    return (x @ w).sum()\nargs = (jnp.ones((8, 3)), jnp.ones((3, 2)))\n"

    def per_example_grads(in_axes: Any) -> Callable[[Any], Any]:
        return lambda s: jax.vmap(jax.grad(s.f), in_axes=in_axes)(*s.args)

    why, fix = _failed(code, per_example_grads((1, None)))
    assert "per example" in why and _in_axes_offered(fix) == ["(0, None)"]
    grads = per_example_grads((0, None))(load_snippet(HEAD + code))
    np.testing.assert_allclose(grads, np.full((8, 3), 2.0))  # d/dx sum(x @ ones(3, 2))


def test_an_nnx_linear_of_another_input_size_names_in_features() -> None:
    pytest.importorskip("flax")
    code = (
        "from flax import nnx\nmodel = nnx.Linear(4, 2, rngs=nnx.Rngs(0))\n"
        "def f(x):\n    return model(x).sum()\nargs = (jnp.ones((8, 3)),)\n"
    )
    why, fix = _failed(code, _jit)
    assert "in_features=4" in why and "shape (8, 3)" in why and "last axis is 3" in why
    assert "in_features=3" in fix and ".T" not in fix
    fixed = load_snippet(HEAD + code.replace("nnx.Linear(4, 2", "nnx.Linear(3, 2"))
    assert float(_jit(fixed)) == pytest.approx(float(fixed.f(*fixed.args)))


def test_the_cli_on_a_wrong_in_axes(tmp_path: Path) -> None:
    path = tmp_path / "v1.py"
    path.write_text(HEAD + V1)
    run = run_cli("run", "vmap", str(path))
    assert run.returncode != 0
    assert "per example" in run.stdout + run.stderr
    fix = next(line for line in (run.stdout + run.stderr).splitlines() if "fix:" in line)
    assert _in_axes_offered(fix) == ["(0, None)"] and "features" not in fix
    path.write_text(HEAD + V1.replace("in_axes = (1, None)", "in_axes = (0, None)"))
    assert run_cli("run", "vmap", str(path)).returncode == 0  # the printed fix, applied
    path.write_text(HEAD + V1)  # the tracing exhibit does not vmap: f(x, w) runs as in plain JAX
    assert run_cli("run", "tracing", str(path)).returncode == 0
