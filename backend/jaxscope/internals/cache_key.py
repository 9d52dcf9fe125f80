"""The persistent compilation cache key, ingredient by ingredient, from JAX's own helpers.

Sources (``jax/_src/cache_key.py``, ``jax/_src/compilation_cache.py``, ``jax/_src/compiler.py``):

* ``cache_key.get(module, devices, compile_options, backend, compression_algorithm,
  ignore_callbacks)`` hashes eight ingredients, in this order, into one ``hashlib.sha256`` and
  returns ``module_sym_name + "-" + digest.hex()``. It is called (through
  ``compilation_cache.get_cache_key``, which passes ``"zstandard"`` or ``"zlib"``) by
  ``compiler._resolve_compilation_strategy`` only when the persistent cache is in use.
* :func:`capture_cache_keys` wraps ``cache_key.get`` for the duration of a block and records the
  real arguments and the key JAX returned; it also records the key JAX logs on the
  ``jax._src.compiler`` logger (``PERSISTENT COMPILATION CACHE MISS for '...' with key '...'`` or
  ``Persistent compilation cache hit for ...``).
* :func:`recompute` feeds the captured arguments to JAX's per-ingredient helpers
  (``_hash_computation``, ``_hash_platform``, ``_hash_xla_flags``,
  ``_hash_serialized_compile_options``, ``_hash_accelerator_config``, ``_hash_string``), each into
  a fresh sha256 (the ingredient's digest) and into one running sha256 (the running digest), as
  ``get`` does; the final key is ``sym_name-<running digest>``.
* :func:`persistent_cache` turns the cache on for a block (``jax_compilation_cache_dir``,
  ``jax_persistent_cache_min_compile_time_secs=0``, ``compilation_cache.reset_cache()`` before and
  after) and clears JAX's in-memory caches so that the next ``.compile()`` really asks for a key.
* :func:`xla_flag_filter` runs ``_hash_xla_flags`` on given flags (as ``XLA_FLAGS``) and reads
  JAX's own debug lines ``Including/Not including XLA flag in cache key: ...``.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jax
from jax._src import cache_key as ck
from jax._src import compilation_cache as cc
from jax._src.lib.mlir import ir

CACHE_KEY_LOGGER = "jax._src.cache_key"
COMPILER_LOGGER = "jax._src.compiler"

# The ingredient names exactly as ``cache_key.get`` spells them, in its order.
INGREDIENTS = (
    "computation",
    "jax_lib version",
    "backend version",
    "XLA flags",
    "compile_options",
    "accelerator_config",
    "compression",
    "custom_hook",
)

# The JAX helper that hashes each ingredient (for the view: where to read it in JAX's source).
HELPERS = {
    "computation": "cache_key._hash_computation",
    "jax_lib version": "hash_obj.update(jaxlib_version_str)",
    "backend version": "cache_key._hash_platform",
    "XLA flags": "cache_key._hash_xla_flags",
    "compile_options": "cache_key._hash_serialized_compile_options",
    "accelerator_config": "cache_key._hash_accelerator_config",
    "compression": "cache_key._hash_string(compression_algorithm)",
    "custom_hook": "cache_key._hash_string(cache_key.custom_hook())",
}

_LOGGED_KEY = re.compile(r"with key '([^']+)'")


@dataclass
class CapturedKey:
    """One call of ``cache_key.get``: its arguments and the key it returned."""

    module: Any
    devices: Any
    compile_options: Any
    backend: Any
    compression: str
    ignore_callbacks: Any
    key: str


@dataclass
class KeyCapture:
    """What :func:`capture_cache_keys` saw: every ``get`` call, and the keys JAX logged (with
    whether the persistent cache missed or hit)."""

    calls: list[CapturedKey] = field(default_factory=list)
    logged: list[tuple[str, str]] = field(default_factory=list)  # (miss|hit, key)
    messages: list[str] = field(default_factory=list)
    # ``compiler._cache_write``'s reasons for not writing an entry (host callbacks, compile time
    # or size under the thresholds, process_id != 0), as JAX logs them.
    not_written: list[str] = field(default_factory=list)


class _Collect(logging.Handler):
    def __init__(self, sink: Callable[[logging.LogRecord], None]) -> None:
        super().__init__(level=logging.DEBUG)
        self.sink = sink

    def emit(self, record: logging.LogRecord) -> None:
        self.sink(record)


@contextlib.contextmanager
def _listening(name: str, sink: Callable[[logging.LogRecord], None]) -> Iterator[None]:
    """Route ``name``'s records at DEBUG and above to ``sink`` only (not to stderr)."""
    logger = logging.getLogger(name)
    handler = _Collect(sink)
    saved = (logger.level, logger.propagate, logger.disabled)
    logger.addHandler(handler)
    logger.propagate = False
    logger.disabled = False
    logger.setLevel(logging.DEBUG)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(saved[0])
        logger.propagate = saved[1]
        logger.disabled = saved[2]


