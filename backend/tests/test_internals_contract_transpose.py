"""Contract tests: every private JAX name ``jaxscope.internals.transpose_walk`` relies on (and the
error texts ``sandbox.errors.ad_help`` recognises) still exists and behaves as assumed in
jax 0.10.2. A JAX upgrade that changes one of them fails here, loudly, before the exhibit breaks."""

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
from jax._src.tree_util import FlatTree
from jaxscope.internals.transpose_walk import linearize_vjp, seed_cotangents, walk
from jaxscope.sandbox.errors import ad_help

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
