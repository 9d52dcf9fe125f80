"""jax#4730 fixed the way the hint says: the tuple of gradients is unpacked and the params'
part goes to the optimizer. See ``FO05_argnums_tuple_broken.py``."""

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
    g_params, g_scale = jax.grad(loss, argnums=(0, 1))(params, scale, x)
    updates, _state = tx.update(g_params, opt_state, params)
    return optax.apply_updates(params, updates), scale - 0.1 * g_scale


args = (params, 1.5, x)
