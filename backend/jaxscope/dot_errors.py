"""The error explainer for JAX's ``dot_general`` shape errors (issue 33, class 7): a matrix
product whose contracted axes differ in size ("dot_general requires contracting dimensions to
have the same shape, got (3,) and (2,).") and, of the same family, batch axes that differ
("... lhs batch dimensions and rhs batch dimensions to have the same shape ...").

JAX's message names only the sizes on the contracted (batch) axes. The handler reads the
operands' shapes off the snippet's frame where the failing line is a matrix product it can read
without running anything (``a @ b``, ``jnp.matmul``/``jnp.dot``/``a.dot(b)`` whose operands are
names, attributes, constant subscripts, ``.T`` or nested products), checks that they give the
sizes in JAX's message, and offers only the fixes those shapes allow (each checked with the
matmul shape rule: transpose the right operand, transpose the left one, put the vector on the
other side, flatten the left operand's trailing axes). An operand that is one example of a
``jax.vmap`` batch (a ``BatchTracer``, or a grad tracer of one: read by
``jaxscope.internals.trace_stack.per_example``) is said to be per example, with the axis mapped
and the whole shape, and the fix offers the ``in_axes`` of ``f`` under which the per-example
shapes multiply and the mapped sizes agree (computed from the whole shapes, checked with the
shape rule), never "the operand was made with the wrong size". An ``nnx.Linear`` called on the
failing line on an input of another size is named with its ``in_features``; another library
layer gets no transpose advice. Where it cannot read the operands it names the sizes and says
what to look for (a ``jit`` inside the ``vmap`` hides the batch: its tracers are per-example).
It reads frames and their locals (and a tracer's batch axis and
shape); it calls no JAX function on the operands (a tracer of an ended trace must not be used)
and imports no private JAX itself.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import itertools
import linecache
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from types import FrameType, TracebackType
from typing import Any

from jaxscope.explainers import ErrorContext, Explanation
from jaxscope.snippet_model import SNIPPET_FILENAME

Shape = tuple[int, ...]

# JAX's messages (jax 0.10.2, ``_dot_general_shape_rule``).
_CONTRACTING = re.compile(
    r"dot_general requires contracting dimensions to have the same shape, got"
    r" (?P<lhs>\([\d, ]*\)) and (?P<rhs>\([\d, ]*\))"
)
_BATCH = re.compile(
    r"dot_general requires lhs batch dimensions and rhs batch dimensions to have the same"
    r" shape, got (?P<lhs>\([\d, ]*\)) and (?P<rhs>\([\d, ]*\))"
)
# JAX's line is short; a snippet's own exception may be huge (see explainers.broadcasting).
_SCAN = 4096

# The calls that contract as ``@`` does (the last axis of the left operand with the second to
# last, or only, axis of the right one).
_MATMUL_CALLS = {"matmul", "dot"}


def _sizes(text: str) -> Shape | None:
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return None
    if not isinstance(value, tuple) or not all(isinstance(d, int) for d in value):
        return None
    return tuple(value)


def matmul_shape(a: Shape, b: Shape) -> Shape | None:
    """The shape of ``a @ b`` by numpy's ``matmul`` rule (a vector operand gets a size-1 axis
    that is removed again; the leading axes broadcast), None when the product is not defined."""
    if not a or not b:
        return None
    a2 = (1, *a) if len(a) == 1 else a
    b2 = (*b, 1) if len(b) == 1 else b
    if a2[-1] != b2[-2]:
        return None
    lead_a, lead_b = a2[:-2], b2[:-2]
    lead: list[int] = []
    for i in range(1, max(len(lead_a), len(lead_b)) + 1):
        x = lead_a[-i] if i <= len(lead_a) else 1
        y = lead_b[-i] if i <= len(lead_b) else 1
        if x != y and 1 not in (x, y):
            return None
        lead.insert(0, max(x, y))
    out = [*lead, a2[-2], b2[-1]]
    if len(b) == 1:
        out.pop()
    if len(a) == 1:
        out.pop(-2 if len(b) > 1 else -1)
    return tuple(out)


def contracted(a: Shape, b: Shape) -> tuple[int, int] | None:
    """The sizes ``a @ b`` contracts: ``a``'s last axis and ``b``'s second to last (its only
    one for a vector)."""
    if not a or not b:
        return None
    return a[-1], (b[-2] if len(b) > 1 else b[0])


# ---- reading the operands off the snippet's frame -----------------------------------------


def _frames(tb: TracebackType | None) -> Iterator[TracebackType]:
    while tb is not None:
        yield tb
        tb = tb.tb_next


def _snippet_entry(exc: BaseException) -> TracebackType | None:
    """The deepest traceback entry in the user's snippet."""
    deepest = None
    for tb in _frames(exc.__traceback__):
        if tb.tb_frame.f_code.co_filename == SNIPPET_FILENAME:
            deepest = tb
    return deepest