@contextlib.contextmanager
def capture_cache_keys() -> Iterator[KeyCapture]:
    """Record every ``cache_key.get`` call in the block (arguments and returned key), and the
    keys ``compiler`` logs for persistent-cache misses and hits."""
    capture = KeyCapture()
    real_get = ck.get

    def spy(*args: Any, **kwargs: Any) -> str:
        key = real_get(*args, **kwargs)
        names = ("module", "devices", "compile_options", "backend")
        bound = dict(zip(names, args, strict=False))
        bound.update({k: v for k, v in kwargs.items() if k in names})
        rest = list(args[4:])
        compression = kwargs.get("compression_algorithm", rest[0] if rest else "zstandard")
        ignore = kwargs.get("ignore_callbacks", rest[1] if len(rest) > 1 else ck.IgnoreCallbacks.NO)
        capture.calls.append(
            CapturedKey(
                module=bound["module"],
                devices=bound["devices"],
                compile_options=bound["compile_options"],
                backend=bound["backend"],
                compression=compression,
                ignore_callbacks=ignore,
                key=key,
            )
        )
        return key

    def on_record(record: logging.LogRecord) -> None:
        message = record.getMessage()
        if message.startswith("Not writing persistent cache entry"):
            capture.not_written.append(message)
        m = _LOGGED_KEY.search(message)
        if m is None:
            return
        if message.startswith("PERSISTENT COMPILATION CACHE MISS"):
            capture.logged.append(("miss", m.group(1)))
        elif message.startswith("Persistent compilation cache hit"):
            capture.logged.append(("hit", m.group(1)))
        capture.messages.append(message)

    ck.get = spy
    try:
        with _listening(COMPILER_LOGGER, on_record):
            yield capture
    finally:
        ck.get = real_get


@dataclass
class IngredientDigest:
    """One ingredient: its digest alone (``digest``, sha256 hex of what its helper feeds the
    hash) and the running digest after it (``running``), plus a readable account of the input."""

    name: str
    digest: str
    running: str
    helper: str
    detail: str


def _fresh(fn: Callable[[Any], None]) -> str:
    h = hashlib.sha256()
    fn(h)
    return h.hexdigest()


def recompute(call: CapturedKey) -> tuple[list[IngredientDigest], str]:
    """Recompute ``call``'s key with JAX's own per-ingredient helpers, in ``get``'s order.
    Returns the ingredients and the key ``sym_name-<running sha256 hex>``."""
    backend = call.backend
    hashers: dict[str, Callable[[Any], None]] = {
        "computation": lambda h: ck._hash_computation(h, call.module, call.ignore_callbacks),
        "jax_lib version": lambda h: h.update(bytes(ck.jaxlib_version_str.encode("utf-8"))),
        "backend version": lambda h: ck._hash_platform(h, backend),
        "XLA flags": lambda h: ck._hash_xla_flags(h, ck.get_flag_prefixes()),
        "compile_options": lambda h: ck._hash_serialized_compile_options(
            h, call.compile_options, strip_device_assignment=(backend.platform == "gpu")
        ),
        "accelerator_config": lambda h: ck._hash_accelerator_config(h, call.devices),
        "compression": lambda h: ck._hash_string(h, call.compression),
        "custom_hook": lambda h: ck._hash_string(h, ck.custom_hook()),
    }
    details = _details(call)
    running = hashlib.sha256()
    out: list[IngredientDigest] = []
    for name in INGREDIENTS:
        hashers[name](running)
        out.append(
            IngredientDigest(
                name=name,
                digest=_fresh(hashers[name]),
                running=running.hexdigest(),
                helper=HELPERS[name],
                detail=details[name],
            )
        )
    sym_name = ir.StringAttr(call.module.operation.attributes["sym_name"]).value
    return out, f"{sym_name}-{running.hexdigest()}"


