import jax
import jax.numpy as jnp


def norm(x):
    return (x - x.mean()) / (x.std() + 1e-5)


def block(w, x):
    with jax.named_scope("attn"):
        h = jnp.tanh(norm(x) @ w)
    with jax.named_scope("mlp"):
        h = h * jax.nn.sigmoid(h)
    return x + h


def steps(x):
    def body(c, _):
        with jax.named_scope("step"):
            c = jnp.sin(c) * 0.5 + c
        return c, c.sum()

    return jax.lax.scan(body, x, None, length=3)


def model(ws, x):
    x = x * 2.0
    for i, w in enumerate(ws):
        with jax.named_scope(f"layer{i}"):
            x = block(w, x)
    with jax.named_scope("loop"):
        x, ys = steps(x)
    return x.sum() + ys.sum()


f = jax.jit(model)
args = ([jnp.full((4, 4), 0.1) for _ in range(3)], jnp.ones((2, 4)))
