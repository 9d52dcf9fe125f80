"""The export exhibit's error explainer (a link of ``jaxscope.explainers``' chain, listed
through the registry's ``explains_errors``): JAX's shape-polymorphism errors, raised while
``jax.export`` traces ``f`` with symbolic dimensions (a comparison or a division that does not
hold for every value of a dimension variable) or when an exported module is called with shapes
its specification does not allow.

For JAX's ``InconclusiveDimensionOperation`` (and the ``TypeError`` Python raises when a
symbolic dimension meets ``range``/``int``/numpy) the explanation is the case's own
(:func:`symbolic_dimension_error`): which symbolic dimension, which operation needed it
concrete (read off the traceback: the function the user's line called, and the one inside it
that asked), its value in the example (solved from ``args`` and ``shapes``), and the fix that
fits: for a comparison, the constraint that makes it hold for every value as it holds for the
example (``N > 1`` -> ``constraints = ["N >= 2"]``); for a size JAX needs as a constant, a
static size (``None`` in ``shapes``) or an operation that takes a symbolic one."""

from __future__ import annotations

import re
from collections.abc import Iterator
from types import FrameType, TracebackType

import jax
import numpy as np
from jaxscope.exhibit_api import (
    SNIPPET_FILENAME,
    ErrorContext,
    Explanation,
    MessageHelp,
    first_match,
    snippet_globals,
)

EXPORT_HELP: tuple[MessageHelp, ...] = (
    MessageHelp(
        "Cannot divide evenly the sizes of shapes",
        "With a symbolic dimension (`b` of `shapes`) JAX must prove the reshape right for"
        " every value of `b`, not just for the example's: the remainder it names is not 0 for"
        " all `b`, so this dimension is not polymorphic under this reshape.",
        "Reshape by a factor of the symbolic size (`x.reshape(-1, 8)`, `x.reshape(b, 2, 4)`),"
        ' or give the dimension a specification that makes it divide (`"(3*k, 8)"` in'
        " `shapes`), or keep it concrete (`None` in `shapes`).",
    ),
    MessageHelp(
        ("Symbolic dimension comparison", "is inconclusive"),
        "Python code in `f` compared a symbolic dimension with a number (`if x.shape[0] > 4`,"
        " `max(b, 4)`): the answer depends on the value of the dimension variable, so JAX"
        " cannot pick one branch for the whole exported module.",
        "Compute on values instead of branching in Python (`jnp.where`, `jax.lax.cond`), or"
        ' tell JAX what holds with `constraints` (`["b >= 5"]` makes `b > 4` true for'
        " every `b`), or keep the dimension concrete (`None` in `shapes`).",
    ),
    MessageHelp(
        "Input shapes do not match the polymorphic shapes specification",
        "The exported module checks its arguments' shapes against the `shapes` specification"
        " when it is called (its `shape_assertion`s): these arguments break one of the"
        " constraints JAX derived.",
        "Call it with shapes the specification allows, or export with a more general one.",
    ),
    MessageHelp(
        "Error refining shapes",
        "An exported module with symbolic dimensions is specialised to the call's shapes before"
        " XLA compiles it (shape refinement), and its `shape_assertion`s run then: one failed."
        " jax 0.10.2 checks the constraints it derived before that, with a clear message, but"
        " a constraint you gave (`constraints`) only here.",
        "Call it with shapes that satisfy every constraint listed for the export (the"
        " exhibit's Symbolic dimensions), or relax the `constraints`.",
    ),
    MessageHelp(
        "Cannot solve for values of dimension variables",
        "JAX computes each dimension variable from one argument dimension whose specification"
        " is that variable alone or a multiple of it (`b`, `2*b`); a variable that appears"
        " only in sums or products of variables cannot be solved.",
        'Give the variable its own dimension somewhere in `shapes` (e.g. `"(b, c)"` before'
        ' `"(b*c,)"`).',
    ),
    MessageHelp(
        "syntax error in symbolic shape",
        "A `shapes` entry is not a valid `jax.export` shape specification.",
        'Write one dimension per axis, separated by commas: `"(b, 8)"`, `"(2*b, _)"`'
        ' (`_` keeps the argument\'s own size), `"(b, ...)"`.',
    ),
)


