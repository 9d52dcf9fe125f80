"""What a gradient exhibit differentiates when ``f`` returns a pytree: the first-leaf rule.

``jax.grad`` needs a scalar output. A train step returns a pytree, ``(loss, new_params,
opt_state)``, and ``jax.grad(step)`` raises ``TypeError: Gradient only defined for
scalar-output functions. Output was (Array(2.31, ...), State({...}), ...)`` with the whole
output value printed (15-20 KB for a real model). The transpose, nan_finder and
transform_order exhibits apply one rule instead (issue 14, class D of
``docs/design/real-programs-matrix.md``):

* ``f``'s output is a pytree (not a single array: a tuple, a dict, an ``nnx.State``...) whose
  first leaf in ``jax.tree.leaves`` order is a floating-point scalar: differentiate that leaf,
  i.e. the exhibit works on ``lambda *a: jax.tree.leaves(f(*a))[0]``, and says so
  (:attr:`OutputSeen.note`, with the leaf's key path from ``jax.tree_util.tree_flatten_with_path``).
* Anything else is left to JAX: ``f``'s output is returned unchanged and ``jax.grad`` raises its
  own error. When that error printed the output's value, :func:`shorten_scalar_error` cuts it to
  the output's structure (leaves as avals, at most :data:`MAX_STRUCTURE_CHARS` characters).

:class:`OutputRule` applies the rule where it can be decided for free: inside the call, on the
output ``f`` returned (arrays or tracers), so no extra trace of ``f`` is needed.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp

__all__ = [
    "MAX_STRUCTURE_CHARS",
    "SCALAR_OUTPUT",
    "OutputRule",
    "OutputSeen",
    "aval_text",
    "describe_output",
    "shorten_scalar_error",
]

# JAX's message (``jax._src.api._check_scalar``), up to where it prints the output.
SCALAR_OUTPUT = "Gradient only defined for scalar-output functions."
_PRINTED_OUTPUT = SCALAR_OUTPUT + " Output was "
# The output's structure in a note or an error: at most this many characters.
MAX_STRUCTURE_CHARS = 240


class _Shown:
    """A leaf replaced by its aval's short text, printed bare in the container's repr."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def aval_text(leaf: Any) -> str:
    """``f32[3]``: the short aval of ``leaf`` (its type's name when it has none)."""
    try:
        return str(jax.typeof(leaf).str_short(short_dtypes=True))
    except Exception:
        return type(leaf).__name__


def _shape_and_float(leaf: Any) -> tuple[tuple[int, ...] | None, bool]:
    try:
        aval = jax.typeof(leaf)
    except Exception:
        return None, False
    shape = getattr(aval, "shape", None)
    dtype = getattr(aval, "dtype", None)
    is_float = dtype is not None and bool(jnp.issubdtype(dtype, jnp.floating))
    return (tuple(shape) if shape is not None else None), is_float


