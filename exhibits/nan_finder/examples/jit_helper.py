"""A jitted helper: the NaN is born inside `norm`, which the backward pass runs as one `jit` step.
The finder walks the helper's own backward pass (what JAX re-runs, de-optimised, under
jax_debug_nans) and lands on the line inside it."""
import jax
import jax.numpy as jnp


@jax.jit
def norm(v):
    return jnp.sqrt(jnp.sum(v * v))  # at v = 0 the slope of sqrt is infinite


def f(w, x):
    return norm(w - x) + 0.1 * jnp.sum(w * w)


args = (jnp.array([1.0, 2.0]), jnp.array([1.0, 2.0]))
