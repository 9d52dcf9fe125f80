"""Which positional arguments a gradient exhibit differentiates: the snippet's ``argnums``,
checked and normalised as ``jax.grad(f, argnums=...)`` does, or the floating ones.

Used by the transpose and nan_finder exhibits, which walk ``jax.grad(f, argnums)``'s backward
pass and must take the same arguments ``jax.grad`` would. JAX's own validation is run on a
stand-in function (never the user's ``f``) and float stand-in arguments, so that it checks the
type and range of ``argnums`` only; its error is raised as an :class:`InvalidSnippet` naming
``argnums`` with JAX's text.

Rules (``n = len(args)``):

* ``argnums`` set: an int or a sequence of ints; each in ``[-n, n)`` (negative indices count from
  the end, as in ``jax.grad``). ``()`` is refused (``jax.grad`` itself fails on it with
  ``max() arg is an empty sequence``), and so is a position given twice (``(0, 0)``, ``(0, -n)``:
  ``jax.grad`` fails on it inside its own bookkeeping, or silently). A static position or a
  complex argument is refused. An int (or bool) argument gets ``jax.grad``'s own int-input
  ``TypeError``, raised by ``jax.grad`` of a stand-in on that argument and marked with the
  ``argnums`` line (not left to the exhibit, where it would point at ``f``'s ``def``).
* ``argnums`` not set: every non-static positional argument whose leaves are all real floating
  point (at least one leaf). None is an error that says so, with what ``jax.grad(f)`` would
  raise on the same arguments.
* Complex arguments are never differentiated: the exhibits walk real gradients only.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp

from jaxscope.finite_diff import is_float_leaf
from jaxscope.sandbox.probe_api import blame_line, snippet_setting_line
from jaxscope.sandbox.snippet import InvalidSnippet

__all__ = ["choose_argnums", "is_complex_arg"]

REAL_ONLY = (
    "this exhibit walks real gradients only: jax.grad needs holomorphic=True for a complex "
    "output, and a complex input's cotangent is not the real gradient the walk checks"
)


def _stand_in(*args: Any, **kwargs: Any) -> Any:
    """A scalar function of anything: lets ``jax.grad`` validate ``argnums`` without ``f``."""
    del args, kwargs
    return 0.0


def is_complex_arg(arg: Any) -> bool:
    """True when a leaf of ``arg`` has a complex dtype (or is a Python ``complex``)."""
    for leaf in jax.tree.leaves(arg):
        if isinstance(leaf, complex):
            return True
        dtype = getattr(leaf, "dtype", None)
        if dtype is not None and bool(jnp.issubdtype(dtype, jnp.complexfloating)):
            return True
    return False


def _describe(arg: Any) -> str:
    leaves = jax.tree.leaves(arg)
    if not leaves:
        return "an empty pytree"
    kinds = sorted({str(getattr(x, "dtype", type(x).__name__)) for x in leaves})
    return "/".join(kinds)


def _jax_says(argnums: Any, n: int) -> None:
    """Run ``jax.grad(stand_in, argnums)`` on ``n`` float arguments: JAX's own check of the type
    and range of ``argnums``; its error becomes an :class:`InvalidSnippet`."""
    try:
        jax.grad(_stand_in, argnums=argnums)(*([0.0] * n))
    except (TypeError, ValueError, IndexError) as exc:
        raise InvalidSnippet(
            f"`argnums = {argnums!r}` is not valid for jax.grad with {n} positional "
            f"argument{'s' if n != 1 else ''} in `args`: {type(exc).__name__}: {exc}"
        ) from exc


def _explicit(chosen: Any, args: tuple[Any, ...], static: set[int]) -> tuple[int, ...]:
    n = len(args)
    if isinstance(chosen, (list, tuple)) and len(chosen) == 0:
        raise InvalidSnippet(
            f"`argnums = {chosen!r}` selects no argument: there is nothing to differentiate "
            "(jax.grad itself fails on it: ValueError: max() arg is an empty sequence). "
            "Name at least one position, e.g. `argnums = 0`."
        )
    _jax_says(chosen, n)
    items = chosen if isinstance(chosen, (list, tuple)) else (chosen,)
    indices = [operator.index(i) for i in items]
    out = tuple(i + n if i < 0 else i for i in indices)
    repeated = sorted({i for i in out if out.count(i) > 1})
    if repeated:
        # jax.grad takes a repeated position as is and then fails inside its own bookkeeping
        # (TypeError: unsupported operand type(s) for *: 'NoneType' and 'int'), or not at all.
        which = ", ".join(str(i) for i in repeated)
        negative = (
            " (a negative position counts from the end of `args`)" if min(indices) < 0 else ""
        )
        raise InvalidSnippet(
            f"`argnums = {chosen!r}` repeats position{'s' if len(repeated) > 1 else ''} "
            f"{which}{negative}: name each argument to differentiate once"
        )
    for i in out:
        if i in static:
            raise InvalidSnippet(
                f"`argnums = {chosen!r}` selects args[{i}], which is static (`static_argnums`): "
                "a static argument is a Python constant of the trace and has no gradient"
            )
        if is_complex_arg(args[i]):
            raise InvalidSnippet(
                f"`argnums = {chosen!r}` selects args[{i}], which is complex "
                f"({_describe(args[i])}): {REAL_ONLY}"
            )
    _jax_checks_inputs(chosen, args, out)
    return out


def _jax_checks_inputs(chosen: Any, args: tuple[Any, ...], out: tuple[int, ...]) -> None:
    """JAX's own check of the selected arguments' dtypes: ``jax.grad(stand_in, argnums)`` on the
    selected arguments (float stand-ins elsewhere) raises its ``TypeError`` for an int or bool
    input ("grad requires real- or complex-valued inputs ... int32"), which is raised as is:
    ``argnums`` chose that argument, so the caller marks its line."""
    if all(is_float_leaf(x) for i in out for x in jax.tree.leaves(args[i])):
        return
    stand_ins: list[Any] = [0.0] * len(args)
    for i in out:
        stand_ins[i] = args[i]
    jax.grad(_stand_in, argnums=chosen)(*stand_ins)


def _none_floating(args: tuple[Any, ...], static: set[int]) -> InvalidSnippet:
    if not args:
        what = "`args` is empty"
    else:
        parts = []
        for i, a in enumerate(args):
            kind = "static" if i in static else _describe(a)
            parts.append(f"args[{i}]: {kind}")
        what = "; ".join(parts)
    message = (
        f"f has no floating-point argument to differentiate ({what}). jax.grad differentiates "
        "float (or complex) inputs only; give f a float argument (e.g. `jnp.float32(3)` or "
        "`3.0` instead of `3`)."
    )
    if any(is_complex_arg(a) for i, a in enumerate(args) if i not in static):
        message += f" Complex arguments are not differentiated here: {REAL_ONLY}."
    try:
        jax.grad(_stand_in)(*args)
    except Exception as exc:  # JAX's own words for the same arguments, quoted in the message
        message += f" jax.grad(f)(*args) raises: {type(exc).__name__}: {exc}"
    return InvalidSnippet(message)


def choose_argnums(
    args: tuple[Any, ...], static_argnums: Sequence[int], chosen: Any
) -> tuple[int, ...]:
    """The positions of ``args`` to differentiate, non-negative, in the order given.

    ``args``: the snippet's positional arguments (static ones included); ``static_argnums``:
    their static positions, already non-negative (``CallPlan.normalized_argnums()``);
    ``chosen``: the snippet's ``argnums`` (``None`` when it sets none). Raises
    :class:`InvalidSnippet` as the module docstring says (or JAX's ``TypeError`` for an int
    argument chosen by ``argnums``); one about ``argnums`` is marked with the snippet line
    that sets it (:func:`~jaxscope.sandbox.probe_api.blame_line`).
    """
    static = set(static_argnums)
    if chosen is not None:
        try:
            return _explicit(chosen, args, static)
        except (InvalidSnippet, TypeError) as exc:  # TypeError: JAX's, on an int argument
            blame_line(exc, snippet_setting_line("argnums"))
            raise
    out = []
    for i, a in enumerate(args):
        leaves = jax.tree.leaves(a)
        if i not in static and leaves and all(is_float_leaf(x) for x in leaves):
            out.append(i)
    if not out:
        raise _none_floating(args, static)
    return tuple(out)
