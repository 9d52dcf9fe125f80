# A linen MLP: init returns its parameters as a plain nested dict, apply takes the dict back.
import flax.linen as nn
import jax.numpy as jnp


class MLP(nn.Module):
    features: tuple[int, ...] = (16, 8, 1)

    @nn.compact
    def __call__(self, x):
        for i, width in enumerate(self.features):
            x = nn.Dense(width)(x)
            if i < len(self.features) - 1:
                x = nn.relu(x)
        return x


model = MLP()
args = (jnp.linspace(-1.0, 1.0, 8, dtype=jnp.float32).reshape(2, 4),)
rngs = 0  # init gets jax.random.key(0)
