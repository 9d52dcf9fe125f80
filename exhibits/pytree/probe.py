"""The pytree exhibit's probe: how JAX flattens the snippet's ``args`` (and ``other``), node by
node, then what ``f`` gets under ``jax.jit`` (the arguments rebuilt from the treedef) and eagerly.

Snippet names: ``f`` and ``args`` (required, as in every exhibit; ``args`` is the container that
is flattened: the tuple of ``f``'s positional arguments, so key paths start with ``[0]``),
optional ``other`` (a second container to compare with ``args``) and ``is_leaf`` (a callable
passed to every flatten here, as ``jax.tree_util``'s ``is_leaf``).

Events, in order:

* stage ``trace``: one :class:`PytreeNodeVisited` per node of ``args`` in JAX's visit order
  (``internals.pytree_walk.walk``), then :class:`PytreeFlattened` (``name="args"``:
  ``tree_flatten_with_path``'s leaves, ``keystr`` paths and treedef, unflatten round trip);
  with ``other``: its visits (``tree="other"``), its :class:`PytreeFlattened` and
  :class:`TreedefsCompared`. Then :class:`JaxprStaged`: ``jax.make_jaxpr(f, static_argnums)
  (*args)``, whose invars are the leaves in this order (static arguments aside).
* stage ``run``: :class:`PytreeCalled`: ``jax.jit(f)(*args)`` and eager ``f(*args)``.

The user's exceptions propagate (the runner reports them with the user's line): an ``is_leaf``
or a custom flatten that raises, an unsortable dict, an error inside ``f``.
"""

from __future__ import annotations

import ast
from typing import Any

import jax
import numpy as np
from jaxscope.exhibit_api import (
    FAULT_ATTR,
    ArrayPreview,
    InvalidSnippet,
    JaxprStaged,
    NodeFault,
    ProbeContext,
    blame_line,
    check_container,
    first_difference,
    jaxpr_view,
    leaf_aval,
    output_previews,
    plan_call,
    preview_value,
    setting_line,
    type_name,
    walk_pytree,
)

from exhibits.pytree.events import (
    PytreeCalled,
    PytreeFlattened,
    PytreeNodeVisited,
    TreedefsCompared,
)

# At most this many node visits are sent per container (the walk stops there).
MAX_VISITS = 400
# At most this many leaf previews per container.
MAX_PREVIEWS = 400
# At most this many leaves in the key path / type / aval lists (``leaves_omitted``: the rest).
MAX_LEAVES = 2000
UNFLATTENED_CHARS = 2000
# Treedef texts (they print every aux data's repr) are cut at this length.
TREEDEF_CHARS = 4000
ERROR_CHARS = 4000

_CYCLIC_EXPLANATION = (
    "the container is cyclic or nested too deeply: jaxscope walks it one level at a time before"
    " JAX flattens it, and found a node that contains itself or more levels than JAX's C++"
    " flatten can recurse through."
)


class _AvalMark:
    """Stands in for a leaf when the rebuilt container is printed: ``repr`` is the aval."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def is_leaf_of(namespace: dict[str, Any]) -> Any:
    """The snippet's ``is_leaf`` (``None`` when absent); it must be callable."""
    value = namespace.get("is_leaf")
    if value is not None and not callable(value):
        raise InvalidSnippet(f"`is_leaf` must be callable, got {type(value).__name__}")
    return value


