"""The lookup exported the way the report says works: the bin edges keep their concrete
length, the queries get the symbolic one (``n``). See ``EX01_searchsorted_symbolic_broken.py``."""

import jax.numpy as jnp
import numpy as np


def f(edges, values):
    return jnp.searchsorted(edges, values)


args = (np.linspace(0.0, 1.0, 11, dtype=np.float32), np.array([0.05, 0.5, 0.93], np.float32))
shapes = [None, "(n,)"]
