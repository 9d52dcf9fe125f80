"""How ``jax.tree_util`` flattens a container, node by node, read off JAX itself.

:func:`walk` returns one :class:`Visit` per node in JAX's visit order. The order is JAX's: the
container is flattened with ``jax.tree_util.tree_flatten_with_path`` and an ``is_leaf`` spy that
records every object JAX asks about (JAX consults ``is_leaf`` on every node, the root included,
before it looks the type up), and the walk is checked against that record node for node and
against ``tree_flatten_with_path``'s leaf key paths (a mismatch raises :class:`WalkMismatch`).
Each node's children and their keys come from JAX too (:func:`one_level`: one level of
``tree_flatten_with_path``; dict keys sorted, ``None`` with no children, ``FlattenedIndexKey``
for a node registered without keys).

How a type was registered is read from JAX's Python-side registry ``jax._src.tree_util._registry``
(the flatten function each ``register_*`` function stores there).

:func:`first_difference` walks two containers side by side the way ``PyTreeDef.__eq__`` compares
treedefs (node kind, type, dict keys, number of children, aux data, pre-order) and reports the
first node that differs.

Private names used (contract tests in ``backend/tests/test_internals_contract_pytree.py``):
``jax._src.tree_util._registry`` (type -> ``_RegistryEntry(to_iter, from_iter)``) and the
qualnames of the flatten functions stored by
``register_dataclass``, ``register_pytree_with_keys`` and ``register_static``.
"""

from __future__ import annotations

import collections
import operator
from dataclasses import dataclass, field
from typing import Any, Protocol

import jax
import numpy as np
from jax._src import tree_util as _tu

_BUILTIN_CONTAINERS = (tuple, list, dict, collections.OrderedDict, collections.defaultdict)
_DICT_LIKE = (dict, collections.OrderedDict, collections.defaultdict)
AUX_CHARS = 200


# Deeper containers are refused before JAX sees them: JAX's C++ flatten recurses once per level
# and, past Python's recursion limit, raises RecursionError and leaves the interpreter's
# recursion counter exhausted (jaxlib 0.10.2: nothing, not even ``print``, runs afterwards).
MAX_DEPTH = 500
# Types JAX always takes for leaves (never registered), skipped without asking JAX.
_PLAIN_LEAVES = (int, float, complex, bool, str, bytes, np.ndarray, np.generic)


class WalkMismatch(AssertionError):
    """The walk disagrees with the order or key paths JAX itself produced."""


@dataclass(frozen=True)
class Visit:
    """One node JAX visited: ``index`` in visit order, ``keypath`` (``keystr``), ``node_type``
    (the class's qualname), ``registration`` (see :func:`registration_of`), what ``is_leaf``
    returned (``None`` when no ``is_leaf`` was given), the children's keys in JAX's order
    (``keystr`` of each key), ``leaf_index`` (position among the leaves, ``None`` for a node),
    ``parent`` (the parent's ``index``), ``depth`` (root 0), ``aux`` (the node's aux data as
    JAX keeps it in the treedef, ``repr``, for namedtuples and registered classes) and ``aval``
    (a leaf's ``jax.typeof`` short form, e.g. ``f32[2]``, else its type name)."""

    index: int
    keypath: str
    node_type: str
    registration: str
    is_leaf_result: bool | None
    children: list[str] = field(default_factory=list)
    leaf_index: int | None = None
    parent: int | None = None
    depth: int = 0
    aux: str | None = None
    aval: str | None = None


class _TreeDef(Protocol):
    """What :func:`one_level` reads of a ``PyTreeDef``. jaxlib ships no stub for that C++ type,
    so the name JAX annotates ``tree_flatten_with_path`` with does not resolve for mypy.
    ``num_nodes``/``num_leaves`` are public; ``node_data()`` is pinned by
    test_internals_contract_pytree.py."""

    @property
    def num_nodes(self) -> int: ...

    @property
    def num_leaves(self) -> int: ...

    def node_data(self) -> tuple[type[Any], Any] | None: ...


