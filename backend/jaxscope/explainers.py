"""The error explainers: an ordered chain of handlers that give a failed run's plain explanation
and fix (``run_failed.explanation``/``fix``).

Each handler gets the exception and an :class:`ErrorContext` and returns an :class:`Explanation`
or ``None``; the first non-``None`` answer wins (the model is Treescope's handler chain). A
handler is owned by the code that knows its error:

* the generic ones live here: JAX's tracer errors first (:func:`tracer_errors`: they also make
  the run's ``kind`` ``tracer_error``), a traced value used as an array shape and shapes that
  do not broadcast and matrix products whose axes do not line up last (:func:`shapes`,
  :func:`broadcasting`, :func:`jaxscope.dot_errors.dot_general_shapes`: after the exhibits'
  more specific shape errors);
* those of errors raised inside Flax, optax and ``jax.tree`` utilities (two trees of different
  structure, NNX trace-level errors, a linen module passed to a transform) live in
  :mod:`jaxscope.library_errors`, right after the tracer errors;
* an exhibit's live in ``exhibits/<id>/explain.py`` as ``explain_error``, listed by the exhibit
  registry (``Exhibit.explains_errors``), and enter the chain in the registry's order.

``jaxscope.sandbox.errors.classify`` asks the chain (:func:`explain`) for every exception that is
not a syntax error, an invalid snippet or a memory error. Handlers match JAX's own messages
(jax 0.10.2) with :class:`MessageHelp` tables. This module imports only public JAX
(``jax.errors``) and the exhibit registry; the handlers are imported on the first
:func:`explainer_chain` (inside the worker, where JAX is loaded).
"""

from __future__ import annotations

import ast
import functools
import importlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

try:
    import jax.errors

    HAS_JAX = True
except ImportError:  # a torch worker has no JAX (design 0025): no JAX error can reach it
    HAS_JAX = False

from exhibits.registry import EXHIBITS
from jaxscope.protocol import Stage
from jaxscope.user_text import exception_text


@dataclass(frozen=True)
class Explanation:
    """What ``run_failed`` says about an error beside JAX's own message."""

    explanation: str
    fix: str | None = None


@dataclass(frozen=True)
class ErrorContext:
    """What a handler knows besides the exception.

    ``f`` is the snippet's function once loaded (else None); ``location_note`` the explanation
    the error's location already gave (a :func:`~jaxscope.sandbox.probe_api.blame_line`'s, or
    "JAX raised this while handling ``f`` as a whole"), which a handler may extend; ``None``
    when the traceback reached a snippet line."""

    stage: Stage | None = None
    f: object = None
    location_note: str | None = None


Explainer = Callable[[BaseException, ErrorContext], Explanation | None]


class Link(NamedTuple):
    """One handler of the chain and its name (``module.function``), which tests and the
    ``explain`` result report."""

    name: str
    explain: Explainer


@dataclass(frozen=True)
class MessageHelp:
    """A piece of JAX's own message (jax 0.10.2), the plain explanation and the fix. A marker
    may be a tuple of pieces that must all be in the message."""

    marker: str | tuple[str, ...]
    explanation: str
    fix: str

    def matches(self, message: str) -> bool:
        pieces = (self.marker,) if isinstance(self.marker, str) else self.marker
        return all(p in message for p in pieces)


def first_match(table: Sequence[MessageHelp], exc: BaseException) -> Explanation | None:
    """The first entry of ``table`` whose marker is in ``str(exc)`` (so the more specific
    entries come first), as an :class:`Explanation`; None when none is (or when ``str(exc)``
    raises: :func:`jaxscope.user_text.exception_text`)."""
    message = exception_text(exc)
    for entry in table:
        if entry.matches(message):
            return Explanation(entry.explanation, entry.fix)
    return None


# ---- tracer errors (generic) --------------------------------------------------------------

_STATIC_FIX = (
    "If the value only depends on an argument that is a Python constant (a size, a count, a flag),"
    " mark that argument static (`static_argnums = (i,)` in the snippet, as for"
    " `jax.jit(f, static_argnums=...)`): it then stays a concrete Python value while tracing."
)

_BOOL_EXPLANATION = (
    "Python's `if`, `while`, `and`, `or` and `not` need a concrete True or False, but while JAX"
    " traces `f` this value is an abstract tracer: only its shape and dtype are known, not its"
    " value, because it depends on an argument."
)
_BOOL_FIX = (
    "Select values with `jnp.where(cond, x, y)`, or choose between two functions with"
    " `jax.lax.cond(pred, true_fun, false_fun, *operands)` (and loops with"
    " `jax.lax.while_loop`/`fori_loop`). " + _STATIC_FIX
)