# JAX's messages (jax 0.10.2, ``jax/_src/export/shape_poly.py``): ``_DimExpr.__int__`` and
# ``_geq_decision``'s comparison; Python's own when a ``_DimExpr`` meets ``range``/``__index__``.
_CONSTANT = re.compile(
    r"Symbolic dimension '(?P<dim>[^']+)' used in a context that requires a constant"
)
_COMPARISON = re.compile(
    r"Symbolic dimension comparison '(?P<lhs>[^']+)' (?P<op><=|>=|<|>|==|!=) '(?P<rhs>[^']+)'"
    r" is inconclusive"
)
_NOT_AN_INT = "'_DimExpr' object cannot be interpreted as an integer"
_SHAPE_POLY_FILE = "/jax/_src/export/shape_poly.py"

# The comparison, and the constraint that makes it hold (True) or fail (False) for every value
# of the dimension variables: JAX's constraints say ``>=``, ``<=`` or ``==``, and dimensions
# are integers, so ``a > b`` is ``a >= b + 1``.
_CONSTRAINT: dict[str, tuple[tuple[str, int], tuple[str, int] | None]] = {
    ">": ((">=", 1), ("<=", 0)),
    ">=": ((">=", 0), ("<=", -1)),
    "<": (("<=", -1), (">=", 0)),
    "<=": (("<=", 0), (">=", 1)),
    "==": (("==", 0), None),
    "!=": (("==", 0), None),  # only "!= is False" (equal) can be said
}


def _frames(tb: TracebackType | None) -> Iterator[FrameType]:
    while tb is not None:
        yield tb.tb_frame
        tb = tb.tb_next


def _all_frames(exc: BaseException) -> list[FrameType]:
    """``exc``'s frames, or those of the unfiltered traceback JAX keeps as its cause when
    ``JAX_TRACEBACK_FILTERING`` removed its own frames (the longer list wins)."""
    best = list(_frames(exc.__traceback__))
    cause = exc.__cause__
    for _ in range(4):
        if cause is None:
            break
        if type(cause).__name__ == "UnfilteredStackTrace":
            frames = list(_frames(cause.__traceback__))
            if len(frames) > len(best):
                best = frames
        cause = cause.__cause__
    return best


# jnp's indexing (``x[...]``): ``Array.__getitem__`` forwards to these.
_INDEXING = frozenset({"_getitem", "_rewriting_take", "rewriting_take"})


def _public_name(frame: FrameType) -> str:
    """A library function as a user writes it: ``jnp.searchsorted``, ``lax.top_k``, else its
    module and qualified name."""
    module = str(frame.f_globals.get("__name__", "?"))
    name = frame.f_code.co_qualname
    if name in _INDEXING:
        return "x[...]"
    if module.startswith("jax._src.numpy.") and "." not in name:
        return f"jnp.{name}"
    if module.startswith("jax._src.lax.") and "." not in name:
        return f"lax.{name}"
    return f"{module}.{name}"


def _where_needed(exc: BaseException) -> tuple[str | None, str | None, int | None]:
    """``(API, inner function, user line)``: the library function the snippet's deepest line
    called, the innermost function outside JAX's symbolic-shape code that asked for the
    concrete value (None when that is the API itself), and the snippet's line; ``(None, None,
    line)`` when the snippet's own code asked (a comparison or ``range`` on its line)."""
    frames = _all_frames(exc)
    user = [i for i, f in enumerate(frames) if f.f_code.co_filename == SNIPPET_FILENAME]
    if not user:
        return None, None, None
    k = user[-1]
    line = frames[k].f_lineno
    below = [
        f
        for f in frames[k + 1 :]
        if _SHAPE_POLY_FILE not in f.f_code.co_filename.replace("\\", "/")
    ]
    if not below:
        return None, None, line
    named = [f for f in below if not _is_wrapper(f)] or below
    api = _public_name(named[0])
    inner = _public_name(below[-1]) if len(below) > 1 else None
    return api, (inner if inner != api else None), line


