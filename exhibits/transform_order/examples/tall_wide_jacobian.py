"""A tall Jacobian: f maps 3 inputs to 50 outputs, so its Jacobian is 50 × 3.

jacfwd pushes one tangent per INPUT (3 JVPs, batched by vmap); jacrev pulls one cotangent per
OUTPUT (50 VJPs). Both give the same matrix. Try the jacrev chip, hessian, or jvp / vjp.
"""

import jax.numpy as jnp


def f(x):
    k = jnp.arange(1.0, 51.0)
    return jnp.sin(k[:, None] * x[None, :]).sum(axis=1) / k


args = (jnp.array([0.1, 0.2, 0.3]),)
stack = ["jacfwd"]