_MISSING = object()


def _lookup(name: str, frame: FrameType) -> Any:
    for scope in (frame.f_locals, frame.f_globals, vars(builtins)):
        if name in scope:
            return scope[name]
    return _MISSING


def _is_array(x: Any) -> bool:
    return hasattr(x, "shape") and hasattr(x, "dtype")


def _shape_attr(x: Any) -> Shape | None:
    try:
        shape = tuple(x.shape)
    except Exception:  # an object whose shape cannot be read is not an operand we name
        return None
    return shape if all(isinstance(d, int) for d in shape) else None


def _object(node: ast.expr, frame: FrameType) -> Any:
    """The object a name, an attribute of a non-array object (read statically: no property
    runs) or a constant subscript of a dict, list or tuple refers to; ``_MISSING`` otherwise."""
    if isinstance(node, ast.Name):
        return _lookup(node.id, frame)
    if isinstance(node, ast.Attribute):
        base = _object(node.value, frame)
        if base is _MISSING or _is_array(base):
            return _MISSING
        try:
            value = inspect.getattr_static(base, node.attr)
        except AttributeError:
            return _MISSING
        return _MISSING if hasattr(value, "__get__") and not _is_array(value) else value
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        base = _object(node.value, frame)
        key: Any = node.slice.value
        if isinstance(base, dict | list | tuple):
            try:
                return base[key]
            except (KeyError, IndexError, TypeError):
                return _MISSING
    return _MISSING


def _matmul_operands(node: ast.expr) -> tuple[ast.expr, ast.expr] | None:
    """The two operands of ``a @ b``, ``jnp.matmul(a, b)``, ``jnp.dot(a, b)`` or ``a.dot(b)``."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
        return node.left, node.right
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and not node.keywords:
        if node.func.attr in _MATMUL_CALLS and len(node.args) == 2:
            return node.args[0], node.args[1]
        if node.func.attr == "dot" and len(node.args) == 1:  # a.dot(b)
            return node.func.value, node.args[0]
    return None


def _is_dot(node: ast.expr) -> bool:
    """``jnp.dot(a, b)`` or ``a.dot(b)``: the same product as ``a @ b`` only for operands of
    at most two axes (an N-d ``dot`` contracts the last axis with the second to last of ``b``
    but pairs no batch axes: ``(2, 3, 4)`` dot ``(3, 4, 5)`` is ``(2, 3, 3, 5)``)."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "dot"
    )


def _as_matmul(node: ast.expr, a: Shape | None, b: Shape | None) -> bool:
    """The product at ``node`` of operands of shapes ``a`` and ``b`` follows ``@``'s rule."""
    return a is not None and b is not None and not (_is_dot(node) and max(len(a), len(b)) > 2)


def _shape(node: ast.expr, frame: FrameType) -> Shape | None:
    """The shape of an operand expression, computed without running it."""
    if isinstance(node, ast.Attribute) and node.attr in ("T", "mT"):
        inner = _shape(node.value, frame)
        if inner is None:
            return None
        if node.attr == "T":
            return tuple(reversed(inner))
        return (*inner[:-2], inner[-1], inner[-2]) if len(inner) >= 2 else None
    operands = _matmul_operands(node)
    if operands is not None:
        a, b = (_shape(x, frame) for x in operands)
        return (
            matmul_shape(a, b)
            if a is not None and b is not None and _as_matmul(node, a, b)
            else None
        )
    value = _object(node, frame)
    return _shape_attr(value) if value is not _MISSING and _is_array(value) else None