# Frames of JAX's call machinery between the user's line and the function it called (an
# operator's forwarding closure, jit's and the traceback filter's wrappers).
_WRAPPERS = frozenset(
    {"op", "wrapper", "wrapped", "inner", "reraise_with_filtered_traceback", "cache_miss"}
)


def _is_wrapper(frame: FrameType) -> bool:
    code = frame.f_code
    return code.co_name in _WRAPPERS or "<locals>" in code.co_qualname.rsplit(".", 1)[0]


def _example_dims(f: object) -> tuple[dict[str, int], dict[str, int]]:
    """The example's value of each dimension variable that is a whole dimension of a ``shapes``
    specification (``"(b, 8)"`` with ``x.shape == (6, 8)`` -> ``b = 6``), and the argument
    position each is first found in; empty when the snippet has no ``shapes``."""
    g = snippet_globals(f) or {}
    shapes, args = g.get("shapes"), g.get("args")
    if shapes is None or not isinstance(args, tuple):
        return {}, {}
    specs = [shapes] * len(args) if isinstance(shapes, str) else list(shapes)
    values: dict[str, int] = {}
    where: dict[str, int] = {}
    for i, (spec, arg) in enumerate(zip(specs, args, strict=False)):
        if not isinstance(spec, str):
            continue
        leaves = jax.tree_util.tree_leaves(arg)
        for leaf in leaves:
            dims = [d.strip() for d in spec.strip().strip("()").split(",") if d.strip()]
            for d, size in zip(dims, np.shape(leaf), strict=False):
                if d.isidentifier() and d != "_":
                    values.setdefault(d, int(size))
                    where.setdefault(d, i)
    return values, where


def _evaluate(text: str, values: dict[str, int]) -> int | None:
    """A symbolic expression as JAX prints it (``- N + 16``) at the example's values, by JAX's
    own parser with one equality constraint per variable; None when it stays symbolic."""
    if not values:
        return None
    try:
        (out,) = jax.export.symbolic_shape(
            text, constraints=[f"{k} == {v}" for k, v in values.items()]
        )
    except Exception:  # a variable without a value, or an expression JAX does not reduce
        return None
    return out if isinstance(out, int) else None


def _shifted(rhs: str, by: int) -> str:
    """``rhs + by`` written for a constraint (``1`` -> ``2``; ``b`` -> ``b + 1``)."""
    if by == 0:
        return rhs
    try:
        return str(int(rhs) + by)
    except ValueError:
        return f"{rhs} {'+' if by > 0 else '-'} {abs(by)}"


def _comparison_help(m: re.Match[str], values: dict[str, int]) -> tuple[str, str | None]:
    """The comparison's outcome for the example and the constraint that makes that outcome
    hold for every value (None when no constraint JAX takes can say it)."""
    lhs, op, rhs = m.group("lhs"), m.group("op"), m.group("rhs")
    a, b = _evaluate(lhs, values), _evaluate(rhs, values)
    if a is None or b is None:  # no example values: either outcome, as the user intends
        holds, fails = _CONSTRAINT[op]
        if fails is None:
            return "", None
        yes, no = (f'`constraints = ["{lhs} {c} {_shifted(rhs, by)}"]`' for c, by in (holds, fails))
        return "", f"{yes} (where it holds for every call) or {no} (where it never does)"
    outcome = {">": a > b, ">=": a >= b, "<": a < b, "<=": a <= b, "==": a == b, "!=": a != b}[op]
    holds, fails = _CONSTRAINT[op]
    if op == "!=":
        pick = None if outcome else holds
    else:
        pick = holds if outcome else fails
    shown = ", ".join(
        f"{k} = {v}" for k, v in values.items() if re.search(rf"\b{k}\b", f"{lhs} {rhs}")
    )
    said = f" With the example's {shown} it is {outcome}: `{lhs} {op} {rhs}` is {a} {op} {b}."
    if pick is None:
        return said, None
    cmp, by = pick
    return said, f'`constraints = ["{lhs} {cmp} {_shifted(rhs, by)}"]`'


