"""The standard deviation of a constant vector, differentiated: jnp.std(x) at x = [1, 1].

Report: jax-ml/jax#11716, "jax.numpy.std bad behaviour with jax.grad evaluated over constant
vector?" (https://github.com/jax-ml/jax/issues/11716): ``jax.grad(jnp.std)`` returns
``[nan, nan]``, because std is the square root of the variance and the variance is 0 here
(sqrt's derivative at 0 is infinite, times a zero cotangent from the centred values). The NaN
is made inside ``jnp.std``'s own body, a jitted library function: the line to blame is the one
that calls it.
"""

import jax.numpy as jnp


def f(x):
    spread = jnp.std(x)  # constant x: the variance is 0
    return 2.0 * spread


args = (jnp.array([1.0, 1.0]),)
