"""pyro-ppl/numpyro#2247, fixed as the PR did: `jit(body_fn)` hoisted out of the loop and the losses
kept on the device (the PR fetches a batch of them with one `jax.device_get`; here the caller
reads them, after the loop)."""

import jax
import jax.numpy as jnp


def loss_fn(w, x, y):
    return jnp.mean((x @ w - y) ** 2)


def body_fn(w, x, y):
    loss, g = jax.value_and_grad(loss_fn)(w, x, y)
    return w - 0.05 * g, loss


body = jax.jit(body_fn)


def f(w, x, y):
    losses = []
    for _ in range(3):
        w, loss = body(w, x, y)
        losses.append(loss)
    return w, jnp.stack(losses)


x = jnp.linspace(-1.0, 1.0, 24).reshape(8, 3)
y = x @ jnp.array([1.0, -2.0, 0.5])
args = (jnp.zeros(3), x, y)
