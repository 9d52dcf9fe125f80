"""pyro-ppl/numpyro#2247: SVI.run's progress-bar loop called `jax.device_get(loss)` on every step,
a blocking device-to-host read per iteration ("the host cannot dispatch step i+1 until step i has
finished computing, so JAX's async dispatch is defeated"), and wrapped `jit(body_fn)` again on
every iteration. Re-wrapping the same function object costs Python work but no new trace: JAX's
trace cache is keyed on the function, so only the read is a finding."""

import jax
import jax.numpy as jnp


def loss_fn(w, x, y):
    return jnp.mean((x @ w - y) ** 2)


def body_fn(w, x, y):
    loss, g = jax.value_and_grad(loss_fn)(w, x, y)
    return w - 0.05 * g, loss


def f(w, x, y):
    losses = []
    for _ in range(3):
        w, loss = jax.jit(body_fn)(w, x, y)
        losses.append(jax.device_get(loss))
    return w, losses


x = jnp.linspace(-1.0, 1.0, 24).reshape(8, 3)
y = x @ jnp.array([1.0, -2.0, 0.5])
args = (jnp.zeros(3), x, y)
