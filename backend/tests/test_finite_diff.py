"""Finite differences against closed-form derivatives and ``jax.grad`` in float64; the comparison
at dtype precision against differences worked out by hand."""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jaxscope.finite_diff import (
    central_differences,
    compare,
    max_abs_diff,
    max_abs_diff_leaves,
    tolerance,
)


def test_sin_times_x_matches_closed_form() -> None:
    fd = central_differences(lambda x: jnp.sin(x) * x, (1.0,), [0])
    assert abs(float(fd.values[0]) - (math.cos(1.0) + math.sin(1.0))) < 1e-9
    assert len(fd.nested()) == 1
    assert abs(fd.nested()[0] - 1.3817732906760363) < 1e-9


def test_pytree_argument_matches_jax_grad_in_float64() -> None:
    def f(p: dict[str, jax.Array], x: jax.Array) -> jax.Array:
        return jnp.sum(jnp.tanh(x @ p["w"] + p["b"]) ** 2)

    rng = np.random.default_rng(0)
    p = {"w": rng.standard_normal((3, 2)).astype(np.float32), "b": np.zeros(2, np.float32)}
    x = rng.standard_normal((4, 3)).astype(np.float32)
    fd = central_differences(f, (p, x), [0, 1])
    with jax.enable_x64(True):
        p64 = jax.tree.map(lambda a: np.asarray(a, np.float64), p)
        g = jax.grad(f, argnums=(0, 1))(p64, np.asarray(x, np.float64))
    for got, want in zip(jax.tree.leaves(fd.values), jax.tree.leaves(g), strict=True):
        np.testing.assert_allclose(got, np.asarray(want), rtol=1e-7, atol=1e-9)
    assert all(bool(np.all(k)) for k in jax.tree.leaves(fd.known))


def test_kinks_are_none_and_int_leaves_are_skipped() -> None:
    def f(x: jax.Array, n: jax.Array) -> jax.Array:
        return jnp.sum(jnp.where(x > 0, jnp.sqrt(jnp.abs(x)), 0.0)) * n

    fd = central_differences(f, (np.array([-1.0, 0.0, 4.0], np.float32), np.int32(1)), [0])
    assert fd.nested() == [[0.0, None, fd.nested()[0][2]]]
    assert abs(fd.nested()[0][2] - 0.25) < 1e-8


def test_python_control_flow_falls_back_to_eager() -> None:
    def f(x: float) -> float:
        return x**2 if x > 0 else -x

    fd = central_differences(f, (3.0,), [0])
    assert abs(float(fd.values[0]) - 6.0) < 1e-8


def test_bfloat16_and_float16_leaves_are_floating() -> None:
    """JAX differentiates bfloat16/float16 leaves: so do the finite differences (in float64)."""
    from jaxscope.finite_diff import is_float_leaf

    assert is_float_leaf(jnp.ones(2, jnp.bfloat16)) and is_float_leaf(np.ones(2, np.float16))
    assert not is_float_leaf(np.ones(2, np.int32)) and not is_float_leaf(jnp.ones(2, bool))
    fd = central_differences(lambda x: jnp.sum(x**2), (jnp.array([1.0, 2.0], jnp.bfloat16),), [0])
    np.testing.assert_allclose(fd.values[0], [2.0, 4.0], rtol=1e-8)


def test_a_huge_argument_is_sampled_by_work_and_still_right() -> None:
    from jaxscope.finite_diff import MAX_ELEMENTS, MIN_SAMPLES, sample_count

    assert sample_count(100, 100) == 100
    assert sample_count(10_000, 10_000) == MAX_ELEMENTS
    assert sample_count(16_000_000, 16_000_000) == MIN_SAMPLES
    x = np.linspace(-1.0, 1.0, 600 * 600).reshape(600, 600).astype(np.float32)

    def f(a: Any) -> Any:
        return jnp.sum(jnp.sin(a) * a)

    fd = central_differences(f, [x], [0])
    known = np.asarray(fd.known[0])
    values = np.asarray(fd.values[0])
    # Sampled evenly (first and last element included), each against the exact derivative.
    assert 0 < known.sum() <= MAX_ELEMENTS and known.flat[0] and known.flat[-1]
    x64 = x.astype(np.float64)
    exact = np.cos(x64) * x64 + np.sin(x64)
    # f sums 360,000 terms (~1e5): the rounding error of the differences is ~eps * |f| / h.
    np.testing.assert_allclose(values[known], exact[known], rtol=1e-4, atol=1e-5)