@dataclass(frozen=True)
class Product:
    """A matrix product on the failing line whose operands' shapes were read (``left_value``,
    ``right_value``: the operands themselves where they are names, attributes or constant
    subscripts; ``nd_dot``: a ``dot`` call, which follows ``@``'s rule only up to 2-d)."""

    left: str
    right: str
    left_shape: Shape
    right_shape: Shape
    left_value: Any = field(default=None, compare=False)
    right_value: Any = field(default=None, compare=False)
    nd_dot: bool = False


def _products(exc: BaseException) -> Iterator[Product]:
    """The matrix products of the failing snippet line whose operands can be read, the one at
    the failing instruction's position first."""
    entry = _snippet_entry(exc)
    if entry is None:
        return
    frame, line = entry.tb_frame, entry.tb_lineno
    source = "".join(linecache.getlines(SNIPPET_FILENAME))
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return
    position = None
    try:
        positions = list(frame.f_code.co_positions())
        position = positions[entry.tb_lasti // 2]
    except (AttributeError, IndexError):
        pass
    nodes = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.expr)
        and _matmul_operands(n) is not None
        and n.lineno <= line <= (n.end_lineno or n.lineno)
    ]
    nodes.sort(key=lambda n: (n.lineno, n.end_lineno, n.col_offset, n.end_col_offset) != position)
    for node in nodes:
        operands = _matmul_operands(node)
        assert operands is not None
        a, b = (_shape(x, frame) for x in operands)
        left, right = (ast.get_source_segment(source, x) for x in operands)
        if a is not None and b is not None and _as_matmul(node, a, b) and left and right:
            values = [_object(x, frame) for x in operands]
            lv, rv = (None if v is _MISSING else v for v in values)
            yield Product(left, right, a, b, lv, rv, _is_dot(node))


# ---- the fixes the shapes allow -----------------------------------------------------------


def _wrap(text: str) -> str:
    """``text`` as the operand of ``.T`` or ``@``: parenthesised unless it is a plain name,
    attribute, subscript or call."""
    try:
        node = ast.parse(text, mode="eval").body
    except SyntaxError:
        return f"({text})"
    ok = isinstance(node, ast.Name | ast.Attribute | ast.Subscript | ast.Call)
    return text if ok else f"({text})"


@dataclass(frozen=True)
class Fix:
    """A rewritten product, the shapes it multiplies and the shape it gives."""

    code: str
    left_shape: Shape
    right_shape: Shape
    result: Shape


def fixes(p: Product) -> list[Fix]:
    """The rewrites of ``p`` whose shapes multiply (each checked with :func:`matmul_shape`):
    transpose the right operand, transpose the left one, swap the operands (``b @ a``),
    transpose both, flatten the left operand's trailing axes. Before any says that no
    rewrite fits, each of these is tried."""
    a, b = p.left_shape, p.right_shape
    left, right = _wrap(p.left), _wrap(p.right)
    found: list[Fix] = []

    def offer(code: str, x: Shape, y: Shape) -> None:
        result = matmul_shape(x, y)
        if result is not None and all(f.code != code for f in found):
            found.append(Fix(code, x, y, result))

    def swapped(x: Shape, text: str) -> tuple[Shape, str]:
        if len(x) == 2:
            return (x[1], x[0]), f"{text}.T"
        return (*x[:-2], x[-1], x[-2]), f"{text}.mT"

    if len(b) >= 2:
        t, code = swapped(b, right)
        offer(f"{left} @ {code}", a, t)
    if len(a) >= 2:
        t, code = swapped(a, left)
        offer(f"{code} @ {right}", t, b)
    # the operands the other way round: b @ a (a vector on the other side too)
    offer(f"{right} @ {left}", b, a)
    if len(a) >= 2 and len(b) >= 2:  # both transposed: (b @ a).T
        (ta, ca), (tb, cb) = swapped(a, left), swapped(b, right)
        offer(f"{ca} @ {cb}", ta, tb)
    wanted = contracted(a, b)
    for j in range(2, len(a) + 1):
        if wanted is not None and math.prod(a[-j:]) == wanted[1]:
            lead = a[:-j]
            flat = (*lead, wanted[1])
            shape = f"*{left}.shape[:-{j}], -1" if lead else "-1"
            offer(f"{left}.reshape({shape}) @ {right}", flat, b)
            break
    return found


