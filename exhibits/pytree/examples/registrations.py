"""One container with a class registered each way JAX offers, and one it does not know (a
leaf). Look at each node's registration and at the key each kind gives its children."""
import dataclasses

import jax
import numpy as np
from jax.tree_util import GetAttrKey


class Point:  # register_pytree_node: children keyed by position (FlattenedIndexKey)
    def __init__(self, x, y):
        self.x, self.y = x, y


jax.tree_util.register_pytree_node(
    Point, lambda p: ((p.x, p.y), "p"), lambda aux, ch: Point(*ch)
)


class Named:  # register_pytree_with_keys: children keyed .x, .y
    def __init__(self, x, y):
        self.x, self.y = x, y


jax.tree_util.register_pytree_with_keys(
    Named,
    lambda n: (((GetAttrKey("x"), n.x), (GetAttrKey("y"), n.y)), None),
    lambda aux, ch: Named(*ch),
)


@jax.tree_util.register_pytree_node_class
class Pair:  # @register_pytree_node_class: tree_flatten / tree_unflatten methods
    def __init__(self, a, b):
        self.a, self.b = a, b

    def tree_flatten(self):
        return (self.a, self.b), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)


@dataclasses.dataclass
class Layer:  # register_dataclass: data fields are children, meta fields aux data
    w: np.ndarray
    act: str


jax.tree_util.register_dataclass(Layer, data_fields=["w"], meta_fields=["act"])


@jax.tree_util.register_static
@dataclasses.dataclass(frozen=True)
class Config:  # register_static: no children at all, the whole object is aux data
    depth: int


@jax.tree_util.register_pytree_with_keys_class
class Keyed:  # @register_pytree_with_keys_class: tree_flatten_with_keys / tree_unflatten
    def __init__(self, u):
        self.u = u

    def tree_flatten_with_keys(self):
        return ((GetAttrKey("u"), self.u),), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)


class Opaque:  # not registered: a leaf (static here: jit cannot trace an object)
    pass


def f(container, opaque):
    return jax.tree.map(lambda x: x, container)


args = (
    {
        "point": Point(1.0, 2.0),
        "named": Named(3.0, 4.0),
        "pair": Pair(5.0, 6.0),
        "layer": Layer(np.ones(2, np.float32), "relu"),
        "config": Config(3),
        "keyed": Keyed(7.0),
    },
    Opaque(),
)
static_argnums = (1,)
