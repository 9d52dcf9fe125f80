"""A host callback that raises while the compiled program runs (an input check in
``jax.debug.callback``).

Report: JAX's external-callbacks guide (https://docs.jax.dev/en/latest/external-callbacks.html,
"Exploring jax.debug.callback"), where an exception raised in a callback surfaces from the
jitted call: XLA hands it back as a ``JaxRuntimeError`` whose message holds the callback's
traceback. Plain ``jax.jit(f)(*args)`` raises: an exhibit that runs ``f`` must not show an
output.
"""

import jax
import jax.numpy as jnp
import numpy as np


def check_positive(v):
    if np.any(v < 0):
        raise ValueError(f"negative input: {v}")


def f(x):
    jax.debug.callback(check_positive, x)
    return jnp.sqrt(x)


args = (jnp.array([4.0, -1.0]),)