def _shape_text(shape: Shape) -> str:
    return str(shape) if len(shape) != 1 else f"({shape[0]},)"


# ---- operands that are one example of a jax.vmap batch ------------------------------------


@dataclass(frozen=True)
class Mapped:
    """An operand ``f`` sees as one example: the axis ``jax.vmap`` maps and the whole shape;
    ``param``: the parameter of ``f`` it is (unchanged), when it is one."""

    batch_dim: int
    full_shape: Shape
    param: str | None


@dataclass(frozen=True)
class InAxesFix:
    """An ``in_axes`` for ``f`` under which the product's per-example shapes multiply."""

    code: str
    left_shape: Shape
    right_shape: Shape
    result: Shape


@dataclass(frozen=True)
class Batched:
    """What ``jax.vmap`` made of the failing product's operands (None: not mapped)."""

    left: Mapped | None
    right: Mapped | None
    fixes: list[InAxesFix]


def _per_example(value: Any) -> tuple[int, Shape] | None:
    if value is None:
        return None
    try:  # the one place that reads JAX's tracers (private): jaxscope.internals
        from jaxscope.internals.trace_stack import per_example
    except ImportError:  # no JAX in this worker: no JAX tracer either
        return None
    found = per_example(value)
    return None if found is None else (found.batch_dim, found.full_shape)


def _drop(shape: Shape, axis: int) -> Shape:
    return (*shape[:axis], *shape[axis + 1 :])


def _stored_names(code: Any) -> set[str] | None:
    """The names the snippet function of ``code`` assigns or deletes anywhere in its body (a
    parameter assigned is no longer the argument ``jax.vmap`` passed); None when its
    definition cannot be found."""
    try:
        tree = ast.parse("".join(linecache.getlines(SNIPPET_FILENAME)))
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == code.co_name:
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            if first == code.co_firstlineno:
                return {
                    n.id
                    for n in ast.walk(node)
                    if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store | ast.Del)
                }
    return None


def _f_frame(exc: BaseException, f: object) -> FrameType | None:
    """The frame of the snippet's ``f`` itself (the function the transforms were given):
    the outermost snippet entry of the traceback, when its code is ``f``'s."""
    try:
        code = getattr(inspect.unwrap(f), "__code__", None)  # type: ignore[arg-type]
    except Exception:  # an object inspect cannot unwrap is no function of the snippet
        return None
    for tb in _frames(exc.__traceback__):
        if tb.tb_frame.f_code.co_filename == SNIPPET_FILENAME:
            return tb.tb_frame if tb.tb_frame.f_code is code else None
    return None


def _in_axes_text(axes: list[int | None]) -> str:
    entries = ["None" if a is None else str(a) for a in axes]
    return entries[0] if len(entries) == 1 else f"({', '.join(entries)})"


def batched(exc: BaseException, p: Product, f: object) -> Batched | None:
    """Which operands of ``p`` are per-example values under ``jax.vmap`` (a ``BatchTracer``,
    or a grad/jvp tracer of one), with the ``in_axes`` for ``f`` under which the product's
    per-example shapes multiply: only when every mapped operand is a parameter of ``f`` that
    ``f`` does not reassign, each of ``f``'s parameters is an array or a scalar (so ``in_axes``
    is one entry per parameter), and each ``in_axes`` tried maps axes of one size (as
    ``jax.vmap`` requires); the product's shapes are checked with :func:`matmul_shape`."""
    found = [_per_example(p.left_value), _per_example(p.right_value)]
    if found == [None, None]:
        return None
    frame = _f_frame(exc, f)
    names: list[str] = []
    values: list[Any] = []
    stored: set[str] | None = None
    if frame is not None:
        code = frame.f_code
        names = list(code.co_varnames[: code.co_argcount])
        values = [frame.f_locals.get(n, _MISSING) for n in names]
        stored = _stored_names(code)

    def param(value: Any) -> str | None:
        for name, v in zip(names, values, strict=True):
            if v is value and stored is not None and name not in stored:
                return name
        return None

    left, right = (
        None if m is None else Mapped(m[0], m[1], param(v))
        for m, v in zip(found, (p.left_value, p.right_value), strict=True)
    )
    return Batched(left, right, _in_axes_fixes(p, left, right, names, values))