_VMAP_BOOL_EXPLANATION = (
    "Under `jax.vmap` this value is a BatchTracer holding one value per example (here one bool"
    " per example), so Python's `if` cannot pick a single branch: different examples may need"
    " different branches."
)

_INT_EXPLANATION = (
    "`int()`, `range()`, `len()`-like uses and Python indexing need a concrete integer, but while"
    " JAX traces `f` this value is an abstract tracer (shape and dtype only)."
)

_ARANGE_EXPLANATION = (
    "Array shapes must be known while tracing: `jnp.arange(n)`, `jnp.zeros(n)` and friends cannot"
    " take a traced `n`, because the size of their result would depend on a runtime value."
)

_ARRAY_EXPLANATION = (
    "A tracer was passed to NumPy (`np.asarray`, `np.array`, a NumPy function): NumPy needs real"
    " values, but while JAX traces `f` only shapes and dtypes are known."
)
_ARRAY_FIX = "Use `jax.numpy` (`jnp`) instead of `numpy` on traced values. " + _STATIC_FIX

_CONCRETE_EXPLANATION = (
    "A concrete value was needed while JAX traced `f`, but this value is an abstract"
    " tracer (shape and dtype only) because it depends on an argument."
)

_LEAK_EXPLANATION = (
    "A tracer escaped the function being traced (stored in a global, a list or an object"
    " attribute) and was used after that trace ended, where it has no meaning."
)
_LEAK_FIX = (
    "Return values from `f` instead of storing them outside it; keep state explicit"
    " (pass it in as an argument, return the new state)."
)

_BOOL_INDEX_EXPLANATION = (
    "Boolean-mask indexing `x[mask]` gives an array whose size depends on how many entries are"
    " True, which is not known while tracing."
)
_BOOL_INDEX_FIX = (
    "Use `jnp.where(mask, x, 0)` to keep the shape, or give the size explicitly, e.g."
    " `jnp.nonzero(mask, size=k)` / `x.at[...]`."
)

# JAX's tracer errors: a run that fails with one is ``tracer_error``, not ``user_exception``.
# (TracerBoolConversionError is a ConcretizationTypeError; the integer and array ones are not.)
TRACER_ERRORS: tuple[type[Exception], ...] = (
    (
        jax.errors.ConcretizationTypeError,
        jax.errors.TracerIntegerConversionError,
        jax.errors.TracerArrayConversionError,
        jax.errors.UnexpectedTracerError,
        jax.errors.NonConcreteBooleanIndexError,
    )
    if HAS_JAX
    else ()
)


def is_tracer_error(exc: BaseException) -> bool:
    """``exc`` is one of JAX's tracer errors (:data:`TRACER_ERRORS`)."""
    return isinstance(exc, TRACER_ERRORS)


def tracer_errors(exc: BaseException, ctx: ErrorContext) -> Explanation | None:
    """The explanation and fix of a JAX tracer error (answers for every one of
    :data:`TRACER_ERRORS`), else None."""
    del ctx  # the message and class say everything
    if not is_tracer_error(exc):
        return None
    if isinstance(exc, jax.errors.TracerBoolConversionError):
        if "BatchTracer" in str(exc):
            return Explanation(_VMAP_BOOL_EXPLANATION, _BOOL_FIX)
        return Explanation(_BOOL_EXPLANATION, _BOOL_FIX)
    if isinstance(exc, jax.errors.TracerIntegerConversionError):
        return Explanation(_INT_EXPLANATION, _STATIC_FIX)
    if isinstance(exc, jax.errors.TracerArrayConversionError):
        return Explanation(_ARRAY_EXPLANATION, _ARRAY_FIX)
    if isinstance(exc, jax.errors.ConcretizationTypeError):
        msg = str(exc)
        if "arange" in msg:
            return Explanation(_ARANGE_EXPLANATION, _STATIC_FIX)
        if "`int` function" in msg or "`float` function" in msg or "`range`" in msg:
            return Explanation(_INT_EXPLANATION, _STATIC_FIX)
        return Explanation(_CONCRETE_EXPLANATION, _BOOL_FIX)
    if isinstance(exc, jax.errors.UnexpectedTracerError):
        return Explanation(_LEAK_EXPLANATION, _LEAK_FIX)
    if isinstance(exc, jax.errors.NonConcreteBooleanIndexError):
        return Explanation(_BOOL_INDEX_EXPLANATION, _BOOL_INDEX_FIX)
    return None


