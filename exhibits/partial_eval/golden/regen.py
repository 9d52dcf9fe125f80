"""Regenerate ``exhibits/partial_eval/golden/<example>.json`` from plain JAX (never from the
probe), and the plain-JAX references the tests compare the probe with.

For each example (this exhibit's ``examples/*.py`` and the shared ``mlp_loss``, ``attention``,
``rnn_loss``): the JVP jaxpr ``jax.make_jaxpr(lambda p, t: jax.jvp(g, p, t))`` (``g`` the user's
call with the static arguments put back), split by
``jax._src.interpreters.partial_eval.partial_eval_jaxpr_nounits`` with primals known and
tangents unknown; the known and unknown texts, ``out_unknowns``, the residual avals; and the
number of residuals ``jax._src.ad_checkpoint.saved_residuals`` reports for ``jax.checkpoint``
with each argument-free policy, and how many of those are the primal inputs themselves
(``saved_inputs``: residuals of ``jax.vjp`` of the checkpointed call that are inputs of its
jaxpr, read from the jaxpr, not from JAX's descriptions).
Run: ``.venv/bin/python exhibits/partial_eval/golden/regen.py``.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import jax
import numpy as np
from jax._src import ad_checkpoint
from jax._src.interpreters import partial_eval as pe

HERE = Path(__file__).resolve().parent
EXHIBITS = HERE.parents[1]
EXAMPLES = {
    **{p.stem: p for p in sorted((HERE.parent / "examples").glob("*.py"))},
    "mlp_loss": EXHIBITS / "tracing" / "examples" / "mlp_loss.py",
    "attention": EXHIBITS / "tracing" / "examples" / "attention.py",
    "rnn_loss": EXHIBITS / "jvp" / "examples" / "rnn_loss.py",
}
POLICIES = (
    "everything_saveable",
    "nothing_saveable",
    "dots_saveable",
    "dots_with_no_batch_dims_saveable",
)


def load(path: Path) -> dict[str, Any]:
    """Execute an example as a snippet would be (file name ``<snippet>``); its namespace."""
    namespace: dict[str, Any] = {"__name__": "snippet"}
    exec(compile(path.read_text(), "<snippet>", "exec"), namespace)
    return namespace


def _tuple(value: Any) -> tuple[Any, ...]:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


def call_of(ns: dict[str, Any]) -> tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]:
    """``(g, dyn_args, kwargs)``: ``g(dyn_args, kwargs)`` calls ``f`` with static args back."""
    full = tuple(ns["args"])
    static = {i % len(full) for i in _tuple(ns.get("static_argnums", ()))}
    names = _tuple(ns.get("static_argnames", ()))
    kwargs = dict(ns.get("kwargs", {}))
    fun = functools.partial(ns["f"], **{k: v for k, v in kwargs.items() if k in names})
    dyn_kwargs = {k: v for k, v in kwargs.items() if k not in names}
    dyn = tuple(a for i, a in enumerate(full) if i not in static)

    # parameter names as jaxscope's: JAX names argument residuals after them (args[0]['w1'])
    def g(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        it = iter(args)
        return fun(*[full[i] if i in static else next(it) for i in range(len(full))], **kwargs)

    return g, dyn, dyn_kwargs


def short(aval: Any) -> str:
    """``aval.str_short(short_dtypes=True)``: ``f32[3]``, as the jaxpr text writes types."""
    return str(aval.str_short(short_dtypes=True))


def tangent_like(x: Any, rng: np.random.Generator | None = None) -> Any:
    """A tangent for primal ``x``: random (or ones) of its dtype when inexact, else float0."""
    a = np.asarray(x)
    if np.issubdtype(a.dtype, np.inexact):
        dtype = jax.typeof(x).dtype
        if rng is None:
            return np.ones(a.shape, dtype)
        return rng.standard_normal(a.shape).astype(dtype)
    return np.zeros(a.shape, jax.dtypes.float0)


def jvp_jaxpr(ns: dict[str, Any]) -> Any:
    """The ClosedJaxpr of ``jax.jvp`` of the user's call (primal leaves, then tangent ones)."""
    g, dyn, kw = call_of(ns)
    primals = (dyn, kw)
    tangents = jax.tree.map(tangent_like, primals)
    return jax.make_jaxpr(lambda p, t: jax.jvp(g, p, t))(primals, tangents)


