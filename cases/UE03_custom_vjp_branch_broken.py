"""A gradient-clipping custom_vjp called from a loss that branches on a traced value.

Report: jax-ml/jax#11646 (a custom_vjp used inside a jitted function with an ``int()`` of a
traced value: the error comes from the user's own Python, not from the rule). The clipping rule
is fine; ``f`` itself cannot be jitted (plain ``jax.jit(f)`` fails at the ``if``), so the run
fails at that line instead of finishing with it listed among the rule's problems.
"""

import jax
import jax.numpy as jnp


@jax.custom_vjp
def clip_gradient(x):
    return x


def clip_fwd(x):
    return x, None


def clip_bwd(_, g):
    return (jnp.clip(g, -1.0, 1.0),)


clip_gradient.defvjp(clip_fwd, clip_bwd)


def f(x):
    if x.sum() > 0:  # a Python branch on the value of x
        return jnp.sum(clip_gradient(x) ** 2)
    return jnp.sum(clip_gradient(x))


args = (jnp.array([0.5, 2.0, -1.0]),)
