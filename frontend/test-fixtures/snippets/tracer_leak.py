"""A tracer leak: the jitted helper keeps its argument's tracer in a global list and f uses it
after that trace ended (JAX raises UnexpectedTracerError when jax.jit(f) is called)."""

import jax
import jax.numpy as jnp

seen = []


@jax.jit
def scale(x):
    seen.append(x)  # keeps the tracer after the trace ends
    return x * 2.0


def f(x):
    y = scale(x)
    return y + seen[0]


args = (jnp.ones(3),)
