"""The pytree exhibit's events: ``pytree_node_visited`` (each node in ``tree_flatten``'s visit
order), ``pytree_flattened`` (leaves, key paths, treedef), ``treedefs_compared`` and
``pytree_called`` (``jax.jit(f)`` against eager ``f`` on the containers).

It imports only pydantic and ``jaxscope.protocol`` (the core views); ``jaxscope.events`` puts
``EVENTS`` into the event union (see its docstring).
"""

from __future__ import annotations

from typing import Literal

from jaxscope.exhibit_api import ArrayPreview, EventBase


class PytreeNodeVisited(EventBase):
    """One node visited while ``tree_flatten`` walks a container, in JAX's visit order (read off
    an ``is_leaf`` spy passed to ``tree_flatten_with_path``): ``tree`` (``args`` or ``other``),
    its key path (``keystr``), type (qualname), how it is registered (``leaf``, ``None``,
    ``builtin``, ``namedtuple``, ``is_leaf``, ``register_pytree_node``, ``register_dataclass``,
    ...), what ``is_leaf`` returned (``None``: no ``is_leaf`` given), the children's keys in the
    order JAX visits them (dict keys sorted), and for a leaf its index among the leaves and aval
    (``f32[2]``, ``~`` marks a weak type); ``aux`` is a registered node's aux data (``repr``)."""

    type: Literal["pytree_node_visited"] = "pytree_node_visited"
    tree: str = "args"
    index: int
    keypath: str
    node_type: str
    registration: str
    is_leaf_result: bool | None = None
    children: list[str] = []
    leaf_index: int | None = None
    parent: int | None = None
    depth: int = 0
    aux: str | None = None
    aval: str | None = None


class PytreeFlattened(EventBase):
    """The result of ``jax.tree_util.tree_flatten_with_path``: leaves with their key paths,
    JAX's treedef string, leaf and node counts (``treedef.num_leaves``/``num_nodes``), each
    leaf's type (``module.qualname``) and aval, and whether ``tree_unflatten(treedef, leaves)``
    gave back a container with the same treedef and the very same leaf objects.
    ``keypaths``/``leaf_types``/``avals`` (and ``leaves``, the previews) are the first leaves
    only on a large container: ``leaves_omitted`` says how many leaves they leave out;
    ``treedef`` is cut at a few thousand characters (``treedef_chars``: its full length)."""

    type: Literal["pytree_flattened"] = "pytree_flattened"
    name: str
    keypaths: list[str]
    leaves: list[ArrayPreview]
    leaf_types: list[str] = []
    avals: list[str] = []
    treedef: str
    num_leaves: int
    num_nodes: int
    roundtrip_ok: bool
    unflattened: str = ""
    leaves_omitted: int = 0
    treedef_chars: int = 0


class TreedefsCompared(EventBase):
    """Two containers' treedefs (``args`` and ``other``): equal or not (``treedef ==``), and the
    first node in visit order where they differ: its key path and ``kind`` (``leaf/node``,
    ``type``, ``keys``, ``arity``, ``aux data``) with a sentence; ``jax_error`` is what
    ``jax.tree.map`` over the two raises (JAX's own "pytree structure error" text), if any."""

    type: Literal["treedefs_compared"] = "treedefs_compared"
    left: str
    right: str
    equal: bool
    keypath: str | None = None
    kind: str | None = None
    difference: str | None = None
    jax_error: str | None = None


class PytreeCalled(EventBase):
    """``f`` called on the snippet's ``args``: ``jax.jit(f)(*args)`` (the arguments flattened to
    leaves and rebuilt from the treedef inside) and eager ``f(*args)`` (the user's containers
    as they are); outputs as leaf previews with key paths, and whether the two agree
    (``numpy.allclose`` per leaf, same output treedef)."""

    type: Literal["pytree_called"] = "pytree_called"
    fun_name: str
    jit_outputs: list[ArrayPreview]
    eager_outputs: list[ArrayPreview]
    out_treedef: str
    agree: bool


# This exhibit's events, in the order the union lists them (checked: every event class
# defined here must be listed, see ``jaxscope.events``).
EVENTS: tuple[type[EventBase], ...] = (
    PytreeNodeVisited,
    PytreeFlattened,
    TreedefsCompared,
    PytreeCalled,
)
