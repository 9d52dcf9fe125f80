"""The ramp exported with the constraint the hint computes from the comparison JAX could not
decide (``T > 1``, true for the example's ``T = 6``). See ``EX02_linspace_symbolic_broken.py``."""

import jax.numpy as jnp
import numpy as np


def f(x):
    ramp = jnp.linspace(0.0, 1.0, x.shape[0])
    return x * ramp[:, None]


args = (np.ones((6, 3), np.float32),)
shapes = ["(T, 3)"]
constraints = ["T >= 2"]
