"""The cache_key exhibit: the persistent compilation cache key of the snippet's ``jax.jit(f)``,
ingredient by ingredient, against the key JAX itself computes, logs and writes.

One run:

1. ``f``'s jaxpr (``jax.make_jaxpr``), for reference.
2. Clean start: ``jax.clear_caches()`` (every in-memory cache: otherwise a lowering JAX already
   compiled would never ask the persistent cache) and a fresh, empty cache directory. The
   directory is given to JAX as the relative path ``jaxscope-persistent-cache`` inside a fresh
   temporary directory made the working directory for the run: JAX writes the cache directory's
   path into the compile options (``xla_gpu_per_fusion_autotune_cache_dir``, even on CPU), so a
   path that differs per run would change the ``compile_options`` digest from run to run.
3. ``jax.jit(f, static_argnums, static_argnames).lower(*args, **kwargs).compile()`` with the
   persistent cache on; ``internals.cache_key`` captures the arguments of JAX's
   ``cache_key.get``, the key it returned and the key JAX logged, and recomputes each
   ingredient's digest and the running digest with JAX's own helpers. One
   :class:`CacheKeyComputed`.
4. With ``options.perturb``: the same with one thing changed, compiled in the same cache
   directory; its :class:`CacheKeyComputed` lists the ingredients whose digest changed.
5. With ``options.xla_flags``: JAX's flag filter on those flags (:class:`XlaFlagsFiltered`).
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import types
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np

# CACHE_DIR is the probe's too: the tests point JAX's cache at probe.CACHE_DIR.
from jaxscope.exhibit_api import CACHE_DIR as CACHE_DIR
from jaxscope.exhibit_api import (
    InvalidSnippet,
    JaxprStaged,
    ProbeContext,
    Snippet,
    cache_file_suffix,
    capture_cache_keys,
    clean_cache_dir,
    clear_in_memory_caches,
    custom_hook_returning,
    excluded_flags,
    jaxpr_view,
    options_as,
    persistent_cache,
    plan_call,
    recompute_cache_key,
    stripped_module_text,
    xla_flag_filter,
    xla_flags_env,
)

from exhibits.cache_key.events import (
    CacheKeyComputed,
    CacheKeyIngredientView,
    XlaFlagsFiltered,
    XlaFlagVerdictView,
)

from .options import CacheKeyOptions

# The perturbations, in the view's order, with the ingredients each is expected to change.
PERTURBATIONS: dict[str, str] = {
    "body": "f's body: its outputs plus one (same name, same arguments)",
    "shapes": "shapes: the first array argument that can grow one row longer",
    "donate_argnums": "donate_argnums=(first dynamic argument,)",
    "compiler_options": "compiler_options={'xla_cpu_enable_fast_math': True}",
    "xla_flag": "XLA_FLAGS += --xla_cpu_enable_fast_math=true",
    "custom_hook": "cache_key.custom_hook returns 'jaxscope-salt'",
    "name": "the same function named f_renamed",
    "line": "the same function defined 10 lines lower",
}
EXTRA_XLA_FLAG = "--xla_cpu_enable_fast_math=true"
SALT = "jaxscope-salt"
LINE_SHIFT = 10

# Why JAX drops each excluded flag from the key (cache_key.xla_flags_to_exclude_from_cache_key).
_REASONS: tuple[tuple[str, str], ...] = (
    ("--xla_dump_", "changes what XLA dumps to files for debugging, not what it compiles"),
    (
        "--xla_force_host_platform_device_count",
        "sets how many CPU devices the process shows; the devices a program runs on are hashed "
        "separately (accelerator_config, compile_options)",
    ),
    ("--xla_tpu_sdc_checker_", "configures TPU data-corruption monitoring, not the program"),
    (
        "--xla_gpu_cuda_data_dir",
        "a path to the CUDA install; the CUDA version is already in the backend version",
    ),
    (
        "--xla_gpu_experimental_autotune_cache_mode",
        "whether XLA reads or writes its autotuning cache, not the program",
    ),
)


# An XLA_FLAGS token XLA's parser accepts: ``--name`` or ``--name=value``.
FLAG_TOKEN = re.compile(r"--([A-Za-z_][A-Za-z0-9_]*)(=.*)?", re.DOTALL)


def flag_problem(flag: str) -> str | None:
    """Why ``flag`` is no XLA flag, or None. The shape is XLA's (``--name[=value]``); JAX and
    jaxlib expose no list of XLA's flag names, so a well-formed name is judged by XLA's own
    prefix (every flag of its ``DebugOptions`` is ``xla_...``): XLA parses ``XLA_FLAGS`` when
    its backend starts and aborts on a token it does not know."""
    m = FLAG_TOKEN.fullmatch(flag)
    if m is None:
        return "not a flag (XLA flags are --name or --name=value); XLA will reject it at startup"
    if not m.group(1).startswith("xla_"):
        return (
            f"--{m.group(1)} is unknown to jaxscope (XLA's flags are named --xla_...); XLA will "
            "reject it at startup"
        )
    return None


def reason_for(flag: str, kept: bool) -> str:
    """Why a flag is in the key, or why JAX drops it (and when it is no XLA flag at all)."""
    problem = flag_problem(flag)
    if kept and problem is not None:
        return f"hashed into the key as written (JAX filters by name only), but {problem}"
    if kept:
        return "kept: it can change the compiled program, so it is hashed into the key"
    name = flag.split("=")[0]
    for prefix, why in _REASONS:
        if name.startswith(prefix):
            return "dropped: " + why
    return "dropped: in JAX's exclusion list"


@dataclass
class Variant:
    """What to compile: the function, the jit keywords, the arguments, and a context."""

    fun: Callable[..., Any]
    jit_kwargs: dict[str, Any]
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    context: Callable[[], contextlib.AbstractContextManager[None]] = contextlib.nullcontext
    detail: str = ""


def _base(snippet: Snippet) -> Variant:
    return Variant(
        fun=snippet.f,
        jit_kwargs={
            "static_argnums": snippet.static_argnums,
            "static_argnames": snippet.static_argnames,
        },
        args=snippet.args,
        kwargs=snippet.kwargs,
    )


def _plain_function(f: Callable[..., Any], what: str) -> types.FunctionType:
    if not isinstance(f, types.FunctionType):
        raise InvalidSnippet(
            f"the {what} perturbation needs `f` to be a plain Python function (def or lambda), "
            f"got {type(f).__name__}"
        )
    return f


def _copy_function(
    f: types.FunctionType, name: str | None = None, code: types.CodeType | None = None
) -> types.FunctionType:
    g = types.FunctionType(
        code or f.__code__, f.__globals__, name or f.__name__, f.__defaults__, f.__closure__
    )
    g.__kwdefaults__ = f.__kwdefaults__
    g.__qualname__ = name or f.__qualname__
    g.__module__ = f.__module__
    return g


def _plus_one(y: Any) -> Any:
    dtype = getattr(y, "dtype", None)
    if dtype is not None and np.issubdtype(dtype, np.number):
        return y + 1
    return y


def _grow(x: Any) -> Any:
    import jax.numpy as jnp

    return jnp.concatenate([x, x[:1]], axis=0)


def _grown_args(base: Variant) -> tuple[tuple[Any, ...], str]:
    """The arguments with one array argument one row longer (the first whose growth f
    accepts, checked with ``jax.eval_shape``)."""
    static = set(base.jit_kwargs["static_argnums"])
    for i, a in enumerate(base.args):
        if i in static or not hasattr(a, "shape") or len(a.shape) == 0:
            continue
        grown = list(base.args)
        grown[i] = _grow(a)
        try:
            jax.eval_shape(
                functools.partial(jax.jit(base.fun, **base.jit_kwargs), **base.kwargs), *grown
            )
        except Exception:
            continue
        shape = tuple(grown[i].shape)
        return tuple(grown), f"shapes: args[{i}] {tuple(a.shape)} -> {shape}"
    raise InvalidSnippet(
        "the shapes perturbation found no array argument of f that can grow one row longer "
        "(f rejected every such change)"
    )


def perturbed(base: Variant, perturb: str) -> Variant:
    """``base`` with one thing changed (see :data:`PERTURBATIONS`)."""
    if perturb == "body":
        f = base.fun

        @functools.wraps(f)
        def body(*args: Any, **kwargs: Any) -> Any:
            return jax.tree.map(_plus_one, f(*args, **kwargs))

        return Variant(body, base.jit_kwargs, base.args, base.kwargs, detail=PERTURBATIONS[perturb])
    if perturb == "shapes":
        args, detail = _grown_args(base)
        return Variant(base.fun, base.jit_kwargs, args, base.kwargs, detail=detail)
    if perturb == "donate_argnums":
        static = set(base.jit_kwargs["static_argnums"])
        dynamic = [i for i in range(len(base.args)) if i not in static]
        if not dynamic:
            raise InvalidSnippet(
                "the donate_argnums perturbation needs a positional array argument"
            )
        kw = {**base.jit_kwargs, "donate_argnums": (dynamic[0],)}
        return Variant(
            base.fun, kw, base.args, base.kwargs, detail=f"donate_argnums=({dynamic[0]},)"
        )
    if perturb == "compiler_options":
        kw = {**base.jit_kwargs, "compiler_options": {"xla_cpu_enable_fast_math": True}}
        return Variant(base.fun, kw, base.args, base.kwargs, detail=PERTURBATIONS[perturb])
    if perturb == "xla_flag":
        return Variant(
            base.fun,
            base.jit_kwargs,
            base.args,
            base.kwargs,
            context=lambda: xla_flags_env(EXTRA_XLA_FLAG),
            detail=PERTURBATIONS[perturb],
        )
    if perturb == "custom_hook":
        return Variant(
            base.fun,
            base.jit_kwargs,
            base.args,
            base.kwargs,
            context=lambda: custom_hook_returning(SALT),
            detail=PERTURBATIONS[perturb],
        )
    if perturb == "name":
        f = _plain_function(base.fun, "name")
        renamed = _copy_function(f, name=f"{f.__name__}_renamed")
        return Variant(
            renamed, base.jit_kwargs, base.args, base.kwargs, detail=f"named {renamed.__name__}"
        )
    if perturb == "line":
        f = _plain_function(base.fun, "line")
        code = f.__code__.replace(co_firstlineno=f.__code__.co_firstlineno + LINE_SHIFT)
        moved = _copy_function(f, code=code)
        return Variant(
            moved,
            base.jit_kwargs,
            base.args,
            base.kwargs,
            detail=f"{f.__name__} defined at line {code.co_firstlineno} instead of "
            f"{f.__code__.co_firstlineno} (same body, same name)",
        )
    raise InvalidSnippet(f"unknown perturbation {perturb!r}; valid: {', '.join(PERTURBATIONS)}")


def compute_key(variant: Variant, perturbation: str | None, directory: str) -> CacheKeyComputed:
    """Compile ``variant`` with the persistent cache on (in-memory caches cleared first) and
    return JAX's key next to the recomputed one."""
    clear_in_memory_caches()
    with variant.context(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lowered = jax.jit(variant.fun, **variant.jit_kwargs).lower(*variant.args, **variant.kwargs)
        with capture_cache_keys() as capture:
            lowered.compile()
        if not capture.calls:
            raise RuntimeError("JAX compiled without asking the persistent cache for a key")
        call = capture.calls[-1]
        ingredients, key = recompute_cache_key(call)
    logged = [k for _, k in capture.logged]
    jax_key = logged[-1] if logged else ""
    persistent = capture.logged[-1][0] if capture.logged else ""
    suffix = cache_file_suffix()
    files = sorted(os.listdir(directory))
    cache_file = f"{call.key}{suffix}" if f"{call.key}{suffix}" in files else None
    said = [str(w.message).splitlines()[0] for w in caught]
    return CacheKeyComputed(
        perturbation=perturbation,
        perturbation_detail="; ".join([variant.detail, *(f"JAX warned: {m}" for m in said)]),
        function=getattr(variant.fun, "__name__", "f"),
        ingredients=[
            CacheKeyIngredientView(
                name=i.name, digest=i.digest, running=i.running, helper=i.helper, detail=i.detail
            )
            for i in ingredients
        ],
        key=key,
        jax_key=jax_key,
        returned_key=call.key,
        cache_file=cache_file,
        cache_dir=f"./{directory} (in a fresh temporary directory)",
        persistent=persistent,
        equal=key == jax_key == call.key and cache_file is not None,
        stripped_module=stripped_module_text(call.module),
    )


def run(ctx: ProbeContext) -> None:
    """Base key, optionally one perturbed key, optionally the XLA flag filter."""
    snippet = ctx.snippet
    plan = plan_call(snippet)
    with ctx.stage("trace"):
        closed = jax.make_jaxpr(plan.fun, static_argnums=plan.static_argnums)(
            *plan.args, **plan.kwargs
        )
    ctx.emit(JaxprStaged(fun_name=getattr(snippet.f, "__name__", "f"), jaxpr=jaxpr_view(closed)))
    base = _base(snippet)
    perturb = options_as(ctx.options, CacheKeyOptions).perturb
    variant = perturbed(base, perturb) if perturb else None
    with ctx.stage("compile"), clean_cache_dir() as directory:
        with persistent_cache(directory):
            base_key = compute_key(base, None, directory)
            ctx.emit(base_key)
            if variant is not None:
                other = compute_key(variant, perturb, directory)
                before = {i.name: i.digest for i in base_key.ingredients}
                other.changed = [i.name for i in other.ingredients if before[i.name] != i.digest]
                ctx.emit(other)
    xla_flags = options_as(ctx.options, CacheKeyOptions).xla_flags
    if xla_flags is not None:
        verdicts, digest = xla_flag_filter(xla_flags)
        ctx.emit(
            XlaFlagsFiltered(
                flags=[
                    XlaFlagVerdictView(flag=v.flag, kept=v.kept, reason=reason_for(v.flag, v.kept))
                    for v in verdicts
                ],
                digest=digest,
                excluded=excluded_flags(),
            )
        )
