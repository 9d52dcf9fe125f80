"""The cache_key exhibit's events: ``cache_key_computed`` (the persistent cache key, ingredient
by ingredient) and ``xla_flags_filtered`` (each XLA flag kept in or dropped from the key).

It imports only pydantic and ``jaxscope.protocol`` (the core views); ``jaxscope.events`` puts
``EVENTS`` into the event union (see its docstring).
"""

from __future__ import annotations

from typing import Literal

from jaxscope.exhibit_api import EventBase, WireModel


class CacheKeyIngredientView(WireModel):
    """One ingredient of the persistent cache key (``jax._src.cache_key.get``'s ``entries``):
    ``digest`` is the sha256 hex of what its helper (``helper``) feeds the hash alone, ``running``
    the hex of the running sha256 after it; ``detail`` says what was hashed."""

    name: str
    digest: str
    running: str
    helper: str = ""
    detail: str = ""


class CacheKeyComputed(EventBase):
    """The persistent compilation cache key, ingredient by ingredient in JAX's order, each with
    its digest and the running digest; ``key`` as recomputed with JAX's per-ingredient helpers,
    ``jax_key`` as JAX logged it (``compiler``: ``PERSISTENT COMPILATION CACHE MISS/hit ... with
    key``), ``returned_key`` what ``cache_key.get`` returned, ``cache_file`` the file JAX wrote
    (``<key>-cache``) in ``cache_dir``; ``persistent`` is ``miss`` or ``hit``. A perturbed key
    (``perturbation``: body, shapes, donate_argnums, compiler_options, xla_flag, custom_hook,
    name, line) lists the ingredients whose digest differs from the base key in ``changed``.
    ``stripped_module`` is the module text after ``strip-debuginfo`` (what ``computation``
    hashes, as bytecode)."""

    type: Literal["cache_key_computed"] = "cache_key_computed"
    perturbation: str | None = None
    perturbation_detail: str = ""
    function: str = ""
    ingredients: list[CacheKeyIngredientView]
    changed: list[str] = []
    key: str
    jax_key: str
    returned_key: str = ""
    cache_file: str | None = None
    cache_dir: str = ""
    persistent: str = ""
    equal: bool
    stripped_module: str = ""


class XlaFlagVerdictView(WireModel):
    """One XLA flag through ``cache_key._hash_xla_flags``: ``kept`` in the key or dropped (it is
    in ``xla_flags_to_exclude_from_cache_key``), and why."""

    flag: str
    kept: bool
    reason: str = ""


class XlaFlagsFiltered(EventBase):
    """The cache_key exhibit's XLA flag filter: each flag as JAX's ``_hash_xla_flags`` judged it
    (sorted, as JAX hashes them), the resulting "XLA flags" digest, JAX's exclusion list."""

    type: Literal["xla_flags_filtered"] = "xla_flags_filtered"
    flags: list[XlaFlagVerdictView]
    digest: str
    excluded: list[str] = []


# This exhibit's events, in the order the union lists them (checked: every event class
# defined here must be listed, see ``jaxscope.events``).
EVENTS: tuple[type[EventBase], ...] = (
    CacheKeyComputed,
    XlaFlagsFiltered,
)
