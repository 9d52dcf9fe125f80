"""Two containers that look alike: ``args`` and ``other`` differ at one node (a list where a
tuple was). Under jit that is a new treedef, so a retrace; in ``jax.tree.map`` it is a "pytree
structure error". Try other differences: a missing dict key, a different aux (``"relu"``), a
``None`` for a leaf."""
import jax
import numpy as np


def f(state):
    return jax.tree.map(lambda x: x * 2, state)


args = ({"w": np.ones(2, np.float32), "hist": (1.0, 2.0)},)
other = ({"w": np.ones(2, np.float32), "hist": [1.0, 2.0]},)
