"""Contract tests for the ``jax._src.linear_util`` names ``jaxscope.internals.wrapped_fun_watch``
relies on (jax 0.10.2): ``WrappedFun``'s fields, ``wrap``/``call_wrapped``, ``Store.store`` and
its exceptions, the ``partial`` chain ``f_transformed`` is, and the generator names of the
stacks ``vmap``, ``custom_vjp``, ``custom_jvp`` and ``linear_transpose`` build around a user's
function; and that ``jit``/``grad``/``jvp``/``vjp``/``make_jaxpr``/``checkpoint`` build none.
They fail loudly when JAX changes, so that the wrapped_fun exhibit shows red tests rather than
an empty or wrong stack."""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import pytest
from jax._src import api_util, custom_derivatives
from jax._src import linear_util as lu
from jax._src.interpreters import batching
from jax._src.interpreters import partial_eval as pe
from jaxscope.internals.wrapped_fun_watch import (
    first_callers,
    partial_chain,
    watching,
    write_once_text,
)


def test_jax_is_the_pinned_version() -> None:
    assert jax.__version__ == "0.10.2"


def test_wrapped_fun_fields_and_methods() -> None:
    assert lu.WrappedFun.__slots__ == (
        "f", "f_transformed", "transforms", "stores", "params", "in_type", "debug_info"
    )  # fmt: skip
    assert list(inspect.signature(lu.WrappedFun.__init__).parameters) == [
        "self", "f", "f_transformed", "transforms", "stores", "params", "in_type", "debug_info"
    ]  # fmt: skip
    assert list(inspect.signature(lu.WrappedFun.wrap).parameters) == [
        "self", "gen", "gen_static_args", "out_store"
    ]  # fmt: skip
    assert "return self.f_transformed(*args, **kwargs)" in inspect.getsource(
        lu.WrappedFun.call_wrapped
    )
    # wrap pushes in front (outermost first) and chains partial(gen, previous f_transformed, ...)
    wrap_src = inspect.getsource(lu.WrappedFun.wrap)
    assert "((gen, gen_static_args),) + self.transforms" in wrap_src
    assert "partial(gen, self.f_transformed, out_store, *gen_static_args)" in wrap_src
    assert "lu.wrap_init" not in inspect.getsource(lu.wrap_init)  # builds WrappedFun directly
    assert "WrappedFun(f, partial(f, **params_dict)" in inspect.getsource(lu.wrap_init)
    # the module docstring states the rule the exhibit shows
    assert "The arguments are\ntransformed first with the last applied transformation" in (
        lu.__doc__ or ""
    )


def test_store_is_write_once_and_equal_store_wraps_one() -> None:
    assert list(inspect.signature(lu.Store.store).parameters) == ["self", "val"]
    store_cls: Any = lu.Store  # linear_util is untyped
    s = store_cls()
    assert write_once_text(s) == "StoreException: Store empty"
    s.store(1)
    assert write_once_text(s) == "StoreException: Store occupied"
    assert s.val == 1  # the check changed nothing
    equal_cls: Any = lu.EqualStore
    e = equal_cls()
    assert isinstance(e._store, lu.Store)
    e.store((1,))
    e.store((1,))  # an equal value is accepted
    assert write_once_text(e) == "StoreException: Store occupied with not-equal value"


def test_f_transformed_is_a_partial_chain() -> None:
    def f(x: Any) -> Any:
        return x

    dbg = api_util.debug_info("test", f, (1.0,), {})
    wf = lu.wrap_init(f, debug_info=dbg)
    wf2, _ = api_util.flatten_fun_nokwargs(wf, jax.tree.structure((1.0,)))
    chain = partial_chain(wf2)
    assert chain is not None and len(chain) == 2
    assert isinstance(chain[0], functools.partial) and chain[0].func is wf2.transforms[0][0]
    assert isinstance(chain[1], functools.partial) and chain[1].func is f


# The stacks each transform builds around the user's functions, outermost first, by core.
X = jnp.arange(3.0)


@jax.custom_vjp
def _cvjp(x: Any) -> Any:
    return jnp.sin(x)


def _cvjp_fwd(x: Any) -> Any:
    return jnp.sin(x), jnp.cos(x)


def _cvjp_bwd(res: Any, ct: Any) -> Any:
    return (res * ct,)


_cvjp.defvjp(_cvjp_fwd, _cvjp_bwd)


@jax.custom_jvp
def _cjvp(x: Any) -> Any:
    return jnp.sin(x)