def test_a_sample_with_per_leaf_takes_a_few_of_every_leaf() -> None:
    from jaxscope.finite_diff import _positions

    sizes = [800, 1, 800, 7]
    args = [[np.zeros(s) for s in sizes]]
    total = sum(sizes)
    # per_leaf=0: the even spread alone, as numpy's linspace puts it (the 1-element leaf at
    # flat position 800 falls between two picks)
    even = _positions(args, [0], 512)
    starts = np.cumsum([0, *sizes])
    flat = [int(starts[j]) + i for _, j, i in even]
    assert flat == np.unique(np.linspace(0, total - 1, 512).round()).astype(int).tolist()
    assert 1 not in {j for _, j, _ in even}
    # per_leaf=4: every leaf has min(size, 4), first and last element among them; 512 in all
    got = _positions(args, [0], 512, per_leaf=4)
    assert len(got) == len(set(got)) == 512
    for j, size in enumerate(sizes):
        mine = sorted(i for _, leaf, i in got if leaf == j)
        assert len(mine) >= min(size, 4) and mine[0] == 0 and mine[-1] == size - 1
    # fewer samples than leaves: no per-leaf share (the work bound wins), n still honoured
    few = _positions([[np.zeros(10) for _ in range(50)]], [0], 20, per_leaf=4)
    assert len(few) == 20


def test_tolerance_follows_the_dtype() -> None:
    assert tolerance(np.float64) == 1e-6 and tolerance(np.float32) == 1e-4
    assert tolerance(jnp.bfloat16) == 1e-2 and tolerance(np.float16) == 1e-2


def test_compare_scales_the_tolerance_by_the_reference() -> None:
    ref = np.array([0.5, 100.0, -3.0])
    # 1e-4 * max(1, |ref|): 1e-4, 1e-2, 3e-4 allowed; the differences are 5e-5, 9e-3, 2e-4.
    got = ref + np.array([5e-5, 9e-3, -2e-4])
    diff, ok = compare(got, ref, None, 1e-4)
    assert ok and diff is not None and abs(diff - 9e-3) < 1e-12
    diff, ok = compare(got, ref, None, 1e-6)
    assert not ok and diff is not None and abs(diff - 9e-3) < 1e-12
    # A scalar actual is broadcast to the reference's shape.
    assert compare(1.0, np.ones(3), None, 1e-6) == (0.0, True)


def test_compare_nonfinite_and_masks() -> None:
    nan, inf = float("nan"), float("inf")
    # NaN on both sides, the same infinity on both: equal; the rest compared.
    assert compare([nan, inf, 1.0], [nan, inf, 1.5], None, 1e-4) == (0.5, False)
    # One side only: unbounded.
    assert compare([nan, 1.0], [1.0, 1.0], None, 1e-4) == (None, False)
    assert compare([inf], [-inf], None, 1e-4) == (None, False)
    # Only the known elements count (a kink's NaN difference is not compared).
    assert compare([1.0, 7.0], [1.0, nan], [True, False], 1e-4) == (0.0, True)
    # Nothing compared: nothing known, or nothing at all.
    assert compare([1.0], [2.0], [False], 1e-4) == (None, True)
    assert compare(np.zeros(0), np.zeros(0), None, 1e-4) == (None, True)
    # Only equal non-finite pairs: within, difference 0.
    assert compare([nan], [nan], None, 1e-4) == (0.0, True)


def test_max_abs_diff_over_arrays_and_pytrees() -> None:
    nan = float("nan")
    assert max_abs_diff(np.array([1.0, 2.0, nan]), np.array([1.5, 1.0, nan])) == 1.0
    assert max_abs_diff([1.0, nan], [1.0, 2.0]) is None
    assert max_abs_diff(np.float32(1.0), np.float32(1.0)) == 0.0
    a = {"w": np.array([[1.0, 2.0]], np.float32), "b": np.float32(3.0)}
    b = {"w": np.array([[1.0, 2.25]], np.float32), "b": np.float32(2.0)}
    assert max_abs_diff_leaves(a, b) == 1.0
    assert max_abs_diff_leaves(a, {**b, "b": np.float32(nan)}) is None


# ---- element statuses: flat, rounded inside, a kink near x, the step of a narrow f -------------


def _status(fd: Any) -> list[str]:
    from jaxscope.finite_diff import STATUS_NAMES

    return [STATUS_NAMES[int(s)] for s in np.asarray(jax.tree.leaves(fd.status)[0]).ravel()]


def test_an_element_f_does_not_depend_on_is_flat_with_difference_0() -> None:
    fd = central_differences(lambda x: jnp.sin(x[0]), (np.array([0.5, 3.0], np.float32),), [0])
    assert _status(fd) == ["smooth", "flat"]
    assert abs(float(fd.values[0][0]) - math.cos(0.5)) < 1e-9 and float(fd.values[0][1]) == 0.0
    assert np.asarray(fd.known[0]).tolist() == [True, True]


def test_an_input_rounded_to_bfloat16_inside_is_not_differenced() -> None:
    """A float32 leaf cast to bfloat16 inside f (a bfloat16 compute dtype): widened to float64,
    f still rounds it, so no difference can check a gradient at bfloat16's precision."""

    def f(x: jax.Array) -> jax.Array:
        return jnp.sum(x.astype(jnp.bfloat16).astype(jnp.float32) ** 2)

    x = np.array([0.3, 1.7, 0.0], np.float32)
    # plain numpy: at float64's step the rounded input does not move, f is flat
    h = 6e-6
    assert float(f(jnp.asarray(x[:1] + h))) == float(f(jnp.asarray(x[:1])))
    fd = central_differences(f, (x,), [0])
    assert fd.dtype == "bfloat16"
    # x = 0 is a bfloat16 value whose neighbours are all small: f moves, so still rounded
    assert _status(fd) == ["rounded", "rounded", "rounded"]
    assert not np.asarray(fd.known[0]).any()