def _details(call: CapturedKey) -> dict[str, str]:
    """A short, readable account of what each ingredient hashes (for the view)."""
    canonical = ck._canonicalize_ir(call.module, call.ignore_callbacks)
    with_metadata = ck._serialize_ir(call.module, call.ignore_callbacks)
    from jax._src import config as jax_config

    include_md = bool(jax_config.compilation_cache_include_metadata_in_key.value)
    lines = _flag_lines()
    flags = [f for f, kept in lines if kept]
    dropped = [f for f, kept in lines if not kept]
    devices = [d.device_kind for d in call.devices.flat]
    opts = call.compile_options
    overrides = list(getattr(opts, "env_option_overrides", []) or [])
    return {
        "computation": (
            f"MLIR bytecode of module @{sym_name(call.module)}, "
            + (
                f"with debug info ({len(with_metadata)} bytes; "
                "jax_compilation_cache_include_metadata_in_key=True)"
                if include_md
                else f"after the strip-debuginfo pass ({len(canonical)} bytes; "
                f"{len(with_metadata)} with locations)"
            )
        ),
        "jax_lib version": f"jaxlib {ck.jaxlib_version_str}",
        "backend version": f"platform {call.backend.platform!r}, "
        f"platform_version {call.backend.platform_version!r}",
        "XLA flags": (("hashed: " + " ".join(flags)) if flags else "no XLA flag in the key")
        + (f"; dropped: {' '.join(dropped)}" if dropped else ""),
        "compile_options": "serialized CompileOptions, debug/dump options cleared"
        + (f"; env_option_overrides {overrides}" if overrides else ""),
        "accelerator_config": "topology fingerprint of, or device_kind of each of: "
        + ", ".join(devices),
        "compression": repr(call.compression),
        "custom_hook": repr(ck.custom_hook()),
    }


def sym_name(module: Any) -> str:
    """The ``sym_name`` of an MLIR module (``jit_f``): the key's prefix."""
    return str(ir.StringAttr(module.operation.attributes["sym_name"]).value)


def stripped_module_text(module: Any) -> str:
    """The module as ``_hash_computation`` sees it by default: after ``strip-debuginfo``
    (printed as text; the key hashes its bytecode)."""
    from jax._src.lib.mlir import passmanager as pm

    with module.context:
        clone = module.operation.clone()
        pm.PassManager.parse("builtin.module(strip-debuginfo)").run(clone)
        return str(clone)


def xla_flags_in_key(extra_flag_prefixes: list[str] | None = None) -> list[str]:
    """The XLA flags ``_hash_xla_flags`` hashes now (sorted), read from its own debug lines."""
    return [f for f, kept in _flag_lines(extra_flag_prefixes) if kept]


def _flag_lines(extra_flag_prefixes: list[str] | None = None) -> list[tuple[str, bool]]:
    lines: list[tuple[str, bool]] = []

    def on_record(record: logging.LogRecord) -> None:
        message = record.getMessage()
        for prefix, kept in (
            ("Including XLA flag in cache key: ", True),
            ("Not including XLA flag in cache key: ", False),
        ):
            if message.startswith(prefix):
                lines.append((message[len(prefix) :], kept))

    prefixes = ck.get_flag_prefixes() if extra_flag_prefixes is None else extra_flag_prefixes
    with _listening(CACHE_KEY_LOGGER, on_record):
        ck._hash_xla_flags(hashlib.sha256(), prefixes)
    return lines


@dataclass
class FlagVerdict:
    """One flag through JAX's filter: kept in the key or dropped (``excluded``)."""

    flag: str
    kept: bool


def xla_flag_filter(flags: str) -> tuple[list[FlagVerdict], str]:
    """Run JAX's own ``_hash_xla_flags`` with ``XLA_FLAGS`` set to ``flags`` (and
    ``LIBTPU_INIT_ARGS`` unset) for the call only; returns each flag's verdict in the order JAX
    considers them (sorted) and the resulting "XLA flags" digest. ``sys.argv`` is read too, as JAX
    does (``--xla*`` entries)."""
    saved = {k: os.environ.get(k) for k in ("XLA_FLAGS", "LIBTPU_INIT_ARGS")}
    os.environ["XLA_FLAGS"] = flags
    os.environ.pop("LIBTPU_INIT_ARGS", None)
    try:
        verdicts = [FlagVerdict(flag=f, kept=k) for f, k in _flag_lines()]
        digest = _fresh(lambda h: ck._hash_xla_flags(h, ck.get_flag_prefixes()))
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return verdicts, digest