def one_level(node: Any) -> tuple[list[tuple[Any, Any]], Any] | None:
    """``(children with their keys, aux data)`` of ``node`` as JAX flattens it, ``None`` when
    JAX takes ``node`` for a leaf.

    One level of ``jax.tree_util.tree_flatten_with_path`` (an ``is_leaf`` that stops below
    ``node``) and ``PyTreeDef.node_data()`` for the aux data. Not the C++ registry's
    ``flatten_one_level_with_keys``: in jaxlib 0.10.2 it gives every child of a namedtuple the
    first field's key (``.a, .a, .a``), while ``tree_flatten_with_path`` gives ``.a, .b, .c``."""
    asked = [False]

    def below_root(x: Any) -> bool:  # JAX asks about the root first, then each child
        del x
        if asked[0]:
            return True
        asked[0] = True
        return False

    # Not ``x is not node``: a cyclic container holds ``node`` itself as a child.
    treedef: _TreeDef
    keyed, treedef = jax.tree_util.tree_flatten_with_path(node, is_leaf=below_root)
    if treedef.num_nodes == 1 and treedef.num_leaves == 1:
        return None
    data = treedef.node_data()
    aux = data[1] if data is not None else None
    return [(path[0], child) for path, child in keyed], aux


def _qualname(fn: Any) -> str:
    return str(getattr(fn, "__qualname__", ""))


def _closure_values(fn: Any) -> list[Any]:
    cells = getattr(fn, "__closure__", None) or ()
    out = []
    for cell in cells:
        try:
            out.append(cell.cell_contents)
        except ValueError:  # an empty cell
            continue
    return out


def registration_of(node: Any) -> str:
    """How ``type(node)`` is known to JAX's pytree registry.

    ``leaf`` (not registered: arrays, scalars, other objects), ``None``, ``builtin`` (tuple, list,
    dict, OrderedDict, defaultdict), ``namedtuple``, or the public function that registered it:
    ``register_pytree_node``, ``register_pytree_with_keys``, ``register_pytree_node_class``,
    ``register_pytree_with_keys_class``, ``register_dataclass``, ``register_static``. A class
    registered with ``register_pytree_with_keys`` *and* an explicit ``flatten_func`` reads as
    ``register_pytree_node`` (the registry keeps only the flatten function)."""
    cls = type(node)
    if node is None:
        return "None"
    if cls in _BUILTIN_CONTAINERS:
        return "builtin"
    entry = _tu._registry.get(cls)
    if entry is None:
        if one_level(node) is None:
            return "leaf"
        if isinstance(node, tuple) and hasattr(cls, "_fields"):
            return "namedtuple"
        return "registered"
    to_iter = entry.to_iter
    if isinstance(to_iter, operator.methodcaller):
        return "register_pytree_node_class"
    name = _qualname(to_iter)
    if name.startswith("register_dataclass."):
        return "register_dataclass"
    if name.startswith("register_pytree_with_keys."):
        inner = _closure_values(to_iter)
        if any(_qualname(v).startswith("register_static.") for v in inner):
            return "register_static"
        if any(
            isinstance(v, operator.methodcaller) and "tree_flatten_with_keys" in repr(v)
            for v in inner
        ):
            return "register_pytree_with_keys_class"
        return "register_pytree_with_keys"
    return "register_pytree_node"


def leaf_aval(leaf: Any) -> str:
    """``jax.typeof(leaf)`` in short form (``f32[2]``; a weak type marked ``~``: ``~f32[]``),
    else the type name (a string, a custom object)."""
    try:
        aval = jax.typeof(leaf)
    except TypeError:
        return type(leaf).__name__
    try:
        text = str(aval.str_short(short_dtypes=True))
    except TypeError:
        text = str(aval.str_short())
    # JAX marks a weak type with "~" in a tracer's repr (``JitTracer(~int32[])``).
    return "~" + text if getattr(aval, "weak_type", False) else text


def type_name(obj: Any) -> str:
    """``module.qualname`` of ``type(obj)`` (``jaxlib._jax.ArrayImpl``, ``builtins.float``)."""
    cls = type(obj)
    return f"{cls.__module__}.{cls.__qualname__}"


def _aux_text(node: Any, registration: str, aux: Any) -> str | None:
    if registration in ("leaf", "None", "builtin", "is_leaf", "namedtuple"):
        return None
    text = repr(aux)
    return text if len(text) <= AUX_CHARS else text[: AUX_CHARS - 1] + "…"


@dataclass(frozen=True)
class NodeFault:
    """Where :func:`check_container` found JAX's flatten of one node failing: ``keypath``
    (``keystr``), the node's class and whether the class is in JAX's Python-side registry
    (``register_pytree_node`` and friends: the registration's flatten is at fault)."""

    keypath: str
    node_type: type
    registered: bool


