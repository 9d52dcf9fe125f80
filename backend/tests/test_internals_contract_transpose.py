"""Contract tests: every private JAX name ``jaxscope.internals.transpose_walk`` relies on (and the
error texts ``exhibits.transpose.explain.ad_help`` recognises) still exists and behaves as
assumed in jax 0.10.2. A JAX upgrade that changes one of them fails here, loudly, before the
exhibit breaks."""

from __future__ import annotations

import inspect
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax
from jax._src import api as _api
from jax._src import core, dtypes
from jax._src.interpreters import ad as _ad
from jax._src.interpreters import partial_eval as pe
from jax._src.lax import lax as _lax_internal
from jax._src.state.types import AbstractRef
from jax._src.tree_util import FlatTree
from jaxscope.internals.transpose_walk import linearize_vjp, seed_cotangents, walk

from exhibits.transpose.explain import ad_help

# JAX's private modules are untyped: read them as Any (this file is mypy strict).
ad: Any = _ad
api: Any = _api
lax_internal: Any = _lax_internal


def test_linearize_signature_and_result() -> None:
    params = list(inspect.signature(ad.linearize).parameters)
    assert params == ["traceable", "primals_ft", "has_aux", "is_vjp"]
    primals = FlatTree.flatten((jnp.ones(3),))
    out_ft, out_known, jaxpr, residuals = ad.linearize(
        lambda x: jnp.sum(jnp.sin(x)), primals, is_vjp=True
    )
    assert isinstance(jaxpr, core.Jaxpr) and len(jaxpr.constvars) == len(residuals)
    assert len(jaxpr.invars) == 1 and list(out_known) == [False]
    assert len(list(out_ft)) == 1


def test_jax_vjp_still_uses_linearize_and_backward_pass3() -> None:
    src = inspect.getsource(api.vjp) + inspect.getsource(api._vjp3_bwd)
    assert "ad.linearize(" in src and "is_vjp=True" in src
    assert "ad.backward_pass3(jaxpr, True, residuals, maybe_accums, cts_flat)" in src
    assert "canonicalize_value" in src
    assert callable(dtypes.canonicalize_value)


def test_backward_pass3_shape_we_mirror() -> None:
    src = inspect.getsource(ad.backward_pass3)
    for fragment in (
        "fancy_transposes[eqn.primitive]",
        "get_primitive_transpose(eqn.primitive)",
        "UndefinedPrimal(x.aval) if isinstance(x, GradAccum)",
        "ValAccum(v.aval.to_ct_aval())",
        "lin_eqns[::-1]",
        "eqn.primitive.call_primitive",
        "_name_stack_ctx(eqn.source_info)",
        "transform_name_stack('transpose')",
    ):
        assert fragment in src, fragment
    assert list(inspect.signature(ad.backward_pass3).parameters) == [
        "jaxpr",
        "transform_stack",
        "consts",
        "primals_in",
        "cotangents_in",
    ]


def test_accumulators_zero_undefined_primal_add_tangents() -> None:
    aval = core.ShapedArray((2,), np.float32)
    acc = ad.ValAccum(aval)
    assert type(acc.val) is ad.Zero and type(acc.freeze()) is ad.Zero
    acc.accum(jnp.ones(2, np.float32))
    acc.accum(jnp.ones(2, np.float32))
    np.testing.assert_array_equal(acc.freeze(), [2.0, 2.0])
    assert issubclass(ad.ValAccum, ad.GradAccum) and issubclass(ad.RefAccum, ad.GradAccum)
    assert ad.is_undefined_primal(ad.UndefinedPrimal(aval))
    assert ad.UndefinedPrimal(aval).aval is aval
    z = ad.Zero(aval)
    one = jnp.ones(2, np.float32)
    assert ad.add_tangents(z, one) is one and ad.add_tangents(one, z) is one
    np.testing.assert_array_equal(ad.instantiate_zeros(z), [0.0, 0.0])
    for name in ("ref_p", "empty_ref_p", "freeze_p", "accum_grad_in_ref_p"):
        assert hasattr(core, name), name


def test_a_new_ref_has_an_abstract_ref_aval() -> None:
    # transpose_walk._ForwardHalf reads ref_p/empty_ref_p outvars as AbstractRef (.inner_aval).
    # Unannotated in JAX: called through Any.
    new_ref: Any = core.new_ref
    empty_ref: Any = core.empty_ref
    sds: Any = jax.ShapeDtypeStruct

    def f(x: jax.Array) -> Any:
        ref = new_ref(x)
        empty_ref(sds((2,), jnp.float32))
        return ref[...]

    eqns = jax.make_jaxpr(f)(jnp.ones(2, jnp.float32)).jaxpr.eqns
    made = [e.outvars[0].aval for e in eqns if e.primitive in (core.ref_p, core.empty_ref_p)]
    assert len(made) == 2 and all(isinstance(a, AbstractRef) for a in made)
    assert all(a.inner_aval == core.ShapedArray((2,), jnp.float32) for a in made)


