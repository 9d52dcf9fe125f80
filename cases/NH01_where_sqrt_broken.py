"""A norm guarded with jnp.where after the sqrt: the guard hides the forward value, not the NaN.

Report: jax-ml/jax#347, "Issue taking gradients through np.where when one of branches is nan"
(https://github.com/jax-ml/jax/issues/347): the row norms are computed first, then ``where``
replaces the small ones by 1. The forward output is finite; the gradient of the zero row is NaN,
because sqrt's derivative at 0 is infinite and the cotangent ``where`` sends it is 0.
"""
import jax.numpy as jnp


def f(x):
    norms = jnp.sqrt(jnp.sum(x**2, axis=1))
    guarded = jnp.where(norms > 0.5, norms, jnp.ones_like(norms))
    return jnp.sum(guarded)


args = (jnp.array([[1.0, 2.0], [3.0, 4.0], [0.0, 0.0]]),)