def test_a_float32_result_sets_a_float32_step() -> None:
    """f casts its result to float32: its differences are only float32-precise, so the step is
    cbrt(eps32) * max(1, |x|), and the derivative is still right to ~1e-5."""

    def f(x: jax.Array) -> jax.Array:
        return jnp.sum(jnp.sin(x)).astype(jnp.float32)

    fd = central_differences(f, (np.array([0.5, 2.0]),), [0])
    assert fd.dtype == "float32"
    eps32 = float(np.finfo(np.float32).eps)
    steps = np.asarray(fd.steps[0]) if fd.steps is not None else None
    assert steps is not None
    np.testing.assert_allclose(steps, [eps32 ** (1 / 3), 2 * eps32 ** (1 / 3)], rtol=1e-12)
    np.testing.assert_allclose(fd.values[0], np.cos([0.5, 2.0]), atol=3e-5)
    assert _status(fd) == ["smooth", "smooth"]


def test_a_kink_just_past_x_is_stepped_around() -> None:
    """relu(x - c) with the kink c 2e-6 past x = 1: at the usual step (6e-6) the difference
    straddles it (0.33); 16 times closer it does not, and the derivative there is 0."""
    c = 1.0 + 2e-6

    def f(x: jax.Array) -> jax.Array:
        return jnp.sum(jax.nn.relu(x - c))

    fd = central_differences(f, (np.array([1.0]),), [0])
    assert _status(fd) == ["smooth"] and float(fd.values[0][0]) == 0.0
    # and a kink at x itself stays a kink
    fd = central_differences(lambda x: jnp.sum(jax.nn.relu(x - 1.0)), (np.array([1.0]),), [0])
    assert _status(fd) == ["kink"]


def test_narrowest_float_reads_inner_jaxprs_and_tolerances() -> None:
    from jaxscope.finite_diff import gradient_tolerance, narrower, narrowest_float

    @jax.jit
    def inner(x: jax.Array) -> jax.Array:
        return (x.astype(jnp.bfloat16) * 2).astype(jnp.float32)

    closed = jax.make_jaxpr(lambda x: jnp.sum(inner(x)))(np.ones(3, np.float32))
    assert str(narrowest_float(closed)) == "bfloat16"  # inside the jit's jaxpr
    assert str(narrowest_float(jax.make_jaxpr(jnp.sin)(np.float32(1.0)))) == "float32"
    assert narrowest_float(jax.make_jaxpr(lambda x: x)(np.float32(1.0))) is None
    assert str(narrower(jnp.float16, jnp.bfloat16)) == "bfloat16"
    assert str(narrower(np.float32, np.float16)) == "float16"
    assert gradient_tolerance(np.float32) == 1e-4 and gradient_tolerance(np.float16) == 1e-2
    assert (
        gradient_tolerance(jnp.bfloat16) == 8 * 2.0**-7 and gradient_tolerance(np.float64) == 1e-6
    )


def test_a_perturbed_call_reuses_device_leaves_and_gives_the_same_values() -> None:
    """``_Evaluator`` keeps device copies of the unperturbed leaves (made on the first call) and
    passes only the changed leaf from the host, or makes it on the device from its copy with the
    one element set: every value equals the all-host call's, and a perturbation undone in place
    does not reach the copies."""
    from jaxscope.finite_diff import _Evaluator

    def fun(p: dict[str, Any], x: Any) -> Any:
        return jnp.sum(jnp.tanh(x @ p["w"] + p["b"]) ** 2) + jnp.sum(p["s"] * x)

    rng = np.random.default_rng(1)
    with jax.enable_x64(True):
        p = {"w": rng.standard_normal((3, 4)), "b": rng.standard_normal(4), "s": np.float64(0.5)}
        x = rng.standard_normal((2, 3))
        ev = _Evaluator(fun, [p, x])
        leaves = [[np.array(v, copy=True) for v in jax.tree.leaves(p)]]
        f0 = ev([0], leaves)
        assert ev.device is not None and len(ev.device[0]) == 3
        for j, leaf in enumerate(leaves[0]):
            flat = leaf.reshape(-1)
            old = float(flat[0])
            flat[0] = old + 1e-3
            device = ev([0], leaves, changed=(0, j))
            # the changed leaf made on the device from its copy, the element set there
            on_device = ev([0], leaves, changed=(0, j), element=(0, old + 1e-3))
            host = ev([0], leaves)
            flat[0] = old
            assert device == on_device == host != f0
        # The copies still hold the unperturbed values: f is f0 again.
        assert ev([0], leaves, changed=(0, 0)) == f0