def _in_axes_fixes(
    p: Product, left: Mapped | None, right: Mapped | None, names: list[str], values: list[Any]
) -> list[InAxesFix]:
    axes: list[int | None] = []
    for v in values:
        m = _per_example(v)
        if m is not None:
            axes.append(m[0])
        elif _is_array(v) or isinstance(v, int | float | complex):
            axes.append(None)
        else:  # a pytree, a missing local: in_axes is not one entry per parameter
            return []
    mapped = [m for m in (left, right) if m is not None]
    if not names or any(m.param is None for m in mapped):
        return []
    varied = list(dict.fromkeys(names.index(m.param) for m in mapped if m.param is not None))
    fulls = {i: m.full_shape for m in mapped if m.param is not None for i in [names.index(m.param)]}
    others = {
        found[1][found[0]]
        for i, v in enumerate(values)
        if i not in varied
        for found in [_per_example(v)]
        if found is not None
    }
    out: list[tuple[int, InAxesFix]] = []
    choices = [range(len(fulls[i])) for i in varied]
    for combo in itertools.product(*choices):
        new = list(axes)
        for i, k in zip(varied, combo, strict=True):
            new[i] = k
        changed = sum(a != b for a, b in zip(new, axes, strict=True))
        sizes = others | {fulls[i][k] for i, k in zip(varied, combo, strict=True)}
        if not changed or len(sizes) != 1:
            continue

        a, b = (
            shape
            if m is None or m.param is None
            else _drop(fulls[names.index(m.param)], new[names.index(m.param)] or 0)
            for m, shape in ((left, p.left_shape), (right, p.right_shape))
        )
        result = matmul_shape(a, b)
        if result is None or (p.nd_dot and max(len(a), len(b)) > 2):
            continue
        out.append((changed, InAxesFix(f"in_axes={_in_axes_text(new)}", a, b, result)))
    least = min((c for c, _ in out), default=0)
    return [fix for c, fix in out if c == least][:3]


def _operand_text(name: str, shape: Shape, m: Mapped | None, any_mapped: bool) -> str:
    text = f"`{name}` has shape {_shape_text(shape)}"
    if m is not None:
        return f"{text} per example"
    return f"{text} (not mapped: the same for every example)" if any_mapped else text


def _mapping_text(name: str, shape: Shape, m: Mapped | None) -> str:
    """How ``jax.vmap`` made the per-example operand ``name`` of shape ``shape``."""
    if m is None:
        return ""
    if m.param is None:
        return (
            f" `{name}` is one example of a batch of shape {_shape_text(m.full_shape)} that"
            f" `jax.vmap` maps over its axis {m.batch_dim}."
        )
    return (
        f" `jax.vmap` maps axis {m.batch_dim} of the argument `{m.param}`, whose whole shape is"
        f" {_shape_text(m.full_shape)}, so each example of it has shape {_shape_text(shape)}."
    )