def test_rule_tables() -> None:
    assert isinstance(ad.fancy_transposes, dict) and isinstance(ad.primitive_transposes, dict)
    names = {p.name for p in ad.fancy_transposes}
    assert {"mul", "jit", "scan", "cond", "dot_general"} <= names
    assert lax.sin_p not in ad.primitive_transposes  # non-linear: only a JVP
    assert "custom_lin" in {p.name for p in ad.primitive_transposes}
    with pytest.raises(NotImplementedError, match=r"Transpose rule .* for 'sin' not implemented"):
        ad.get_primitive_transpose(lax.sin_p)


def test_linearize_hooks_we_wrap() -> None:
    for name in ("process_primitive", "process_custom_jvp_call", "process_custom_vjp_call"):
        assert name in ad.LinearizeTrace.__dict__, name
    params = list(inspect.signature(pe.inline_jaxpr_into_trace).parameters)
    assert params == ["trace", "src", "jaxpr", "consts", "arg_tracers"]
    assert "tracing_eqns" in pe.JaxprStackFrame.__slots__
    assert hasattr(ad._linearize_jaxpr, "cache_clear")
    assert callable(ad._name_stack_ctx)
    assert lax_internal._one_vjp(jnp.float32(2.0)) == 1.0
    with pytest.raises(TypeError, match="Gradient only defined for scalar-output functions"):
        api._check_scalar(jnp.ones(3))
    # jax.grad's output dtype check (seed_cotangents runs it after _check_scalar, as grad does)
    api._check_output_dtype_grad(False, jnp.float32(1.0))
    with pytest.raises(TypeError, match="grad requires real-valued outputs"):
        api._check_output_dtype_grad(False, jnp.complex64(1.0))


def test_walk_equals_jax_grad_bit_for_bit_and_attributes_eqns() -> None:
    def f(x: jax.Array) -> jax.Array:
        return jnp.sum(jnp.where(x > 0, jnp.sqrt(jnp.abs(x)), jnp.sin(x) * x))

    x = jnp.array([-1.0, 0.5, 2.0])
    lin = linearize_vjp(f, (x,))
    result = walk(lin, seed_cotangents(lin))
    np.testing.assert_array_equal(result.cotangents[0], jax.grad(f)(x))
    origins = {s.primal_primitive for s in result.steps}
    assert {"sqrt", "sin"} <= origins


def test_ad_error_texts() -> None:
    def loop(x: jax.Array) -> jax.Array:
        return lax.while_loop(lambda c: c < 10.0, lambda c: c * 2.0, x)

    cases: list[tuple[Any, type[Exception], str]] = [
        (lambda: jax.grad(loop)(1.0), ValueError, "Reverse-mode differentiation does not work"),
        (lambda: jax.grad(jnp.sin)(jnp.ones(3)), TypeError, "Gradient only defined for scalar"),
        (lambda: jax.grad(lambda k: k * 1.0)(3), TypeError, "requires real- or complex-valued"),
    ]
    for thunk, cls, marker in cases:
        with pytest.raises(cls, match=marker) as info:
            thunk()
        assert ad_help(info.value) is not None


# ---- descending into jit and scan steps (the nan_finder) --------------------------------------


def test_jit_and_scan_transposes_run_the_backward_pass_we_open_up() -> None:
    from jax._src import pjit
    from jax._src.lax.control_flow import loops

    jit_src = inspect.getsource(pjit._pjit_transpose_fancy)
    # Under jax_debug_nans JAX re-runs a jit step's backward pass de-optimised, on its body.
    assert "ad.backward_pass3(jaxpr.jaxpr, False, jaxpr.consts, args, cts_in)" in jit_src
    scan_src = inspect.getsource(loops._scan_transpose_fancy)
    assert "ires, consts_dot, carry_dot, xs_dot, eres = split_list(" in scan_src
    assert "reverse=not reverse" in scan_src
    body_src = inspect.getsource(loops)  # _transpose_scan_jaxpr_fancy is a weakref_lru_cache
    assert "ad.backward_pass3(jaxpr.jaxpr, False, jaxpr.consts, primals, ct_carry + ct_ys)" in (
        body_src
    )
    assert _ad.fancy_transposes[pjit.jit_p] is pjit._pjit_transpose_fancy
    assert _ad.fancy_transposes[loops.scan_p] is loops._scan_transpose_fancy


