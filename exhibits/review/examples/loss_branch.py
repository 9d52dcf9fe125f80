"""A jitted step that halves its gradients when the loss is large, with a Python `if` on the
traced loss: JAX cannot decide a Python branch on a value it only knows by shape and dtype."""
import jax
import jax.numpy as jnp


def loss_fn(w, x, y):
    return jnp.mean((x @ w - y) ** 2)


@jax.jit
def f(w, x, y):
    loss, g = jax.value_and_grad(loss_fn)(w, x, y)
    if loss > 1.0:
        g = g / 2
    return w - 0.1 * g


x = jnp.ones((8, 4))
y = jnp.zeros((8,))
args = (jnp.ones((4,)), x, y)
