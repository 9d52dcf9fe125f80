"""The prng exhibit's events ("keys are values").

``random_call_recorded``: one call of a public ``jax.random`` function that the snippet's ``f``
made (a key made by ``key``/``PRNGKey``, a ``split``, a ``fold_in``, a draw such as ``normal``),
in the order it ran, with the key it read, the keys it made (``jax.random.key_data`` of each)
and the snippet line of the call. ``parent`` links a call to the call that made its key, so the
events are the key tree.

``key_reuse_checked``: what ``jax.debug_key_reuse`` reported when ``f`` ran under it (typed keys
only), plus this exhibit's own check for raw ``uint32`` keys, which JAX's checker cannot see.

Imports only pydantic and ``jaxscope.protocol``.
"""

from __future__ import annotations

from typing import Literal

from jaxscope.exhibit_api import EventBase, WireModel

# What a jax.random call does to keys: ``seed`` makes one from a seed (``key``, ``PRNGKey``,
# ``wrap_key_data``); ``split``/``fold_in``/``clone`` derive new keys from one; ``draw`` turns a
# key into random values (``normal``, ``uniform``, ``bits``...).
RandomOpKind = Literal["seed", "split", "fold_in", "clone", "draw"]


class RandomCallRecorded(EventBase):
    """One call of a public ``jax.random`` function inside ``f``.

    ``op`` is the function's name (``split``, ``normal``). ``index`` counts the calls from 0.
    ``key_in`` is ``jax.random.key_data`` of the key it read, flattened (None for a seed, for a
    batch of keys, or for a key that is a tracer under ``vmap``); ``keys_out`` the data of each
    key it made (``split``: one per new key; a draw makes none). ``typed`` is whether the key is a
    typed key (``jax.random.key``; dtype ``key<fry>``) rather than a raw ``uint32[2]`` array
    (``jax.random.PRNGKey``). ``consumes`` is whether JAX's key-reuse rules consume the key read
    (``split`` and draws do; ``fold_in`` and ``clone`` do not). ``parent``: the ``index`` of the
    call that made the key read (None: a seed, or a key that came from ``args``)."""

    type: Literal["random_call_recorded"] = "random_call_recorded"
    index: int
    op: str
    kind: RandomOpKind
    line: int | None
    code: str | None
    key_in: list[int] | None
    keys_out: list[list[int]]
    typed: bool
    consumes: bool
    parent: int | None
    # the impl's name (``threefry2x32``) of the key read or made
    impl: str | None


# In a finding of randomness that does not advance (``advance.py``, or JAX's checker on a jitted
# call), the text between what was seen and the fix (``artefacts.py`` splits them again).
FIX_MARK = " Fix: "


class KeyReuseFinding(WireModel):
    """One reuse of a key: ``line`` the call that used the key again, ``first_line`` the earlier
    call that consumed it (None when the recorded tree does not show it). ``checker``: who found
    it, JAX's ``jax.debug_key_reuse`` (typed keys) or jaxscope's own check over the recorded
    tree (raw ``uint32`` keys, the same key data consumed twice by splits/draws). ``message``
    is JAX's ``KeyReuseError`` text for the former."""

    line: int | None
    first_line: int | None
    checker: Literal["jax.debug_key_reuse", "jaxscope"]
    message: str | None = None


class KeyReuseChecked(EventBase):
    """The reuse findings of the run. ``typed_keys``/``raw_keys``: whether ``f`` used typed keys
    and raw ``uint32`` keys (the checker sees only the former). ``calls_left_out``: the recorded
    calls after the first ``MAX_CALLS`` (``probe.py``), checked but not sent as events."""

    type: Literal["key_reuse_checked"] = "key_reuse_checked"
    findings: list[KeyReuseFinding]
    typed_keys: bool
    raw_keys: bool
    calls_left_out: int = 0


EVENTS: tuple[type[EventBase], ...] = (RandomCallRecorded, KeyReuseChecked)
