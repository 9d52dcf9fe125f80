import flax.linen as nn
import jax
import jax.numpy as jnp


class Head(nn.Module):
    @nn.compact
    def __call__(self, x):
        return nn.Dense(2)(nn.relu(nn.Dense(4)(x)))


def norm(x):
    return (x - x.mean()) / (x.std() + 1e-5)


def mix(x, w):
    def scale(t):
        return t * 0.5

    h = norm(x)
    y = jnp.einsum("ij,jk->ki", h, w).T  # einsum enters a name scope of its own: its spec
    return scale(y)


def block(w, x):
    with jax.named_scope("attn"):
        h = jnp.tanh(mix(x, w))
    with jax.named_scope("mlp"):
        h = h * jax.nn.sigmoid(h)
    return x + h


head = Head()
head_params = head.init(jax.random.key(0), jnp.ones((2, 4)))


def f(ws, x):
    x = x * 2.0
    for i, w in enumerate(ws):
        with jax.named_scope(f"layer{i}"):
            x = block(w, x)
    return head.apply(head_params, x).sum()


args = ([jnp.full((4, 4), 0.1) for _ in range(3)], jnp.ones((2, 4)))
