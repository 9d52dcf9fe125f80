"""A plain Python loop that unrolls to 20,000 eqns: 5,000 iterations of
``x = jnp.sin(x) * 0.5 + x * 0.999`` (4 eqns each: sin, mul, mul, add), every one recorded by
the tracer, then the sum (20,001 eqns in all).

``in_axes`` (for the vmap exhibit) maps the first axis of ``x``.
"""

import jax
import jax.numpy as jnp
import numpy as np

ITERATIONS = 5_000


def f(x):
    for _ in range(ITERATIONS):
        x = jnp.sin(x) * 0.5 + x * 0.999  # sin, mul, mul, add: 4 eqns an iteration
    return jnp.sum(x)


x = np.linspace(0.1, 2.0, 32, dtype=np.float32).reshape(4, 8)
args = (x,)
in_axes = 0

if __name__ == "__main__":
    print(len(jax.make_jaxpr(f)(*args).jaxpr.eqns), "eqns")
    print(f(*args))