def _product_help(p: Product, lhs: Shape, rhs: Shape, vm: Batched | None) -> Explanation:
    a, b = p.left_shape, p.right_shape
    b_axis = "the second to last axis" if len(b) > 1 else "the only axis"
    left = _operand_text(p.left, a, vm.left if vm else None, vm is not None)
    right = _operand_text(p.right, b, vm.right if vm else None, vm is not None)
    why = (
        f"A matrix product contracts (sums over) the last axis of its left operand with"
        f" {b_axis} of its right one, so those two sizes must be equal."
        f" Here {left} and {right}: the contracted sizes are {lhs[0]} (the last axis of"
        f" `{p.left}`) and {rhs[0]} ({b_axis} of `{p.right}`)."
    )
    if vm is not None:
        why += _mapping_text(p.left, a, vm.left) + _mapping_text(p.right, b, vm.right)
    found = fixes(p)
    axes_fixes = vm.fixes if vm is not None else []
    options = [
        f"`{f.code}` ({_shape_text(f.left_shape)} @ {_shape_text(f.right_shape)} gives"
        f" {_shape_text(f.result)})"
        for f in found
    ]
    if axes_fixes:
        axes = [
            f"`{f.code}` (each example's product is then {_shape_text(f.left_shape)} @"
            f" {_shape_text(f.right_shape)}, which gives {_shape_text(f.result)})"
            for f in axes_fixes
        ]
        fix = (
            "These are per-example shapes, and the axes `jax.vmap` maps leave the contracted"
            " sizes unequal. Map other axes: "
            + "; or ".join(axes)
            + ". Set it where `in_axes` is set (the snippet's `in_axes = ...`, or the view's"
            " in_axes box)."
        )
        if options:
            fix += " If the mapped axes are right, write " + "; or ".join(options) + "."
        if len(axes_fixes) + len(options) > 1:
            fix += " Keep the one whose result has the shape the next line expects."
        return Explanation(why, fix)
    if not found:
        if vm is not None:
            return Explanation(
                why + " No transpose or reshape of these per-example operands makes them fit.",
                f"No transpose of {_shape_text(a)} and {_shape_text(b)} lines up equal sizes,"
                f" and no other axis of the mapped arguments in `in_axes` does either. These"
                f" are per-example shapes: compare the whole arguments' shapes (`args`) with"
                f" the axis `jax.vmap` maps in each (`in_axes`); the vmap exhibit's inputs"
                f" table shows both.",
            )
        return Explanation(
            why + " No transpose or reshape of these operands makes them fit.",
            f"One of the operands has the wrong size, not just the wrong layout: no transpose"
            f" of {_shape_text(a)} and {_shape_text(b)} lines up equal sizes. Find where it was"
            f" made (a wrong `features`/size argument, a slice, a stale checkpoint); the"
            f" tracing exhibit's eqn list shows every value's shape.",
        )
    fix = "Write " + "; or ".join(options) + "."
    if len(b) == 2 and b[1] == a[-1]:
        fix += (
            f" A weight stored (out, in), as PyTorch stores `nn.Linear`'s, is used transposed"
            f" on the right: `{found[0].code}`."
        )
    if len(found) > 1:
        fix += " Keep the one whose result has the shape the next line expects."
    return Explanation(why, fix)


# ---- a library layer called on an input of the wrong size ---------------------------------

# The libraries whose layers run the product on the user's behalf (the traceback passes through
# their files after the snippet's line).
_LIBRARIES = ("/flax/", "/haiku/", "/equinox/", "/optax/")


def _in_library(exc: BaseException) -> bool:
    """The failing product runs inside a library layer called from the snippet's line."""
    entry = _snippet_entry(exc)
    return entry is not None and any(
        any(lib in tb.tb_frame.f_code.co_filename for lib in _LIBRARIES)
        for tb in _frames(entry.tb_next)
    )


def _int_attr(obj: Any, name: str) -> int | None:
    try:
        value = inspect.getattr_static(obj, name)
    except AttributeError:
        return None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _layer_help(exc: BaseException, lhs: Shape, rhs: Shape) -> Explanation | None:
    """A layer object with ``in_features``/``out_features`` (``nnx.Linear``) called on the
    failing line on an input whose last axis is JAX's left size, where ``in_features`` is the
    right one: the layer was built for another input size."""
    entry = _snippet_entry(exc)
    if entry is None or len(lhs) != 1 or len(rhs) != 1 or not _in_library(exc):
        return None
    frame, line = entry.tb_frame, entry.tb_lineno
    source = "".join(linecache.getlines(SNIPPET_FILENAME))
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and node.lineno <= line <= (node.end_lineno or 0)):
            continue
        if not node.args:
            continue
        layer = _object(node.func, frame)
        x = _object(node.args[0], frame)
        if layer is _MISSING or x is _MISSING or not _is_array(x):
            continue
        if not type(layer).__module__.startswith("flax.nnx"):
            continue  # a layer whose kernel layout this module knows: nnx.Linear's (in, out)
        n_in, n_out = _int_attr(layer, "in_features"), _int_attr(layer, "out_features")
        shape = _shape_attr(x)
        if n_in is None or n_out is None or not shape or (shape[-1], n_in) != (lhs[0], rhs[0]):
            continue
        name = ast.get_source_segment(source, node.func) or "the layer"
        arg = ast.get_source_segment(source, node.args[0]) or "its input"
        kind = f"nnx.{type(layer).__name__}"
        m = _per_example(x)
        shape_text = f"shape {_shape_text(shape)}"
        if m is not None:
            shape_text += (
                f" per example (`jax.vmap` maps axis {m[0]} of its whole shape {_shape_text(m[1])})"
            )
        return Explanation(
            f"`{name}` is a `{kind}` built with in_features={n_in} (out_features={n_out}):"
            f" it multiplies the last axis of its input by its kernel of shape ({n_in},"
            f" {n_out}), so that axis must have size {n_in}. Here `{arg}` has {shape_text},"
            f" whose last axis is {shape[-1]}.",
            f"Build the layer for this input: `in_features={shape[-1]}` where `{name}` is made"
            f" (`{kind}({shape[-1]}, {n_out}, ...)`), or give it an input whose last axis has"
            f" size {n_in}."
            + (
                " Transposing the kernel would not help: it is the input's size that differs"
                " from the layer's."
                if shape[-1] != n_out
                else ""
            ),
        )
    return None


