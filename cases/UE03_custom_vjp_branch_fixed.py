"""UE03 fixed: the branch made with ``jnp.where``, traced under jit like the rest of f.

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
    c = clip_gradient(x)
    return jnp.where(x.sum() > 0, jnp.sum(c**2), jnp.sum(c))


args = (jnp.array([0.5, 2.0, -1.0]),)