def split(ns: dict[str, Any], known: Sequence[bool] | None = None) -> Any:
    """``pe.partial_eval_jaxpr_nounits`` on :func:`jvp_jaxpr` (default: primals known)."""
    closed = jvp_jaxpr(ns)
    n = len(closed.jaxpr.invars)
    if known is None:
        known = [i < n // 2 for i in range(n)]
    return pe.partial_eval_jaxpr_nounits(closed, [not k for k in known], instantiate=False)


def float_leaves(
    ns: dict[str, Any],
) -> tuple[list[Any], Callable[[Callable[..., Any]], Callable[[list[Any]], Any]]]:
    """The inexact leaves of ``(dyn_args, kwargs)`` and ``loss(fn)(leaves)`` rebuilding the
    rest (the sum of the outputs when ``f`` is not a scalar)."""
    _, dyn, kw = call_of(ns)
    leaves, tree = jax.tree.flatten((dyn, kw))
    is_f = [np.issubdtype(np.asarray(x).dtype, np.inexact) for x in leaves]

    def loss(fn: Callable[..., Any]) -> Callable[[list[Any]], Any]:
        def h(fl: list[Any]) -> Any:
            it = iter(fl)
            a, k = jax.tree.unflatten(
                tree, [next(it) if f else x for x, f in zip(leaves, is_f, strict=True)]
            )
            out = fn(a, k)
            return sum(jax.numpy.sum(o) for o in jax.tree.leaves(out))

        return h

    return [x for x, f in zip(leaves, is_f, strict=True) if f], loss


def saved(ns: dict[str, Any], policy: Any, checkpointed: bool = True) -> list[tuple[str, str]]:
    """``saved_residuals`` of (checkpointed) ``g`` as ``(aval, description)`` strings."""
    g, dyn, kw = call_of(ns)
    fn = jax.checkpoint(g, policy=policy) if checkpointed else g
    return [(short(a), d) for a, d in ad_checkpoint.saved_residuals(fn, dyn, kw)]


def saved_inputs(ns: dict[str, Any], policy: Any) -> int:
    """How many residuals of ``jax.vjp(jax.checkpoint(g, policy=policy))`` are its inputs: the
    outputs of ``make_jaxpr`` of the vjp (the pullback's leaves come last) that are invars."""
    g, dyn, kw = call_of(ns)
    fn = jax.checkpoint(g, policy=policy)
    leaves, tree = jax.tree.flatten((dyn, kw))

    def vjp_of(*flat: Any) -> Any:
        return jax.vjp(lambda *x: fn(*jax.tree.unflatten(tree, x)), *flat)

    closed, shape = jax.make_jaxpr(vjp_of, return_shape=True)(*leaves)
    n_res = len(jax.tree.leaves(shape[1]))
    res = closed.jaxpr.outvars[len(closed.jaxpr.outvars) - n_res :]
    # by identity: a literal outvar is no input (and no new private import for its type)
    return sum(1 for v in res if any(v is i for i in closed.jaxpr.invars))


def golden(path: Path) -> dict[str, Any]:
    ns = load(path)
    known, unknown, out_uk, res = split(ns)
    return {
        "example": path.stem,
        "jax_version": jax.__version__,
        "known_jaxpr": str(known),
        "unknown_jaxpr": str(unknown),
        "out_unknowns": list(out_uk),
        "residual_avals": [short(a) for a in res],
        "saved_counts": {p: len(saved(ns, getattr(jax.checkpoint_policies, p))) for p in POLICIES},
        "saved_inputs": {
            p: saved_inputs(ns, getattr(jax.checkpoint_policies, p)) for p in POLICIES
        },
    }


def main() -> None:
    for name, path in EXAMPLES.items():
        out = HERE / f"{name}.json"
        out.write_text(json.dumps(golden(path), indent=2, sort_keys=True) + "\n")
        print("wrote", out)


if __name__ == "__main__":
    main()