def excluded_flags() -> list[str]:
    """``cache_key.xla_flags_to_exclude_from_cache_key``: JAX's exclusion list."""
    return list(ck.xla_flags_to_exclude_from_cache_key)


@contextlib.contextmanager
def xla_flags_env(extra: str) -> Iterator[None]:
    """``XLA_FLAGS`` with ``extra`` appended for the block (what ``_hash_xla_flags`` reads when
    the key is computed; XLA itself parsed ``XLA_FLAGS`` once, at start-up)."""
    saved = os.environ.get("XLA_FLAGS")
    os.environ["XLA_FLAGS"] = ((saved or "") + " " + extra).strip()
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("XLA_FLAGS", None)
        else:
            os.environ["XLA_FLAGS"] = saved


@contextlib.contextmanager
def custom_hook_returning(value: str) -> Iterator[None]:
    """Replace ``cache_key.custom_hook`` (JAX's salt hook, ``""`` by default) for the block."""
    real = ck.custom_hook
    ck.custom_hook = lambda: value
    try:
        yield
    finally:
        ck.custom_hook = real


def clear_in_memory_caches() -> None:
    """``jax.clear_caches()``: every in-memory cache (C++ jit caches, traced jaxprs, lowerings,
    compiled executables), so the next ``.compile()`` reaches ``compile_or_get_cached`` and asks
    the persistent cache for a key. Also forgets the call sites ``pe.explain`` reported."""
    from jax._src.interpreters import partial_eval as pe

    jax.clear_caches()
    pe.callsites_with_tracing_cache_miss.clear()


# The settings :func:`persistent_cache` sets (and restores): what decides whether, where and what
# JAX's persistent compilation cache writes.
PERSISTENT_SETTINGS = (
    "jax_compilation_cache_dir",
    "jax_persistent_cache_min_compile_time_secs",
    "jax_persistent_cache_min_entry_size_bytes",
    "jax_enable_compilation_cache",
)


def persistent_settings() -> dict[str, Any]:
    """The current values of :data:`PERSISTENT_SETTINGS` (``jax.config``), to tell whether user
    code changed them while the persistent cache was on."""
    return {n: getattr(jax.config, n) for n in PERSISTENT_SETTINGS}


@contextlib.contextmanager
def persistent_cache(directory: str) -> Iterator[Path]:
    """The persistent compilation cache on, in ``directory``, for the block; every program
    compiled then is written there (``jax_persistent_cache_min_compile_time_secs=0``,
    ``jax_persistent_cache_min_entry_size_bytes=0``). Before and after, JAX's cache object is
    reset (``compilation_cache.reset_cache()``) and the previous settings come back, so the
    worker's next run has no persistent cache."""
    from jax._src import config as jax_config

    saved = {n: jax_config.config._read(n) for n in PERSISTENT_SETTINGS}
    cc.reset_cache()
    try:
        jax.config.update("jax_compilation_cache_dir", directory)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
        jax.config.update("jax_enable_compilation_cache", True)
        yield Path(directory)
    finally:
        for n, v in saved.items():
            jax.config.update(n, v)
        cc.reset_cache()


# The persistent cache directory, as a path relative to a fresh working directory: JAX writes the
# cache directory's path into the compile options (``compiler.get_compile_options``:
# ``xla_gpu_per_fusion_autotune_cache_dir``, even on CPU), so a path that differs per run would
# change the ``compile_options`` digest, and the key, from run to run.
CACHE_DIR = "jaxscope-persistent-cache"


@contextlib.contextmanager
def clean_cache_dir() -> Iterator[str]:
    """A fresh temporary working directory holding an empty :data:`CACHE_DIR`, yielded as that
    relative path (the same string every run, so the same key for the same program); the
    previous working directory comes back after the block and the temporary one is removed.

    It is made inside the current working directory: in a sandbox worker that is the worker's
    own temporary directory, which the supervisor removes when the worker ends, so a run killed
    mid-block (timeout, CPU limit, cancel) leaves nothing behind either."""
    previous = os.getcwd()
    work = tempfile.mkdtemp(prefix="jaxscope-cache-", dir=previous)
    os.chdir(work)
    try:
        yield CACHE_DIR
    finally:
        os.chdir(previous)
        shutil.rmtree(work, ignore_errors=True)


def cache_file_suffix() -> str:
    """The suffix the file cache (``lru_cache.LRUCache``) gives an entry: ``<key>-cache``."""
    from jax._src import lru_cache

    return str(lru_cache._CACHE_SUFFIX)
