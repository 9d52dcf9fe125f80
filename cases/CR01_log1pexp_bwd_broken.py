"""A numerically stable softplus with a custom_vjp whose backward rule has the sign of x flipped.

Source: the ``log1pexp`` example of JAX's "Custom derivative rules for JAX-transformable Python
functions" tutorial (https://docs.jax.dev/en/latest/notebooks/Custom_derivative_rules_for_Python_code.html),
whose derivative is ``1 - 1 / (1 + exp(x))`` = sigmoid(x); here ``bwd`` returns sigmoid(-x), the
slip jax-ml/jax#13048 reports in the same tutorial's other rule (a sign in ``f_bwd``). The rule
sits inside a jitted loss: ``jax.grad`` uses it without complaint.
"""

import jax
import jax.numpy as jnp


@jax.custom_vjp
def log1pexp(x):
    return jnp.log1p(jnp.exp(x))


def log1pexp_fwd(x):
    return log1pexp(x), x


def log1pexp_bwd(x, g):
    return (g / (1.0 + jnp.exp(x)),)  # sigmoid(-x): should be g * (1 - 1 / (1 + exp(x)))


log1pexp.defvjp(log1pexp_fwd, log1pexp_bwd)


@jax.jit
def f(x):
    return jnp.sum(log1pexp(x))


args = (jnp.array([-1.0, 0.5, 2.0]),)