def dot_general_shapes(exc: BaseException, ctx: ErrorContext) -> Explanation | None:
    """Why a matrix product's (``dot_general``'s) contracted or batch axes differ in size,
    naming the operands' shapes and the fixes they allow; else None."""
    if not isinstance(exc, TypeError):
        return None
    first = str(exc)[:_SCAN].lstrip().partition("\n")[0]
    contracting, batch = _CONTRACTING.search(first), _BATCH.search(first)
    m = contracting or batch
    if m is None:
        return None
    lhs, rhs = _sizes(m.group("lhs")), _sizes(m.group("rhs"))
    if lhs is None or rhs is None:
        return None
    if contracting is not None:
        # a matrix product contracts one axis: several (tensordot, einsum) are named as sizes
        single = len(lhs) == 1 and len(rhs) == 1
        for p in _products(exc) if single else ():
            if contracted(p.left_shape, p.right_shape) == (lhs[0], rhs[0]):
                return _product_help(p, lhs, rhs, batched(exc, p, ctx.f))
        layer = _layer_help(exc, lhs, rhs)
        if layer is not None:
            return layer
        if _in_library(exc):
            return Explanation(
                f"`dot_general` (the primitive behind `@` and a Dense/Linear layer) contracts"
                f" (sums over) axes of its two operands pairwise, so each pair must have the"
                f" same size; here the product runs inside a library layer called on this"
                f" line, and its left operand's contracted axes have sizes {_shape_text(lhs)}"
                f" and the right operand's {_shape_text(rhs)}.",
                "Compare the last axis of the layer's input with the input size the layer was"
                " built for (`in_features` of `nnx.Linear`; a linen `Dense` takes it from the"
                " input its parameters were initialised with): change where the layer is made,"
                " or the input you give it.",
            )
        return Explanation(
            f"`dot_general` (the primitive behind `@`, `jnp.matmul`, `jnp.dot`, `jnp.einsum`,"
            f" a Dense layer) contracts (sums over) axes of its two operands pairwise, so each"
            f" pair must have the same size; here the left operand's contracted axes have"
            f" sizes {_shape_text(lhs)} and the right operand's {_shape_text(rhs)}.",
            "Compare the two operands' shapes (the tracing exhibit's eqn list shows them): `@`"
            " contracts the last axis of the left with the second to last of the right. If the"
            " right one is a weight stored (out, in), as PyTorch stores it, use it as"
            " `x @ w.T`; if the left one has extra trailing axes that should be one, flatten"
            " them first (`x.reshape(x.shape[0], -1)`); for `lax.dot_general`, check which"
            " axes `dimension_numbers` contracts.",
        )
    return Explanation(
        f"`dot_general` pairs the batch axes of its two operands one to one (example i of the"
        f" left with example i of the right), so they must have the same sizes; here the left"
        f" operand's batch axes have sizes {_shape_text(lhs)} and the right operand's"
        f" {_shape_text(rhs)}.",
        "Check which axes are the batch axes (`dimension_numbers`' second pair for"
        " `lax.dot_general`, the shared letters kept in the output for `jnp.einsum`) and give"
        " both operands the same size there; an operand shared by every example has no batch"
        " axis: leave it out of the batch axes (or map over the other one with `jax.vmap`,"
        " `in_axes=None` for the shared one).",
    )
