"""The fix of CR01_log1pexp_bwd_broken.py: the tutorial's own rule, ``g * (1 - 1 / (1 + exp(x)))``
(https://docs.jax.dev/en/latest/notebooks/Custom_derivative_rules_for_Python_code.html).
"""

import jax
import jax.numpy as jnp


@jax.custom_vjp
def log1pexp(x):
    return jnp.log1p(jnp.exp(x))


def log1pexp_fwd(x):
    return log1pexp(x), x


def log1pexp_bwd(x, g):
    return (g * (1.0 - 1.0 / (1.0 + jnp.exp(x))),)


log1pexp.defvjp(log1pexp_fwd, log1pexp_bwd)


@jax.jit
def f(x):
    return jnp.sum(log1pexp(x))


args = (jnp.array([-1.0, 0.5, 2.0]),)