# The attribute :func:`check_container` sets on an exception raised by JAX's flatten of a node.
FAULT_ATTR = "_jaxscope_node_fault"


def check_container(tree: Any, is_leaf: Any = None, max_depth: int = MAX_DEPTH) -> int:
    """Walk ``tree`` one level at a time (iteratively, with :func:`one_level`, consulting
    ``is_leaf`` as JAX does) before JAX flattens it whole; returns the number of nodes.

    Raises ``RecursionError`` when a node is its own ancestor (a cyclic container) or the
    nesting is deeper than ``max_depth``. An exception from one node's flatten (unsortable dict
    keys, a registered flatten returning garbage) propagates with a :class:`NodeFault` in its
    :data:`FAULT_ATTR` attribute."""
    on_path: set[int] = set()
    count = 0
    stack: list[tuple[Any, tuple[Any, ...], bool]] = [(tree, (), False)]
    while stack:
        node, path, leaving = stack.pop()
        if leaving:
            on_path.discard(id(node))
            continue
        count += 1
        if node is None or type(node) in _PLAIN_LEAVES or isinstance(node, jax.Array):
            continue
        if is_leaf is not None and is_leaf(node):
            continue
        where = _short_keystr(path)
        if id(node) in on_path:
            raise RecursionError(
                f"the container is cyclic: the {type(node).__qualname__} at {where} contains "
                "itself (it is its own ancestor), so JAX's flatten would never end"
            )
        if len(path) > max_depth:
            raise RecursionError(
                f"the container is nested too deeply: more than {max_depth} levels (at {where}) "
                "(JAX's C++ flatten recurses once per level, into Python's recursion limit)"
            )
        try:
            got = one_level(node)
        except Exception as err:
            fault = NodeFault(where, type(node), type(node) in _tu._registry)
            try:
                setattr(err, FAULT_ATTR, fault)
            except (AttributeError, TypeError):
                pass
            raise
        if got is None:
            continue
        on_path.add(id(node))
        stack.append((node, path, True))
        for k, child in reversed(got[0]):
            stack.append((child, (*path, k), False))
    return count


def _short_keystr(path: tuple[Any, ...], keep: int = 6) -> str:
    if not path:
        return "the root"
    if len(path) <= 2 * keep:
        return jax.tree_util.keystr(path)
    head = jax.tree_util.keystr(path[:keep])
    tail = jax.tree_util.keystr(path[-keep:])
    return f"{head}…({len(path) - 2 * keep} levels)…{tail}"


class _Enough(Exception):
    pass


def walk(tree: Any, is_leaf: Any = None, limit: int | None = None) -> list[Visit]:
    """Every node of ``tree`` in JAX's visit order (see the module docstring); with ``limit``,
    only the first ``limit`` nodes: the walk stops there (the nodes after it are not looked at,
    and only the visited prefix is checked against JAX's order)."""
    asked: list[Any] = []
    answers: list[bool] = []

    def spy(x: Any) -> bool:
        asked.append(x)
        answer = bool(is_leaf(x)) if is_leaf is not None else False
        answers.append(answer)
        return answer

    flat, _ = jax.tree_util.tree_flatten_with_path(tree, is_leaf=spy)
    visits: list[Visit] = []
    leaves: list[tuple[Any, ...]] = []

    def visit(node: Any, path: tuple[Any, ...], parent: int | None, depth: int) -> None:
        index = len(visits)
        if limit is not None and index >= limit:
            raise _Enough
        if index >= len(asked) or asked[index] is not node:
            raise WalkMismatch(f"node {index} at {jax.tree_util.keystr(path)} is not JAX's")
        said = answers[index]
        got = None if said else one_level(node)
        if got is None:
            visits.append(
                Visit(
                    index=index,
                    keypath=jax.tree_util.keystr(path),
                    node_type=type(node).__qualname__,
                    registration="is_leaf" if said else registration_of(node),
                    is_leaf_result=said if is_leaf is not None else None,
                    leaf_index=len(leaves),
                    parent=parent,
                    depth=depth,
                    aval=leaf_aval(node),
                )
            )
            leaves.append(path)
            return
        keyed, aux = got
        registration = registration_of(node)
        visits.append(
            Visit(
                index=index,
                keypath=jax.tree_util.keystr(path),
                node_type=type(node).__qualname__,
                registration=registration,
                is_leaf_result=said if is_leaf is not None else None,
                children=[jax.tree_util.keystr((k,)) for k, _ in keyed],
                parent=parent,
                depth=depth,
                aux=_aux_text(node, registration, aux),
            )
        )
        for k, child in keyed:
            visit(child, (*path, k), index, depth + 1)

    try:
        visit(tree, (), None, 0)
    except _Enough:
        if [tuple(p) for p, _ in flat[: len(leaves)]] != leaves:
            raise WalkMismatch("leaf key paths differ from tree_flatten_with_path's") from None
        return visits
    if len(visits) != len(asked):
        raise WalkMismatch(f"JAX asked about {len(asked)} nodes, the walk has {len(visits)}")
    if [tuple(p) for p, _ in flat] != leaves:
        raise WalkMismatch("leaf key paths differ from tree_flatten_with_path's")
    return visits