@_cjvp.defjvp
def _cjvp_rule(primals: Any, tangents: Any) -> Any:
    return jnp.sin(primals[0]), jnp.cos(primals[0]) * tangents[0]


def _f(x: Any) -> Any:
    return jnp.sum(jnp.sin(x) * 2.0)


def _lin(x: Any) -> Any:
    return 2.0 * x


def _boom(x: Any) -> Any:
    raise ZeroDivisionError("inside the stack")


USER = {
    _boom.__code__,
    _f.__code__,
    _lin.__code__,
    _cvjp_fwd.__code__,
    _cvjp_bwd.__code__,
    _cjvp_rule.__code__,
}
USER |= {_cvjp.fun.__code__, _cjvp.fun.__code__}


def is_user(fun: Any) -> bool:
    return getattr(fun, "__code__", None) in USER


def observed(run: Callable[[], Any]) -> dict[str, list[str]]:
    with watching(is_user) as w:
        run()
    return {s.core_name: [t.name for t in s.transforms] for s in w.stacks}


def test_the_generators_exist_where_the_exhibit_names_them() -> None:
    for module, name in [
        (batching, "_batch_outer"), (batching, "_batch_inner"),
        (batching, "flatten_fun_for_vmap"), (batching, "batch_subtrace"),
        (custom_derivatives, "_flatten_fun_nokwargs"), (custom_derivatives, "_check_primal_refs"),
        (custom_derivatives, "_flatten_fwd"), (custom_derivatives, "_flatten_bwd"),
        (custom_derivatives, "_flatten_jvp"), (api_util, "flatten_fun_nokwargs"),
        (pe, "trace_to_subjaxpr_nounits"),
    ]:  # fmt: skip
        assert hasattr(module, name), f"{module.__name__}.{name} is gone"


def test_vmap_stack() -> None:
    assert observed(lambda: jax.vmap(_f)(X[None])) == {
        "_f": ["_batch_outer", "_batch_inner", "flatten_fun_for_vmap"]
    }


def test_custom_vjp_stacks_under_vjp() -> None:
    def run() -> Any:
        out, pullback = jax.vjp(_cvjp, X)
        return pullback(out)

    assert observed(run) == {
        "_cvjp_fwd": ["_flatten_fwd"],
        "_cvjp_bwd": ["_flatten_bwd"],
        "_cvjp": ["_flatten_fun_nokwargs", "_check_primal_refs"],
    }


def test_custom_jvp_stacks_under_jvp() -> None:
    assert observed(lambda: jax.jvp(_cjvp, (X,), (X,))) == {
        "_cjvp_rule": ["_flatten_jvp"],
        "_cjvp": ["_flatten_fun_nokwargs"],
    }


def test_linear_transpose_stack() -> None:
    assert observed(lambda: jax.linear_transpose(_lin, X)(X)) == {
        "_lin": ["trace_to_subjaxpr_nounits", "flatten_fun_nokwargs"]
    }


@pytest.mark.parametrize(
    "run",
    [
        lambda: jax.jit(_f)(X),
        lambda: jax.grad(_f)(X),
        lambda: jax.jvp(_f, (X,), (X,)),
        lambda: jax.vjp(_f, X)[1](1.0),
        lambda: jax.make_jaxpr(_f)(X),
        lambda: jax.checkpoint(_f)(X),
    ],
    ids=["jit", "grad", "jvp", "vjp", "make_jaxpr", "checkpoint"],
)
def test_no_wrapped_fun_around_f(run: Callable[[], Any]) -> None:
    clear: Any = jax.clear_caches
    clear()  # so that f is traced again, not found in jit's cache
    with watching(is_user) as w, first_callers({_f.__code__}) as callers:
        run()
    assert w.built_around == 0 and w.stacks == []
    assert callers[_f.__code__], "f was called (traced) without a WrappedFun"


def test_hooks_and_profiler_are_put_back() -> None:
    cls: Any = lu.WrappedFun
    before = (cls.__init__, cls.wrap, cls.call_wrapped, lu.Store.store)
    assert sys.getprofile() is None
    with pytest.raises(ZeroDivisionError), watching(is_user) as w:
        jax.vmap(_boom)(X[None])
    # the exception left every frame: each enter has its leave
    assert [s.event for s in w.steps] == ["enter"] * 4 + ["leave"] * 4
    assert (cls.__init__, cls.wrap, cls.call_wrapped, lu.Store.store) == before
    assert sys.getprofile() is None
