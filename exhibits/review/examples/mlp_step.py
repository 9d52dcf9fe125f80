"""A small MLP's SGD step, as a first training loop often writes it, with four things a code
review would ask about: a numpy array the loss reads (baked into the compiled program), a
`jax.jit` made inside the step (traced and compiled again on every call), the loss logged with
`.item()` (the host waits for the device every step) and the update done eagerly with a Python
float (uploaded to the device, and one executable per op)."""
import jax
import jax.numpy as jnp
import numpy as np

NOISE = np.random.default_rng(0).normal(size=(32, 16)).astype(np.float32)


def loss_fn(params, x, y):
    h = jnp.tanh(x @ params["w1"] + NOISE)
    pred = h @ params["w2"]
    return jnp.mean((pred - y) ** 2)


def f(params, x, y):
    grad_fn = jax.jit(jax.value_and_grad(loss_fn))
    loss, grads = grad_fn(params, x, y)
    print("loss", loss.item())
    return jax.tree.map(lambda p, g: p - 0.1 * g, params, grads)


k1, k2, k3 = jax.random.split(jax.random.key(0), 3)
params = {
    "w1": jax.random.normal(k1, (8, 16)) * 0.3,
    "w2": jax.random.normal(k2, (16, 1)) * 0.3,
}
x = jax.random.normal(k3, (32, 8))
y = jnp.sum(x, axis=1, keepdims=True)
args = (params, x, y)
