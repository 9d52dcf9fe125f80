"""Contract tests: the private JAX names ``jaxscope.internals.cache_layers`` relies on.

They fail loudly when a JAX upgrade renames or reshapes ``pjit._infer_params_cached``,
``pe.trace_to_jaxpr``, ``pjit._pjit_lower``, ``pxla._cached_lowering_to_hlo``,
``pxla._cached_compilation`` (``weakref_lru_cache`` with ``cache_info().hits/misses``), the jit
object's ``_fun``, ``_jit_info.static_argnums/static_argnames`` and ``_cache_size()``,
``config.trace_context``/``trace_context_names``, the ``jax.monitoring`` event names, the
persistent-cache event names, or changes which caches a call consults (the verdicts of
``JitCallRecord.cells``/``layer``).
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax._src import compilation_cache, dispatch, pjit
from jax._src import config as jax_config
from jax._src.interpreters import partial_eval as pe
from jax._src.interpreters import pxla
from jaxscope.internals.cache_layers import (
    COUNTED_CACHES,
    PERSISTENT_HIT_EVENT,
    PERSISTENT_MISS_EVENT,
    counter_snapshot,
    is_jitted,
    jitted_fun,
    jitted_statics,
    key_entries,
    observe_jit_call,
    persistent_cache_enabled,
    reset_caches,
    trace_context_now,
)
from jaxscope.internals.monitoring import COMPILE_EVENT, LOWER_EVENT, TRACE_EVENT


def _f(x: Any, n: int = 2) -> Any:
    return jnp.sin(x) * n


def test_counted_caches_are_jax_weakref_lru_caches() -> None:
    assert COUNTED_CACHES["infer_params"][0] is pjit._infer_params_cached
    assert COUNTED_CACHES["trace_to_jaxpr"][0] is pe.trace_to_jaxpr
    assert COUNTED_CACHES["pjit_lower"][0] is pjit._pjit_lower
    assert COUNTED_CACHES["lowering_to_hlo"][0] is pxla._cached_lowering_to_hlo
    assert COUNTED_CACHES["compilation"][0] is pxla._cached_compilation
    for cache, _ in COUNTED_CACHES.values():
        info = cache.cache_info()
        assert isinstance(info.hits, int) and isinstance(info.misses, int)
        assert callable(cache.cache_clear)
    assert set(counter_snapshot()) == set(COUNTED_CACHES)


def test_monitoring_and_persistent_event_names() -> None:
    assert TRACE_EVENT == dispatch.JAXPR_TRACE_EVENT
    assert LOWER_EVENT == dispatch.JAXPR_TO_MLIR_MODULE_EVENT
    assert COMPILE_EVENT == dispatch.BACKEND_COMPILE_EVENT
    source = Path(inspect.getfile(compilation_cache)).read_text()
    source += Path(inspect.getfile(pxla)).read_text()
    from jax._src import compiler

    source += Path(inspect.getfile(compiler)).read_text()
    assert PERSISTENT_HIT_EVENT in source and PERSISTENT_MISS_EVENT in source


def test_jit_object_attributes() -> None:
    jf: Any = jax.jit(_f, static_argnums=(1,), static_argnames=("n",))
    assert is_jitted(jf) and not is_jitted(_f)
    assert jitted_fun(jf) is _f
    assert jitted_statics(jf) == ((1,), ("n",))
    reset_caches()
    assert jf._cache_size() == 0
    jf(jnp.ones(3), 2)
    assert jf._cache_size() == 1
    reset_caches()  # jax.clear_caches() empties the C++ caches too
    assert jf._cache_size() == 0


def test_trace_context_names_and_values() -> None:
    names = jax_config.trace_context_names()
    assert "jax_default_matmul_precision" in names
    assert len(jax_config.trace_context()) == len(names)
    with jax.default_matmul_precision("highest"):
        assert trace_context_now()["jax_default_matmul_precision"] == "'highest'"


def test_compilation_cache_dir_is_a_state_of_jax_config() -> None:
    # persistent_cache_enabled reads the State behind jax.config.jax_compilation_cache_dir.
    state = jax_config.compilation_cache_dir
    config: Any = jax.config  # its options are attributes set at run time
    assert config._value_holders["jax_compilation_cache_dir"] is state
    assert persistent_cache_enabled() is bool(state.value)
    with state("/nonexistent/jaxscope-contract"):
        assert persistent_cache_enabled() and config.jax_compilation_cache_dir == state.value
    assert persistent_cache_enabled() is bool(state.value)


def test_key_entries_read_avals_and_placement() -> None:
    entries = dict(key_entries(_f, (1.0, 3), {}, (1,), ()))
    assert entries["x aval"] == "f32[] weak" and entries["x placement"] == "Python float"
    assert entries["static n"] == "3"
    entries = dict(key_entries(_f, (jax.device_put(jnp.ones(2), jax.devices()[0]),), {}, (), ()))
    assert entries["x aval"] == "f32[2]" and entries["x placement"].startswith(
        "jax.Array committed"
    )


def _step(w: Any, lr: Any) -> Any:
    return w - lr * jnp.sin(w)


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [((jnp.ones(4),), {"lr": 0.1}), ((jnp.ones(4), 0.1), {}), ((0.1, jnp.ones(4)), {})],
    ids=["lr-by-keyword", "lr-positional", "first-of-two"],
)
def test_key_entries_mark_static_what_jax_marks_static(
    args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    """``static_argnames="lr"`` becomes ``static_argnums=(1,)``; called with ``lr`` by keyword
    and one positional arg, argnum 1 names no positional arg (an earlier ``1 % nargs`` made
    ``w`` static). Truth: what ``jax.jit(...).trace`` traced (its jaxpr's invars) and which
    argnums JAX resolved for the jitted function."""
    fun = _step if len(args) < 2 or not isinstance(args[0], float) else (lambda lr, w: _step(w, lr))
    names = ("lr",) if fun is _step else ()
    nums = (1,) if fun is _step else (0,)
    jitted = jax.jit(fun, static_argnums=nums, static_argnames=names or None)
    traced = jitted.trace(*args, **kwargs)
    entries = dict(key_entries(fun, args, kwargs, nums, names))
    statics = {k.removeprefix("static ") for k in entries if k.startswith("static ")}
    leaves = {k.removesuffix(" aval") for k in entries if k.endswith(" aval")}
    # JAX traced exactly the array: one invar, an f32[4]; the float is static.
    (invar,) = traced.jaxpr.jaxpr.invars
    assert invar.aval.shape == (4,) and invar.aval.dtype == jnp.float32
    assert statics == {"lr"}
    assert leaves == {"w"} and entries["w aval"] == "f32[4]"


def test_which_caches_a_call_consults() -> None:
    """The facts the verdicts rest on (JAX 0.10.2): a C++ hit moves no Python counter; a numpy
    input misses the C++ cache but hits the jaxpr and lowering caches (the deepest, lowering,
    answers); a committed input hits
    the jaxpr cache and misses lowering and compilation, with no trace; a new shape traces."""
    reset_caches()
    jf = jax.jit(_f)
    first = observe_jit_call(jf, (jnp.ones(3),), {})
    assert first.traced and first.compile_events == 1 and first.layer() == "compile"
    assert first.explanation.startswith("TRACING CACHE MISS")
    hit = observe_jit_call(jf, (jnp.ones(3),), {})
    assert hit.before == hit.after and hit.layer() == "cpp"
    host = observe_jit_call(jf, (np.ones(3, np.float32),), {})
    assert host.delta("infer_params") == (1, 0) and host.delta("pjit_lower") == (1, 0)
    assert host.layer() == "lowering" and host.cpp_size_after == host.cpp_size_before + 1
    committed = observe_jit_call(jf, (jax.device_put(jnp.ones(3), jax.devices()[0]),), {})
    assert committed.delta("pjit_lower")[1] == 1 and committed.delta("compilation")[1] == 1
    assert not committed.traced and committed.explanation == ""
    assert committed.cells()["jaxpr"] == "hit" and committed.layer() == "compile"
    shape = observe_jit_call(jf, (jnp.ones(4),), {})
    assert shape.traced and "different input types" in shape.explanation


def test_reset_forgets_explained_call_sites() -> None:
    reset_caches()
    assert not pe.callsites_with_tracing_cache_miss


def test_jitted_and_module_names_are_jaxs() -> None:
    import functools

    from jax._src import util as jax_util
    from jax._src.interpreters import mlir
    from jaxscope.internals.cache_layers import jitted_name, persistent_module_name

    def g(x: Any, k: float) -> Any:
        return x * k

    lam = jax.jit(lambda x: x)
    part = jax.jit(functools.partial(g, k=2.0))
    assert (jitted_name(lam), jitted_name(part)) == ("<lambda>", "g")
    assert jax_util.fun_name(functools.partial(g, k=1.0)) == "g"
    assert (persistent_module_name(lam), persistent_module_name(part)) == ("jit__lambda", "jit_g")
    # JAX's lowering names the module this way (mlir.lower_jaxpr_to_module).
    src = inspect.getsource(mlir.lower_jaxpr_to_module)
    assert 'sanitize_name(module_name).rstrip("_")' in src
    assert str(part.lower(jnp.ones(2)).as_text()).startswith("module @jit_g")