# ---- a traced value used as a shape (generic) ---------------------------------------------

# The last link: an exhibit's more specific entry for the same message (custom_vjp's, for an
# argument of a custom_vjp function) comes first.
SHAPE_HELP: tuple[MessageHelp, ...] = (
    MessageHelp(
        "Shapes must be 1D sequences of concrete values",
        "While JAX traces `f` (under `jax.jit`, `jax.make_jaxpr` or another staging"
        " transformation) every argument is an abstract tracer (shape and dtype only), so a"
        " value computed from an argument and used as an array shape (`jnp.zeros((n,))`) has no"
        " concrete value; an array shape must be concrete.",
        "Keep sizes static: `static_argnums` for `f`'s argument, `nondiff_argnums` for a"
        " `custom_vjp` argument, or take the size from an array's `.shape`.",
    ),
)


def shapes(exc: BaseException, ctx: ErrorContext) -> Explanation | None:
    """The explanation of JAX's error for a traced value used as an array shape, else None."""
    del ctx
    return first_match(SHAPE_HELP, exc)


# ---- shapes that do not broadcast (generic) ----------------------------------------------

# JAX's messages (jax 0.10.2): a primitive's shape rule ("mul got incompatible shapes for
# broadcasting: (4, 5), (4, 10).") and jnp's own check ("Incompatible shapes for broadcasting:
# shapes=[(3,), (4,), ()]").
_BROADCAST = re.compile(
    r"(?:(?P<prim>\w+) got incompatible shapes for broadcasting: (?P<pair>\(.*\))\.?$"
    r"|Incompatible shapes for broadcasting: shapes=(?P<list>\[.*\]))"
)


# How much of a message the broadcasting explainer reads: JAX's line is far shorter.
_BROADCAST_SCAN = 4096


def _shapes_of(text: str) -> list[tuple[int, ...]] | None:
    """The shapes JAX printed (a Python literal of tuples of ints), or None."""
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return None
    shapes = list(value) if isinstance(value, list | tuple) else []
    if not shapes or not all(isinstance(s, tuple) for s in shapes):
        return None
    return [tuple(int(d) for d in s) for s in shapes]


def first_clash(shapes: Sequence[tuple[int, ...]]) -> tuple[int, int, int] | None:
    """numpy's broadcasting rule (align the shapes at their last axis; the sizes on each axis
    must be equal or 1): the first axis from the right where two sizes clash, as ``(axis from
    the right, negative; size, other size)``; None when the shapes broadcast."""
    for axis in range(1, max(len(s) for s in shapes) + 1):
        sizes = {s[-axis] for s in shapes if len(s) >= axis and s[-axis] != 1}
        if len(sizes) > 1:
            a, b = sorted(sizes)[:2]
            return -axis, a, b
    return None


def broadcasting(exc: BaseException, ctx: ErrorContext) -> Explanation | None:
    """Why two shapes do not broadcast, naming the axis and the sizes (JAX's message names only
    the shapes), else None."""
    del ctx
    # JAX's message is one short line; a snippet's own exception may carry megabytes, which
    # must not be copied or scanned whole (the hostile tests time such runs).
    first = str(exc)[:_BROADCAST_SCAN].lstrip().partition("\n")[0]
    m = _BROADCAST.search(first)
    if m is None:
        return None
    shapes = _shapes_of(m.group("pair") or m.group("list"))
    clash = first_clash(shapes) if shapes else None
    if shapes is None or clash is None:
        return None
    axis, a, b = clash
    op = f"`{m.group('prim')}`" if m.group("prim") else "this operation"
    shown = ", ".join(str(s) for s in shapes if s)
    return Explanation(
        f"{op} combines arrays elementwise, so their shapes must broadcast (numpy's rule: align"
        f" the shapes at their last axis; on each axis the sizes must be equal, or one of them"
        f" 1). {shown} clash at axis {axis}: size {a} against {b}.",
        "Find which operand has the wrong size on that axis (a slice such as `[:, :5]`, a"
        " transposed matrix, a missing reshape). To broadcast on purpose, give the smaller one a"
        " size-1 axis there (`x[:, None]`, `jnp.expand_dims`) or reshape it explicitly. The"
        " tracing exhibit's eqn list shows the shape of every value up to the failing line.",
    )


