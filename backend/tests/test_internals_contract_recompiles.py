"""Contract tests: the private JAX names ``jaxscope.internals.recompiles`` relies on.

They fail loudly when a JAX upgrade renames ``pjit._infer_params``/``_infer_params_cached``,
changes their signatures or stops looking them up at call time, changes what the key's
``ArgumentSignature`` exposes, or moves ``core.trace_state_clean``, ``config.trace_context`` /
``trace_context_names``, ``source_info_util.raw_frame_to_frame`` or the loggers of the compile
log and the explain-cache-miss messages.
"""

from __future__ import annotations

import inspect
import logging
from typing import Any

import jax
import jax.numpy as jnp
from jax._src import config as jax_config
from jax._src import core, pjit, source_info_util
from jaxscope.internals.recompiles import (
    LOGGERS,
    Watch,
    definition,
    reset_caches,
    trace_context_entries,
    trace_state_clean,
    watching_jit_keys,
)


def test_infer_params_signatures() -> None:
    assert list(inspect.signature(pjit._infer_params).parameters) == ["fun", "ji", "args", "kwargs"]
    assert hasattr(pjit._infer_params_cached, "cache_info")  # a weakref_lru_cache
    # _infer_params (a module global) is what the jit cache-miss path calls, by name
    src = inspect.getsource(pjit._cpp_pjit)
    assert "_infer_params(fun, jit_info, args, kwargs)" in src
    src = inspect.getsource(pjit._infer_params)
    assert "_infer_params_cached(fun, ji, arg_signature, avals, ctx_mesh)" in src
    assert "entry.pjit_params" in src


def test_wrapped_globals_see_each_key_and_hit() -> None:
    reset_caches()

    def g(x: Any, n: int) -> Any:
        return x * n

    jg = jax.jit(g, static_argnums=1)
    watch = Watch(max_steps=10)
    with watching_jit_keys(watch):
        jg(jnp.ones(3), 2)
        jg(jnp.ones(3), 2)  # C++ fast path: nothing recorded
        jg(jnp.ones(4), 2)
    assert pjit._infer_params.__name__ == "_infer_params"  # restored
    tops = [r for r in [watch.last_top] if r is not None]
    assert tops and tops[0].fun is g and tops[0].hit is False


def test_argument_signature_fields() -> None:
    seen: list[Any] = []
    orig = pjit._infer_params_cached

    def spy(fun: Any, ji: Any, sig: Any, avals: Any, mesh: Any) -> Any:
        seen.append((fun, ji, sig, avals))
        return orig(fun, ji, sig, avals, mesh)

    def g(x: Any, n: int, y: Any) -> Any:
        return x * n + y["a"]

    reset_caches()
    pjit._infer_params_cached = spy  # type: ignore[assignment]
    try:
        jax.jit(g, static_argnums=1)(jnp.ones(3), 2, {"a": 1.0})
    finally:
        pjit._infer_params_cached = orig
    fun, ji, sig, avals = next(s for s in seen if s[0] is g)
    assert list(sig.static_args) == [2]
    assert [str(t) for t in sig.dynamic_arg_treedefs] == ["PyTreeDef(*)", "PyTreeDef({'a': *})"]
    assert list(sig.dynamic_arg_names) == []
    assert tuple(ji.static_argnums) == (1,)
    assert avals[1].weak_type and avals[1].str_short(short_dtypes=True) == "f32[]"
    entry = orig(fun, ji, sig, avals, pjit.get_ctx_mesh(ji.use_resource_env))  # type: ignore[no-untyped-call]
    assert entry.pjit_params is not None
    assert "jaxpr" in entry.pjit_params.params


def test_trace_state_and_context() -> None:
    assert trace_state_clean() is True
    inside: list[bool] = []

    def probe(x: Any) -> Any:
        inside.append(core.trace_state_clean())
        return x

    jax.make_jaxpr(probe)(1.0)
    assert inside == [False]
    names = jax_config.trace_context_names()
    assert len(names) == len(jax_config.trace_context())
    entries = trace_context_entries()
    assert "jax_default_matmul_precision" in entries
    with jax.default_matmul_precision("highest"):
        assert trace_context_entries()["jax_default_matmul_precision"] == "highest"


def test_frames_and_definitions() -> None:
    import sys

    frame = sys._getframe()
    fr = source_info_util.raw_frame_to_frame(frame.f_code, frame.f_lasti)
    assert fr.start_line > 0 and fr.function_name == "test_frames_and_definitions"

    def loss(x: Any) -> Any:
        return x

    filename, line, name = definition(jax.grad(loss))
    assert filename == __file__ and name == "loss" and line > 0


def test_log_compiles_and_explain_loggers() -> None:
    records: list[tuple[str, str]] = []

    class H(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append((record.name, record.getMessage()))

    h = H(level=logging.WARNING)
    loggers = [logging.getLogger(n) for n in LOGGERS]
    for lg in loggers:
        lg.addHandler(h)
    try:
        reset_caches()
        with jax.log_compiles(True), jax.explain_cache_misses(True):
            jax.jit(lambda x: x + 1)(jnp.ones(2))
    finally:
        for lg in loggers:
            lg.removeHandler(h)
    names = {n for n, _ in records}
    assert set(LOGGERS) <= names
    text = "\n".join(m for _, m in records)
    assert "Finished XLA compilation of jit(<lambda>)" in text
    assert "TRACING CACHE MISS" in text
    assert "Compiling jit(<lambda>) with global shapes and types" in text