def _cut(text: str, limit: int = MAX_STRUCTURE_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass(frozen=True)
class OutputSeen:
    """The structure of one output of ``f``: ``leaves`` how many leaves, ``is_leaf`` whether the
    output is one array (no container), ``kind`` the container's type name (``tuple``,
    ``dict``, ``State``), ``structure`` its repr with every leaf replaced by its aval
    (``(f32[], {'w': f32[3,4]})``, cut to :data:`MAX_STRUCTURE_CHARS`), ``first_path`` the
    first leaf's key path (``jax.tree_util.keystr``: ``[0]``, ``['loss']``; ``""`` for a bare
    array), ``first_aval`` its aval (``f32[]``) and ``first_dtype`` its dtype's name."""

    leaves: int
    is_leaf: bool
    kind: str
    structure: str
    first_path: str | None
    first_aval: str | None
    first_dtype: str | None
    first_shape: tuple[int, ...] | None
    first_is_float: bool

    @property
    def first_leaf_rule(self) -> bool:
        """The rule applies: a pytree output whose first leaf is a floating-point scalar."""
        return not self.is_leaf and self.first_is_float and self.first_shape == ()

    @property
    def what(self) -> str:
        """``a tuple of 3 leaves: (f32[], ...)`` (the structure said briefly)."""
        plural = "leaf" if self.leaves == 1 else "leaves"
        return f"a {self.kind} of {self.leaves:,} {plural}: {self.structure}"

    def note(self, subject: str = "f") -> str:
        """The sentence an exhibit shows when the rule applied (``subject``: the function whose
        output it is, ``f`` or e.g. ``vmap(f)`` inside a transform stack)."""
        plural = "leaf" if self.leaves == 1 else "leaves"
        return (
            f"{subject} returns a pytree of {self.leaves:,} {plural} ({self.kind}); "
            f"differentiating its first leaf, a {self.first_dtype} scalar (a train step's loss): "
            f"output path {self.first_path}. jax.grad needs a scalar output, so the gradient "
            f"shown is jax.grad(lambda *a: jax.tree.leaves({subject}(*a))[0])."
        )

    def view_fields(self, subject: str = "f") -> dict[str, Any]:
        """The fields of the exhibits' ``OutputLeafView`` (``exhibits/transpose/events.py``)."""
        return {
            "leaves": self.leaves,
            "kind": self.kind,
            "structure": self.structure,
            "path": self.first_path or "",
            "aval": self.first_aval or "",
            "note": self.note(subject),
        }

    @property
    def one_nonscalar_float(self) -> bool:
        """The output is one floating array that is not a scalar: the transpose and nan_finder
        exhibits walk it from an all-ones cotangent (the gradient of ``sum(f)``,
        ``transpose_walk.grad_seed``), the other fallback for a non-scalar output."""
        return self.is_leaf and self.first_is_float and self.first_shape != ()

    def refusal(self) -> str:
        """Why the rule did not apply (for an output it could not differentiate)."""
        if self.is_leaf or self.leaves == 0:
            return ""
        return (
            f" Its first leaf, output{self.first_path}, is {self.first_aval}, not a "
            "floating-point scalar: jaxscope differentiates a pytree output's first leaf only "
            "when it is one (a train step returning (loss, new_params, ...)). Return the loss "
            "first, or differentiate a loss function."
        )


def describe_output(out: Any) -> OutputSeen:
    """The :class:`OutputSeen` of ``out`` (arrays, tracers, Python scalars or
    ``ShapeDtypeStruct`` leaves)."""
    flat, treedef = jax.tree_util.tree_flatten_with_path(out)
    is_leaf = jax.tree_util.treedef_is_leaf(treedef) and len(flat) == 1
    if flat:
        path, first = flat[0]
        first_path: str | None = jax.tree_util.keystr(path)
        first_aval: str | None = aval_text(first)
        first_shape, is_float = _shape_and_float(first)
        try:
            first_dtype: str | None = str(jnp.dtype(jax.typeof(first).dtype).name)
        except Exception:
            first_dtype = None
    else:
        first_path = first_aval = first_dtype = first_shape = None
        is_float = False
    try:
        shown = jax.tree.map(lambda leaf: _Shown(aval_text(leaf)), out)
        structure = _cut(repr(shown))
    except Exception:
        structure = _cut(str(treedef))
    return OutputSeen(
        leaves=len(flat),
        is_leaf=is_leaf,
        kind=type(out).__name__,
        structure=structure,
        first_path=first_path,
        first_aval=first_aval,
        first_dtype=first_dtype,
        first_shape=first_shape,
        first_is_float=is_float,
    )


class OutputRule:
    """Wraps functions for ``jax.grad`` with the first-leaf rule (module docstring) and keeps
    what their output was: ``seen`` the first output a wrapped function returned (``None`` until
    one returned)."""

    def __init__(self) -> None:
        self.seen: OutputSeen | None = None

    @property
    def applied(self) -> bool:
        """True when a wrapped function's output was cut to its first leaf."""
        return self.seen is not None and self.seen.first_leaf_rule

    def wrap(self, fun: Callable[..., Any]) -> Callable[..., Any]:
        """``fun`` returning its first leaf when the rule applies, else its output unchanged
        (same name, signature and ``__wrapped__``, for JAX's debug info)."""

        @functools.wraps(fun)
        def first_leaf(*args: Any, **kwargs: Any) -> Any:
            out = fun(*args, **kwargs)
            seen = describe_output(out)
            if self.seen is None:
                self.seen = seen
            return jax.tree.leaves(out)[0] if seen.first_leaf_rule else out

        return first_leaf

    def shorten(self, exc: BaseException) -> BaseException:
        """:func:`shorten_scalar_error` with what the wrapped function returned."""
        return shorten_scalar_error(exc, self.seen)


def shorten_scalar_error(exc: BaseException, seen: OutputSeen | None) -> BaseException:
    """``exc`` itself, its message cut when it is ``jax.grad``'s scalar-output ``TypeError``
    that printed the output's value (``Output was (Array(...), ...)``): JAX's first sentence,
    then the output's structure (``seen``, else the first :data:`MAX_STRUCTURE_CHARS`
    characters of JAX's text) and how long JAX's text was. The class and traceback are kept
    (the user's line is still found); other exceptions are returned untouched."""
    if not isinstance(exc, TypeError) or len(exc.args) != 1:
        return exc
    text = exc.args[0]
    if not isinstance(text, str) or not text.startswith(_PRINTED_OUTPUT):
        return exc
    printed = text[len(_PRINTED_OUTPUT) :]
    if seen is not None:
        short = f"{SCALAR_OUTPUT} Output was {seen.what}.{seen.refusal()}"
    elif len(printed) > MAX_STRUCTURE_CHARS:
        short = f"{_PRINTED_OUTPUT}{_cut(printed)}"
    else:
        return exc
    if len(printed) > MAX_STRUCTURE_CHARS:
        short += f" [JAX printed the output's value, {len(printed):,} characters: cut here]"
    exc.args = (short,)
    return exc