# ---- a donated or deleted array used again (generic) --------------------------------------

# Plain JAX raises these too (jax-ml/jax#9675, #9237, #16906): the run fails as plain JAX would,
# and says why the array is gone. Eager dispatch reports the buffer, jit the Array.
DELETED_HELP: tuple[MessageHelp, ...] = (
    MessageHelp(
        ("Donation requested for invalid buffer",),
        "An array was donated twice: a function jitted with `donate_argnums`/`donate_argnames`"
        " got an array whose buffer an earlier donation (or `.delete()`) had already given away.",
        "Pass the earlier call's result on (`x = f(x)`) instead of its argument, pass a copy"
        " (`jnp.array(x, copy=True)`), or drop the donation from that `jax.jit`.",
    ),
    MessageHelp(
        ("Array has been deleted",),
        "An argument's device buffer is gone: the array was donated to an earlier call of a"
        " function jitted with `donate_argnums`/`donate_argnames` (XLA may reuse a donated"
        " buffer for that call's output, so JAX deletes the array), or deleted with"
        " `.delete()`. Plain JAX raises the same error. The line shown is where JAX found the"
        " buffer gone, not where it was donated: look for the `jax.jit(..., donate_argnums=...)`"
        " call that took the array earlier.",
        "Use the donated call's result from then on (`x = f(x)`), pass a copy"
        " (`jnp.array(x, copy=True)`) where the original is still needed, or drop"
        " `donate_argnums` from the `jax.jit` that took it.",
    ),
    MessageHelp(
        ("Buffer has been deleted or donated",),
        "An argument's device buffer is gone: it was donated to an earlier jitted call"
        " (`donate_argnums`/`donate_argnames`) or deleted with `.delete()`. Plain JAX raises the"
        " same error.",
        "Use the donated call's result from then on (`x = f(x)`), pass a copy"
        " (`jnp.array(x, copy=True)`), or drop `donate_argnums` from the `jax.jit` that took it.",
    ),
)


def deleted_buffers(exc: BaseException, ctx: ErrorContext) -> Explanation | None:
    """The explanation of JAX's error for an array whose buffer was donated or deleted, else
    None."""
    del ctx
    return first_match(DELETED_HELP, exc)


# ---- the chain ----------------------------------------------------------------------------

# The exhibits' handler: ``exhibits/<id>/explain.py`` defines this function.
EXHIBIT_EXPLAINER = "explain_error"


def _link(explainer: Explainer) -> Link:
    return Link(f"{explainer.__module__}.{explainer.__name__}", explainer)


@functools.cache
def explainer_chain() -> tuple[Link, ...]:
    """The handlers in the order they are asked: the tracer errors and the donated/deleted
    arrays, the errors raised inside Flax, optax and ``jax.tree`` utilities
    (:mod:`jaxscope.library_errors`), then each exhibit that explains errors in the registry's
    order, then the shape errors (a traced shape, shapes that do not broadcast, a matrix
    product whose contracted or batch axes differ: :mod:`jaxscope.dot_errors`)."""
    from jaxscope import dot_errors, library_errors  # they import this module

    links = [
        _link(tracer_errors),
        _link(deleted_buffers),
        _link(library_errors.tree_structures),
        _link(library_errors.flax_errors),
    ]
    for exhibit in EXHIBITS.values():
        # A JAX exhibit's handler explains JAX's errors, which cannot arise without JAX.
        if exhibit.explains_errors and (HAS_JAX or exhibit.worker != "jax"):
            module = importlib.import_module(exhibit.explain_module)
            links.append(_link(getattr(module, EXHIBIT_EXPLAINER)))
    links.append(_link(shapes))
    links.append(_link(broadcasting))
    links.append(_link(dot_errors.dot_general_shapes))
    return tuple(links)


def explain(exc: BaseException, ctx: ErrorContext) -> tuple[str, Explanation] | None:
    """The first answer of the chain for ``exc``: the name of the handler that gave it, and the
    explanation; None when no handler knows the error. A handler that raises is passed over (a
    bug in an explainer must not replace the user's error)."""
    for link in explainer_chain():
        try:
            answer = link.explain(exc, ctx)
        except Exception:  # the next handler (or none) explains it
            continue
        if answer is not None:
            return link.name, answer
    return None