def _steps_of(f: Any, *args: Any) -> tuple[Any, Any]:
    from jaxscope.internals import transpose_walk as tw

    lin = tw.linearize_vjp(f, list(args))
    return lin, tw.walk(lin, tw.seed_cotangents(lin))


def test_a_jit_steps_body_walk_sends_what_the_jit_transpose_sent() -> None:
    from jaxscope.internals import transpose_walk as tw

    @jax.jit
    def norm(v: Any) -> Any:
        return jnp.sqrt(jnp.sum(v * v))

    def f(x: Any) -> Any:
        return norm(x) + jnp.sum(jnp.sin(x))

    lin, result = _steps_of(f, jnp.array([1.0, 2.0, 3.0]))
    (step,) = [r for r in result.steps if r.eqn.primitive.name == "jit"]
    body = tw.inside(lin, step)
    assert body is not None
    inner = tw.walk(body, step.cts_in)
    sent = [np.asarray(w.contribution) for w in step.writes]
    # JAX's compiled jit transpose vs the same pass eagerly: equal to float32 rounding...
    np.testing.assert_allclose([np.asarray(c) for c in inner.cotangents], sent, rtol=1e-6)
    # ...and bit for bit what ad.backward_pass3 gives on the body (JAX's de-optimised path).
    plain = tw.plain_backward_pass(body, step.cts_in)
    assert [np.asarray(c).tobytes() for c in plain] == [
        np.asarray(c).tobytes() for c in inner.cotangents
    ]
    assert {r.primal_primitive for r in inner.steps} >= {"sqrt", "mul"}
    assert tw.inside(lin, next(r for r in result.steps if r.eqn.primitive.name != "jit")) is None


def test_a_scan_steps_body_walks_send_what_the_scan_transpose_sent() -> None:
    from jaxscope.internals import transpose_walk as tw

    def f(x: Any, w: Any) -> Any:
        def body(c: Any, xi: Any) -> Any:
            h = jnp.tanh(c * w + xi)
            return h, jnp.sqrt(xi + 1.0) * h * w

        c, ys = lax.scan(body, w, x)
        return c + jnp.sum(ys)

    x, w = jnp.array([1.0, 0.5, 2.0, -0.5]), jnp.float32(0.3)
    lin, result = _steps_of(f, x, w)
    (step,) = [r for r in result.steps if r.eqn.primitive.name == "scan"]
    scanned = tw.walk_scan_body(lin, step)
    assert scanned is not None and scanned.iteration is None
    sent = [np.asarray(wr.contribution) for wr in step.writes]
    assert len(scanned.cotangents) == len(sent)
    for ours, theirs in zip(scanned.cotangents, sent, strict=True):
        np.testing.assert_allclose(np.asarray(ours), theirs, rtol=1e-5)
    # The whole gradient, from the per-iteration walks, against jax.grad.
    gx = jax.grad(f, argnums=0)(x, w)
    np.testing.assert_allclose(np.asarray(scanned.cotangents[2]), np.asarray(gx), rtol=1e-5)

    # Stopping: the first bad iteration in scan-transpose order (last first).
    def g(xs: Any) -> Any:
        def body(c: Any, xi: Any) -> Any:
            return c + jnp.sqrt(xi), None

        return lax.scan(body, 0.0, xs)[0]

    xs = jnp.array([0.0, 1.0, 0.0, 2.0])
    lin, result = _steps_of(g, xs)
    (step,) = [r for r in result.steps if r.eqn.primitive.name == "scan"]
    stopped = tw.walk_scan_body(
        lin, step, lambda r: any(tw.is_nonfinite(wr.contribution) for wr in r.writes)
    )
    assert stopped is not None and stopped.iteration == 2  # x[2] = 0, reached before x[0]
    assert stopped.result is not None and stopped.result.steps[-1].primal_primitive == "sqrt"
    assert np.isinf(np.asarray(jax.grad(g)(xs))[[0, 2]]).all()