def symbolic_dimension_error(exc: BaseException, ctx: ErrorContext) -> Explanation | None:
    """The case's own explanation of a symbolic-shape error (see the module docstring), else
    None."""
    message = str(exc)
    constant = _CONSTANT.search(message)
    comparison = _COMPARISON.search(message)
    not_an_int = isinstance(exc, TypeError) and _NOT_AN_INT in message
    if not (constant or comparison or not_an_int):
        return None
    api, inner, line = _where_needed(exc)
    values, where = _example_dims(ctx.f)
    at = f"line {line}" if line is not None else "your code"
    if api is None:
        asked = f"Your own code at {at}"
    else:
        asked = f"`{api}`, called at {at}" + (f" (in `{inner}`)" if inner else "")
    if comparison is not None:
        expr = f"{comparison.group('lhs')} {comparison.group('op')} {comparison.group('rhs')}"
        said, constraint = _comparison_help(comparison, values)
        explanation = (
            f"{asked} compared symbolic dimensions: `{expr}`. JAX exports one module for every"
            " value of the dimension variables, and this comparison is true for some and false"
            " for others, so JAX cannot pick one answer for all of them." + said
        )
        fixes = []
        if constraint is not None:
            fixes.append(
                f"State what holds: {constraint} (the exported module then checks"
                " it with a shape assertion when it is called, and refuses shapes that break it)"
            )
        if api is None:
            fixes.append(
                "compute on values instead of branching in Python (`jnp.where`, `jax.lax.cond`)"
            )
        fixes.append("keep the dimension concrete (`None` for that argument in `shapes`)")
        fix = "; or ".join(fixes) + "."
        return Explanation(explanation, fix[0].upper() + fix[1:])
    dims = [constant.group("dim")] if constant else sorted(values)
    dim_text = " or ".join(f"`{d}`" for d in dims) if dims else "a symbolic dimension"
    example = ", ".join(f"{d} = {values[d]}" for d in dims if d in values)
    argument = sorted({where[d] for d in dims if d in where})
    what = (
        "Python's `range`, `int` or a numpy function"
        if not_an_int and api is None
        else "a concrete size"
    )
    explanation = (
        f"{asked} needed {dim_text} as a concrete integer ({what}), but while `jax.export`"
        " traces `f` a symbolic dimension has no value: it stands for every size the exported"
        " module accepts." + (f" The example has {example}." if example else "")
    )
    static = (
        f"keep it static: `None` for argument {argument[0]} in `shapes` (the module is then"
        " exported for the example's size only)"
        if argument
        else "keep it static (`None` for that argument in `shapes`)"
    )
    if api is None:
        fix = (
            "Use operations that take a symbolic size instead of Python's: `jnp.sum`/`jnp.cumsum`"
            " over the axis, or `jax.lax.fori_loop(0, x.shape[0], body, init)`, whose trip"
            f" count may be symbolic; or {static}."
        )
    else:
        fix = (
            f"`{api}` needs this size while tracing, so no constraint makes it symbolic: {static},"
            " or make a different dimension the symbolic one."
        )
    return Explanation(explanation, fix[0].upper() + fix[1:])


def explain_error(exc: BaseException, ctx: ErrorContext) -> Explanation | None:
    """The explanation and fix of one of JAX's shape-polymorphism errors, else None: the case's
    own for a symbolic dimension compared or needed as a constant, the table's for the
    others."""
    try:
        own = symbolic_dimension_error(exc, ctx)
    except Exception:  # the table's general help is still right
        own = None
    return own or first_match(EXPORT_HELP, exc)