@dataclass(frozen=True)
class Difference:
    """The first node where two containers' structures differ: its ``keypath`` (``keystr``),
    ``kind`` (``leaf/node``, ``type``, ``keys``, ``arity``, ``aux data``), a sentence, and the
    two nodes there (``left``, ``right``: not compared, for callers that describe them)."""

    keypath: str
    kind: str
    text: str
    left: Any = field(default=None, compare=False, repr=False)
    right: Any = field(default=None, compare=False, repr=False)


def _describe(node: Any, got: tuple[list[tuple[Any, Any]], Any] | None) -> str:
    if got is None:
        return f"a leaf ({type(node).__qualname__})"
    if node is None:
        return "None (a node with no children)"
    n = len(got[0])
    return f"a {type(node).__qualname__} node with {n} {'child' if n == 1 else 'children'}"


def first_difference(left: Any, right: Any, is_leaf: Any = None) -> Difference | None:
    """The first node, in JAX's visit order, where ``left`` and ``right`` have different
    structure (what makes their treedefs unequal), or ``None`` when they match."""

    def info(x: Any) -> tuple[list[tuple[Any, Any]], Any] | None:
        if is_leaf is not None and is_leaf(x):
            return None
        return one_level(x)

    def compare(a: Any, b: Any, path: tuple[Any, ...]) -> Difference | None:
        where = jax.tree_util.keystr(path)
        ia, ib = info(a), info(b)
        if ia is None and ib is None:
            return None
        if ia is None or ib is None:
            return Difference(
                where,
                "leaf/node",
                f"left is {_describe(a, ia)}, right is {_describe(b, ib)}",
                a,
                b,
            )
        if type(a) is not type(b):
            return Difference(
                where,
                "type",
                f"left is {_describe(a, ia)}, right is {_describe(b, ib)}",
                a,
                b,
            )
        (ka, auxa), (kb, auxb) = ia, ib
        if isinstance(a, _DICT_LIKE):
            keys_a = [k.key for k, _ in ka]
            keys_b = [k.key for k, _ in kb]
            if keys_a != keys_b:
                only_a = [k for k in keys_a if k not in keys_b]
                only_b = [k for k in keys_b if k not in keys_a]
                if only_a or only_b:
                    text = f"keys only on the left: {only_a!r}; only on the right: {only_b!r}"
                else:
                    text = f"the same keys in another order: {keys_a!r} vs {keys_b!r}"
                return Difference(where, "keys", text, a, b)
        if len(ka) != len(kb):
            return Difference(
                where,
                "arity",
                f"{type(a).__qualname__} with {len(ka)} children on the left, {len(kb)} on the "
                "right",
                a,
                b,
            )
        if type(a) is not dict and not _aux_equal(auxa, auxb):
            return Difference(
                where,
                "aux data",
                f"{type(a).__qualname__} aux data {_short_repr(auxa)} on the left, "
                f"{_short_repr(auxb)} on the right",
                a,
                b,
            )
        for (k, ca), (_, cb) in zip(ka, kb, strict=True):
            found = compare(ca, cb, (*path, k))
            if found is not None:
                return found
        return None

    return compare(left, right, ())


def _aux_equal(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:  # an aux whose __eq__ fails: JAX's treedef equality would fail too
        return False


def _short_repr(x: Any) -> str:
    text = repr(x)
    return text if len(text) <= AUX_CHARS else text[: AUX_CHARS - 1] + "…"