def test_a_cond_steps_taken_branch_walk_sends_what_the_cond_transpose_sent() -> None:
    from jax._src.lax.control_flow import conditionals
    from jaxscope.internals import transpose_walk as tw

    src = inspect.getsource(conditionals._cond_transpose_fancy)
    assert "cond_p.bind(index, *in_flat, branches=(*trans_branches,)" in src
    assert "ad.backward_pass3(jaxpr.jaxpr, False, jaxpr.consts, args, cts_in)" in inspect.getsource(
        conditionals
    )

    def f(x: Any) -> Any:
        return jnp.sum(lax.cond(jnp.sum(x) > 0, lambda v: jnp.sin(v) * v, lambda v: v * v, x))

    for x, branch in ((jnp.array([0.5, 1.0]), 1), (jnp.array([-0.5, -1.0]), 0)):
        lin, result = _steps_of(f, x)
        (step,) = [r for r in result.steps if r.eqn.primitive.name == "cond"]
        assert int(np.asarray(step.args[0])) == branch
        body = tw.inside(lin, step)
        assert body is not None
        inner = tw.walk(body, step.cts_in)
        sent = [np.asarray(w.contribution) for w in step.writes]
        np.testing.assert_allclose([np.asarray(c) for c in inner.cotangents], sent, rtol=1e-6)
        np.testing.assert_allclose(np.asarray(inner.cotangents[0]), jax.grad(f)(x), rtol=1e-6)


def test_a_remat_steps_body_walk_sends_what_the_remat_transpose_sent() -> None:
    from jax._src import ad_checkpoint
    from jaxscope.internals import transpose_walk as tw

    # remat2's transpose partial-evaluates its body (the non-linear part recomputed from the
    # residual arguments, the linear part transposed by ad.backward_pass): the walk of the body
    # does both. Its body is an open jaxpr (no constvars); JVP'd by ad.jvp_jaxpr (cached).
    assert ad.fancy_transposes[ad_checkpoint.remat_p] is ad_checkpoint.remat_transpose
    assert ad_checkpoint.remat_p.name == "remat2"
    src = inspect.getsource(ad_checkpoint.remat_transpose)
    assert "assert not jaxpr.constvars" in src
    assert "ad.jvp_jaxpr(" in inspect.getsource(ad_checkpoint.remat_jvp)
    assert hasattr(ad._jvp_jaxpr, "cache_info") and hasattr(ad._jvp_jaxpr, "evict_weakref")
    assert "parent_trace" in inspect.signature(ad.JVPTrace).parameters

    @jax.checkpoint
    def g(v: Any) -> Any:
        return jnp.sin(v) * jnp.sqrt(v)

    def f(x: Any) -> Any:
        return jnp.sum(g(x) * x)

    x = jnp.array([0.5, 1.0, 2.0])
    for _ in range(2):  # the second linearisation hits ad._jvp_jaxpr's cache
        lin, result = _steps_of(f, x)
        (step,) = [r for r in result.steps if r.eqn.primitive.name == "remat2"]
        assert tw.call_name(step) == "g"
        body = tw.inside(lin, step)
        assert body is not None
        inner = tw.walk(body, step.cts_in)
        sent = [np.asarray(w.contribution) for w in step.writes]
        np.testing.assert_allclose([np.asarray(c) for c in inner.cotangents], sent, rtol=1e-6)
        np.testing.assert_allclose(
            np.asarray(result.cotangents[0]), np.asarray(jax.grad(f)(x)), rtol=0
        )
        # The body's tangent eqns are attributed to the primal primitives of g's JVP.
        assert {r.primal_primitive for r in inner.steps} >= {"sin", "sqrt", "mul"}


def test_grad_seed_is_jax_grads_or_all_ones_for_one_vector_output() -> None:
    from jaxscope.internals import transpose_walk as tw

    x = jnp.array([-1.0, 2.0, 3.0])
    lin = tw.linearize_vjp(lambda v: jnp.sum(v * v), [x])
    seed, text = tw.grad_seed(lin)
    assert text == "1.0" and [np.asarray(s) for s in seed] == [np.float32(1.0)]

    def h(v: Any) -> Any:
        return jnp.where(v > 0, v, -v)

    lin = tw.linearize_vjp(h, [x])
    seed, text = tw.grad_seed(lin)
    assert text.startswith("ones(f32[3]):") and "gradient of sum(f)" in text
    out, f_vjp = jax.vjp(h, x)
    (want,) = f_vjp(jnp.ones_like(out))
    got = tw.walk(lin, seed).cotangents[0]
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    np.testing.assert_array_equal(np.asarray(got), [-1.0, 1.0, 1.0])
    # Two outputs: JAX's own jax.grad error, as before.
    lin = tw.linearize_vjp(lambda v: (v, v), [x])
    with pytest.raises(TypeError, match="Gradient only defined for scalar-output functions"):
        tw.grad_seed(lin)