def cut(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, saying how long it was."""
    if len(text) <= limit:
        return text
    return text[:limit] + f"… ({len(text) - limit:,} more characters)"


def registration_line(source: str, cls: type) -> int | None:
    """The snippet line that registered ``cls`` as a pytree: a ``register_*(cls, ...)`` call or
    a ``@register_*`` decorator on ``class cls`` (found with :mod:`ast`)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None

    def name_of(node: ast.expr) -> str:
        if isinstance(node, ast.Call):
            node = node.func
        if isinstance(node, ast.Attribute):
            return node.attr
        return node.id if isinstance(node, ast.Name) else ""

    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == cls.__name__:
            for dec in node.decorator_list:
                if name_of(dec).startswith("register_"):
                    return dec.lineno
        if (
            isinstance(node, ast.Call)
            and name_of(node).startswith("register_")
            and node.args
            and isinstance(node.args[0], ast.Name)
            and node.args[0].id == cls.__name__
        ):
            return node.lineno
    return None


def checked(ctx: ProbeContext, tree: Any, is_leaf: Any, name: str) -> None:
    """:func:`check_container` on the snippet's ``name`` (``args``/``other``); its errors are
    blamed on the line that sets ``name`` (a cyclic or too deep container, unsortable dict
    keys) or on the line that registered the class whose flatten failed."""
    source = ctx.snippet.source
    try:
        check_container(tree, is_leaf)
    except RecursionError as err:
        blame_line(err, setting_line(source, name), explanation=_CYCLIC_EXPLANATION)
        raise
    except Exception as err:
        fault = getattr(err, FAULT_ATTR, None)
        line = None
        if isinstance(fault, NodeFault) and fault.registered:
            line = registration_line(source, fault.node_type)
        node = (
            f"the {fault.node_type.__qualname__} at {fault.keypath} of `{name}`"
            if isinstance(fault, NodeFault)
            else f"`{name}`"
        )
        how = (
            "with the flatten function registered at this line"
            if line is not None
            else f"(`{name}` is set at this line)"
        )
        blame_line(
            err,
            line or setting_line(source, name),
            explanation=f"JAX raised this while flattening {node} {how}, before f ran.",
        )
        raise


def visited_events(tree: Any, is_leaf: Any, name: str) -> list[PytreeNodeVisited]:
    """One event per node JAX visits in ``tree`` (the first :data:`MAX_VISITS`: the walk
    stops there)."""
    return [
        PytreeNodeVisited(
            tree=name,
            index=v.index,
            keypath=v.keypath,
            node_type=v.node_type,
            registration=v.registration,
            is_leaf_result=v.is_leaf_result,
            children=v.children,
            leaf_index=v.leaf_index,
            parent=v.parent,
            depth=v.depth,
            aux=v.aux,
            aval=v.aval,
        )
        for v in walk_pytree(tree, is_leaf, limit=MAX_VISITS)
    ]


def flattened_event(tree: Any, is_leaf: Any, name: str) -> PytreeFlattened:
    """``tree_flatten_with_path(tree, is_leaf)`` and the unflatten round trip."""
    treedef: Any
    with_path, treedef = jax.tree_util.tree_flatten_with_path(tree, is_leaf=is_leaf)
    keypaths = [jax.tree_util.keystr(p) for p, _ in with_path[:MAX_LEAVES]]
    leaves = [leaf for _, leaf in with_path]
    avals = [leaf_aval(leaf) for leaf in leaves[:MAX_LEAVES]]
    previews = [
        ArrayPreview(
            path=path,
            shape=[int(d) for d in getattr(leaf, "shape", ())],
            dtype=str(getattr(leaf, "dtype", type(leaf).__name__)),
            preview=preview_value(leaf, 400),
        )
        for path, leaf in zip(keypaths[:MAX_PREVIEWS], leaves[:MAX_PREVIEWS], strict=False)
    ]
    rebuilt = jax.tree_util.tree_unflatten(treedef, leaves)
    back_def: Any
    back, back_def = jax.tree_util.tree_flatten(rebuilt, is_leaf=is_leaf)
    roundtrip = back_def == treedef and all(a is b for a, b in zip(back, leaves, strict=True))
    marks = [_AvalMark(a) for a in avals] + [_AvalMark("…")] * (len(leaves) - len(avals))
    try:
        text = repr(jax.tree_util.tree_unflatten(treedef, marks))
    except Exception as err:  # a custom unflatten that checks its children's types
        text = f"(unflatten with placeholders raised {type(err).__name__}: {err})"
    if len(text) > UNFLATTENED_CHARS:
        text = text[: UNFLATTENED_CHARS - 1] + "…"
    treedef_text = str(treedef)
    return PytreeFlattened(
        name=name,
        keypaths=keypaths,
        leaves=previews,
        leaf_types=[type_name(leaf) for leaf in leaves[:MAX_LEAVES]],
        avals=avals,
        treedef=cut(treedef_text, TREEDEF_CHARS),
        num_leaves=treedef.num_leaves,
        num_nodes=treedef.num_nodes,
        roundtrip_ok=bool(roundtrip),
        unflattened=text,
        leaves_omitted=max(len(leaves) - MAX_LEAVES, 0),
        treedef_chars=len(treedef_text),
    )


def compared_event(left: Any, right: Any, is_leaf: Any) -> TreedefsCompared:
    """The two treedefs, ``==``, the first difference and ``jax.tree.map``'s error, if any."""
    left_def: Any = jax.tree_util.tree_structure(left, is_leaf=is_leaf)
    right_def: Any = jax.tree_util.tree_structure(right, is_leaf=is_leaf)
    diff = first_difference(left, right, is_leaf)
    jax_error = None
    try:
        jax.tree.map(lambda *_: None, left, right, is_leaf=is_leaf)
    except (ValueError, TypeError) as err:  # JAX's pytree structure error, shown beside the diff
        jax_error = cut(f"{type(err).__name__}: {err}", ERROR_CHARS)
    return TreedefsCompared(
        left=cut(str(left_def), TREEDEF_CHARS),
        right=cut(str(right_def), TREEDEF_CHARS),
        equal=bool(left_def == right_def),
        keypath=diff.keypath if diff else None,
        kind=diff.kind if diff else None,
        difference=diff.text if diff else None,
        jax_error=jax_error,
    )


def _agree(a: Any, b: Any) -> bool:
    da: Any
    la, da = jax.tree_util.tree_flatten(a)
    lb, db = jax.tree_util.tree_flatten(b)
    if da != db:
        return False
    try:
        return all(
            np.shape(x) == np.shape(y) and bool(np.allclose(x, y, equal_nan=True))
            for x, y in zip(la, lb, strict=True)
        )
    except TypeError:  # leaves that numpy cannot compare (strings, objects)
        return all(x is y or x == y for x, y in zip(la, lb, strict=True))


def run(ctx: ProbeContext) -> None:
    """Run the pytree exhibit on ``ctx.snippet`` (user exceptions propagate unchanged)."""
    namespace = ctx.snippet.namespace
    is_leaf = is_leaf_of(namespace)
    args = ctx.snippet.args
    with ctx.stage("trace"):
        # Before anything hands the containers to JAX's C++ flatten (plan_call does).
        checked(ctx, args, is_leaf, "args")
        if "other" in namespace:
            checked(ctx, namespace["other"], is_leaf, "other")
        plan = plan_call(ctx.snippet)
        for event in visited_events(args, is_leaf, "args"):
            ctx.emit(event)
        ctx.emit(flattened_event(args, is_leaf, "args"))
        if "other" in namespace:
            other = namespace["other"]
            for event in visited_events(other, is_leaf, "other"):
                ctx.emit(event)
            ctx.emit(flattened_event(other, is_leaf, "other"))
            ctx.emit(compared_event(args, other, is_leaf))
        jaxpr = plan.make_jaxpr()
    ctx.emit(JaxprStaged(fun_name=plan.fun_name, jaxpr=jaxpr_view(jaxpr)))
    with ctx.stage("run"):
        jitted = plan.call(plan.jit())
        eager = plan.fun(*plan.args, **plan.kwargs)
    ctx.emit(
        PytreeCalled(
            fun_name=plan.fun_name,
            jit_outputs=output_previews(jitted),
            eager_outputs=output_previews(eager),
            out_treedef=str(jax.tree_util.tree_structure(jitted)),
            agree=_agree(jitted, eager),
        )
    )
