"""Contract tests for the private JAX names ``jaxscope.internals.pytree_walk`` relies on: they
fail loudly when JAX 0.10.2's pytree registry changes shape."""

from __future__ import annotations

import collections
import dataclasses
import operator
from typing import Any

import jax
from jax._src import tree_util as tu
from jaxscope.internals.pytree_walk import registration_of


def test_python_side_registry_maps_types_to_registry_entries() -> None:
    assert isinstance(tu._registry, dict)
    entry = tu._registry[tuple]
    assert entry._fields == ("to_iter", "from_iter")
    assert collections.OrderedDict in tu._registry and collections.defaultdict in tu._registry


def test_each_register_function_leaves_its_mark_on_the_stored_flatten_function() -> None:
    class A:
        pass

    jax.tree_util.register_pytree_node(A, lambda a: ((), None), lambda _, __: A())
    assert tu._registry[A].to_iter.__qualname__.endswith("<lambda>")

    @jax.tree_util.register_pytree_node_class
    class B:
        def tree_flatten(self) -> tuple[tuple[()], None]:
            return (), None

        @classmethod
        def tree_unflatten(cls, _: Any, __: Any) -> Any:
            return cls()

    to_iter = tu._registry[B].to_iter
    assert isinstance(to_iter, operator.methodcaller) and "tree_flatten" in repr(to_iter)

    class C:
        pass

    jax.tree_util.register_pytree_with_keys(C, lambda c: ((), None), lambda _, __: C())
    assert (
        tu._registry[C].to_iter.__qualname__
        == "register_pytree_with_keys.<locals>.flatten_func_impl"
    )

    @dataclasses.dataclass
    class D:
        x: Any

    jax.tree_util.register_dataclass(D, data_fields=["x"], meta_fields=[])
    assert tu._registry[D].to_iter.__qualname__ == "register_dataclass.<locals>.flatten_func"

    @jax.tree_util.register_static
    class E:
        pass

    cells = [c.cell_contents for c in tu._registry[E].to_iter.__closure__]
    assert any(getattr(v, "__qualname__", "").startswith("register_static.") for v in cells)

    @jax.tree_util.register_pytree_with_keys_class
    class F:
        def tree_flatten_with_keys(self) -> tuple[tuple[()], None]:
            return (), None

        @classmethod
        def tree_unflatten(cls, _: Any, __: Any) -> Any:
            return cls()

    cells = [c.cell_contents for c in tu._registry[F].to_iter.__closure__]
    assert any(
        isinstance(v, operator.methodcaller) and "tree_flatten_with_keys" in repr(v) for v in cells
    )
    kinds = [registration_of(cls()) for cls in (A, B, C, E, F)] + [registration_of(D(1))]
    assert kinds == [
        "register_pytree_node",
        "register_pytree_node_class",
        "register_pytree_with_keys",
        "register_static",
        "register_pytree_with_keys_class",
        "register_dataclass",
    ]


def test_namedtuples_are_nodes_without_a_python_registry_entry() -> None:
    nt = collections.namedtuple("nt", "a b")
    assert nt not in tu._registry
    assert registration_of(nt(1, 2)) == "namedtuple"


def test_treedef_node_data_gives_type_and_aux() -> None:
    td: Any = jax.tree_util.tree_structure(
        {"b": 1, "a": 2}, is_leaf=lambda x: not isinstance(x, dict)
    )
    assert td.node_data() == (dict, ["a", "b"])
    leaf: Any = jax.tree_util.tree_structure(1)
    assert leaf.node_data() is None
