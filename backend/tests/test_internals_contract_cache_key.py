"""Contract tests: every private JAX name ``internals.cache_key`` and ``internals.config_table``
use, and the facts they rely on. A failure here means JAX changed under jaxscope."""

from __future__ import annotations

import hashlib
import inspect
import logging
import re
from typing import Any

import jax
import jax.numpy as jnp
from jax._src import cache_key as _ck
from jax._src import compilation_cache as cc
from jax._src import compiler, lru_cache
from jax._src import config as jax_config
from jax._src.interpreters import partial_eval as pe
from jaxscope.internals import cache_key as ick
from jaxscope.internals import config_table

# JAX's private modules are untyped: read as Any (mypy strict).
ck: Any = _ck


def test_get_hashes_the_eight_ingredients_in_our_order() -> None:
    source = inspect.getsource(ck.get)
    names = re.findall(r'^\s+\(\s*"([^"]+)",', source, re.M)
    assert tuple(names) == ick.INGREDIENTS
    assert 'module_name + "-" + hash_obj.digest().hex()' in source
    params = list(inspect.signature(ck.get).parameters)
    assert params == [
        "module",
        "devices",
        "compile_options",
        "backend",
        "compression_algorithm",
        "ignore_callbacks",
    ]


def test_helpers_exist_with_their_signatures() -> None:
    sigs: dict[str, list[str]] = {
        "_hash_computation": ["hash_obj", "module", "ignore_callbacks"],
        "_hash_platform": ["hash_obj", "backend"],
        "_hash_xla_flags": ["hash_obj", "extra_flag_prefixes"],
        "_hash_serialized_compile_options": [
            "hash_obj",
            "compile_options_obj",
            "strip_device_assignment",
        ],
        "_hash_accelerator_config": ["hash_obj", "accelerators"],
        "_hash_string": ["hash_obj", "str_var"],
        "_canonicalize_ir": ["m_original", "ignore_callbacks"],
        "_serialize_ir": ["m", "ignore_callbacks"],
    }
    for name, params in sigs.items():
        assert list(inspect.signature(getattr(ck, name)).parameters) == params, name
    assert isinstance(ck.jaxlib_version_str, str)
    assert ck.custom_hook() == ""
    assert isinstance(ck.get_flag_prefixes(), list)
    assert ck.IgnoreCallbacks.NO in list(ck.IgnoreCallbacks)
    assert "--xla_dump_to" in ck.xla_flags_to_exclude_from_cache_key


def test_hash_string_strips_and_encodes() -> None:
    h = hashlib.sha256()
    ck._hash_string(h, " zlib ")
    assert h.hexdigest() == hashlib.sha256(b"zlib").hexdigest()


def test_compilation_cache_calls_get_through_the_module_attribute() -> None:
    # internals.cache_key wraps `cache_key.get` by assignment: get_cache_key must look it up.
    source = inspect.getsource(cc.get_cache_key)
    assert "cache_key.get(" in source
    assert '"zstandard" if zstandard is not None else "zlib"' in source
    assert callable(cc.reset_cache)
    # get() looks custom_hook() up in its module at call time (so it can be replaced)
    assert "custom_hook()" in inspect.getsource(ck.get)


def test_compiler_logs_the_key_in_these_words() -> None:
    miss = inspect.getsource(compiler.log_persistent_cache_miss)
    hit = inspect.getsource(compiler.log_persistent_cache_hit)
    assert "PERSISTENT COMPILATION CACHE MISS for '%s' with key %r" in miss
    assert "Persistent compilation cache hit for '%s' with key %r" in hit
    assert lru_cache._CACHE_SUFFIX == "-cache"


def test_xla_flag_debug_lines() -> None:
    source = inspect.getsource(ck._hash_xla_flags)
    assert '"Not including XLA flag in cache key: %s"' in source
    assert '"Including XLA flag in cache key: %s"' in source
    verdicts, digest = ick.xla_flag_filter("--xla_dump_to=/x --xla_cpu_enable_fast_math=true")
    assert [(v.flag, v.kept) for v in verdicts] == [
        ("--xla_cpu_enable_fast_math=true", True),
        ("--xla_dump_to=/x", False),
    ]
    h = hashlib.sha256()
    ck._hash_string(h, "--xla_cpu_enable_fast_math=true")
    assert digest == h.hexdigest()


def test_capture_and_recompute_agree_with_get() -> None:
    import tempfile

    def f(x: jax.Array) -> jax.Array:
        return jnp.sin(x) * 2

    x = jnp.ones(3)
    with ick.persistent_cache(tempfile.mkdtemp()) as directory:
        ick.clear_in_memory_caches()
        lowered = jax.jit(f).lower(x)
        with ick.capture_cache_keys() as capture:
            lowered.compile()
        assert len(capture.calls) == 1
        call = capture.calls[0]
        ingredients, key = ick.recompute(call)
        assert key == call.key == capture.logged[-1][1]
        assert capture.logged[-1][0] == "miss"
        assert (directory / (key + "-cache")).exists()
    assert [i.name for i in ingredients] == list(ick.INGREDIENTS)
    assert ck.get is not None and ck.get.__name__ == "get"  # unwrapped again


def test_config_holders_and_trace_context() -> None:
    holders: dict[str, Any] = jax.config._value_holders
    assert set(holders) == set(jax.config.values)
    assert isinstance(holders["jax_enable_x64"], jax_config.State)
    assert isinstance(holders["jax_platform_name"], jax_config.Flag)
    assert not callable(holders["jax_platform_name"])
    names = jax_config.trace_context_names()
    assert "jax_enable_x64" in names and "jax_debug_nans" not in names
    assert len(names) == len(jax_config.trace_context())
    assert jax.config.meta["jax_enable_x64"][2]["help"] == "Enable 64-bit types to be used"
    table = {o.name: o for o in config_table.options()}
    assert table["jax_enable_x64"].scoped and table["jax_enable_x64"].trace_context
    assert not table["jax_platform_name"].scoped
    with config_table.flipped("jax_enable_x64", True):
        assert jnp.ones(1).dtype == jnp.float64
    assert jnp.ones(1).dtype == jnp.float32


def test_explain_call_sites_set_exists() -> None:
    assert isinstance(pe.callsites_with_tracing_cache_miss, set)
    assert logging.getLogger(ick.COMPILER_LOGGER).name == compiler.logger.name
