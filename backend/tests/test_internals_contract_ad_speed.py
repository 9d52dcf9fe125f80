"""The private JAX facts the AD exhibits' fast capture relies on (docs/design/0013), one test
each, and the fast paths held to the slow ones they replaced.

``transpose_walk.linearize_vjp`` no longer empties ``ad._linearize_jaxpr`` (a
``weakref_lru_cache``) before each run: it wraps it, tells a miss from a hit by
``cache_info().misses``, notes the primal primitive of each tangent eqn on a miss, puts the notes
back on a hit, and evicts (``evict_weakref``) an entry cached before it watched. The truth for
the walk is a cold cache (every inner jaxpr traced under the recorder, as before) and
``jax.grad``.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax._src import core
from jax._src.interpreters import ad
from jaxscope.internals import transpose_walk as tw

from exhibits.transpose.walk_events import linear_staged, stepped


def f(x: Any) -> Any:
    # jnp.mean and jax.nn.gelu are jitted helpers: eagerly, each is linearised by
    # ad.linearize_jaxpr (cached) and its tangent eqns inlined into the outer linear jaxpr.
    h = jax.nn.gelu(x * x + 1.0)
    return jnp.mean(jnp.sqrt(h)) + jnp.mean(jnp.tanh(x))


X = np.linspace(-1.0, 1.0, 6, dtype=np.float32)


def test_linearize_jaxpr_cache_counts_misses_and_evicts_by_jaxpr() -> None:
    cache = ad._linearize_jaxpr
    closed = jax.make_jaxpr(jnp.sin)(1.0)
    misses = cache.cache_info().misses
    first = ad.linearize_jaxpr(closed, [True], is_vjp=True)
    assert cache.cache_info().misses == misses + 1
    again = ad.linearize_jaxpr(closed, [True], is_vjp=True)
    assert cache.cache_info().misses == misses + 1  # a hit: the same objects back
    assert again[-1] is first[-1]
    cache.evict_weakref(closed)
    fresh = ad.linearize_jaxpr(closed, [True], is_vjp=True)
    assert cache.cache_info().misses == misses + 2
    assert fresh[-1] is not first[-1]
    # (primal_jaxpr, num_res, nzs_out, fwds, tangent_jaxpr): the tangent jaxpr comes last.
    assert len(first) == 5 and isinstance(first[-1], core.ClosedJaxpr)
    assert all(isinstance(e, core.JaxprEqn) for e in first[-1].jaxpr.eqns)


def test_linearize_jaxpr_calls_the_cache_through_the_module_global() -> None:
    cache = ad._linearize_jaxpr
    calls: list[int] = []

    def counting(*args: Any) -> Any:
        calls.append(1)
        return cache(*args)

    ad._linearize_jaxpr = counting  # type: ignore[assignment]
    try:
        jax.vjp(f, X)
    finally:
        ad._linearize_jaxpr = cache
    assert calls, "jax.vjp of jitted helpers no longer goes through ad._linearize_jaxpr"


def _walk(x: Any) -> tuple[list[str], list[bytes], str, list[str | None]]:
    lin = tw.linearize_vjp(f, [x])
    staged = linear_staged(lin).model_dump_json()
    result = tw.walk(lin, tw.seed_cotangents(lin))
    return (
        [stepped(s).model_dump_json() for s in result.steps],
        [np.asarray(c).tobytes() for c in result.cotangents],
        staged,
        [s.primal_primitive for s in result.steps],
    )


def test_walk_on_a_warm_cache_is_the_walk_on_a_cold_one() -> None:
    ad._linearize_jaxpr.cache_clear()
    cold = _walk(X)  # every inner jaxpr traced under the recorder
    assert cold == _walk(X)  # warm: the notes put back
    ad._linearize_jaxpr.cache_clear()
    jax.vjp(f, X)  # cached before the recorder watched: evicted and traced again
    assert cold == _walk(X)
    # The inner helpers' tangent eqns are attributed to their primal primitives.
    assert {"sqrt", "tanh", "mul"} <= {p for p in cold[3] if p is not None}
    # And the gradient is jax.grad's, bit for bit.
    assert cold[1] == [np.asarray(jax.grad(f)(X)).tobytes()]


def test_a_shorter_preview_is_a_prefix_of_the_longer_one() -> None:
    from jaxscope.internals.views import PREVIEW_CHARS, preview_value

    rng = np.random.default_rng(0)
    values = [
        np.float32(1.5),
        rng.standard_normal(3).astype(np.float32),
        rng.standard_normal((8, 16)).astype(np.float32),
        rng.standard_normal((7, 7)) * 1e6,
        np.arange(40, dtype=np.int32),
        rng.standard_normal((4, 200, 3)),
    ]
    for x in values:
        for short in (tw.STEP_PREVIEW_CHARS, 10, 120):
            assert tw.shorter_preview(preview_value(x, PREVIEW_CHARS), short) == preview_value(
                x, short
            )


def test_the_plain_backward_pass_is_the_walk_and_jax_grad_bit_for_bit() -> None:
    # The bench's floor runs ``plain_backward_pass``: it must be the walk's computation.
    params = {"w": np.linspace(-0.5, 0.7, 12, dtype=np.float32).reshape(3, 4), "x": X[:3]}

    def loss(p: Any) -> Any:
        return jnp.sum(jnp.tanh(p["x"] @ p["w"]) ** 2)

    lin = tw.linearize_vjp(loss, [params])
    seed = tw.seed_cotangents(lin)
    plain = tw.plain_backward_pass(lin, seed)
    walked = tw.walk(lin, seed).cotangents
    want = jax.tree.leaves(jax.grad(loss)(params))
    assert [np.asarray(c).tobytes() for c in plain] == [np.asarray(c).tobytes() for c in walked]
    assert [np.asarray(c).tobytes() for c in plain] == [np.asarray(c).tobytes() for c in want]
    assert [np.asarray(c).shape for c in plain] == [(3, 4), (3,)]
