"""A training step jitted with donate_argnums, whose donated parameters are used again.

Report: jax-ml/jax#9675 ("Loud failures if donate_argnums does not work?": reusing a donated
buffer raises), jax-ml/jax#16906 (the donated ``y`` printed afterwards raises "RuntimeError:
Array has been deleted"), and jax-ml/jax#9237 (users asking what donation means). The step
donates ``params`` to reuse their memory for the new ones; the loop then passes the *old*
``params`` again. Plain JAX raises at that call, and so must every exhibit that runs it.
"""

import jax
import jax.numpy as jnp


def step(params):
    return params - 0.1 * jnp.sign(params)


f = jax.jit(step, donate_argnums=0)
params = jnp.ones(4)
new_params = f(params)  # params is donated here
args = (params,)  # ...and passed again: its buffer is gone
