"""``jax.grad(..., argnums=(0, 1))`` returns a tuple of gradients, passed whole to optax.

Report: jax-ml/jax#4730, "unexpected gradient() behaviour"
(https://github.com/jax-ml/jax/issues/4730): with a tuple of ``argnums`` JAX returns a tuple,
one gradient per argument, even for a single entry. Here the user differentiates the params and
a learned input scale together and hands the tuple to an optimizer made for the params' dict.
"""

import jax
import jax.numpy as jnp
import optax

params = {"w": jnp.array([[0.5, -0.25], [1.0, 0.75]]), "b": jnp.zeros(2)}
x = jnp.array([[1.0, 2.0], [3.0, 4.0]])
tx = optax.sgd(0.1, momentum=0.9)
opt_state = tx.init(params)


def loss(params, scale, x):
    return jnp.sum(jnp.tanh(scale * x @ params["w"] + params["b"]) ** 2)


def f(params, scale, x):
    grads = jax.grad(loss, argnums=(0, 1))(params, scale, x)
    updates, _state = tx.update(grads, opt_state, params)
    return optax.apply_updates(params, updates)


args = (params, 1.5, x)
