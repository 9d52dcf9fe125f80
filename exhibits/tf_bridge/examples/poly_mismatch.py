"""Both arguments share the dimension variable `b`, which TensorFlow's signature cannot say (it
has None for each): TensorFlow accepts a 3 and a 4, and the serialized module's shape assertion
refuses them when it runs. The run fails at the `polymorphic_shapes` line."""

import jax.numpy as jnp
import numpy as np


def f(x, y):
    return jnp.sin(x) * y


args = (np.ones(3, np.float32), np.ones(4, np.float32))
polymorphic_shapes = ["(b,)", "(b,)"]
