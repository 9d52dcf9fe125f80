# A small linen conv net: its Dense_0/kernel gets the same key as the MLP's Dense_0/kernel,
# because flax folds the parameter's scope path into the root key instead of splitting it.
import flax.linen as nn
import jax.numpy as jnp


class ConvNet(nn.Module):
    @nn.compact
    def __call__(self, x):
        x = nn.relu(nn.Conv(4, kernel_size=(3, 3))(x))
        x = nn.relu(nn.Conv(4, kernel_size=(3, 3))(x))
        x = x.reshape(x.shape[0], -1)
        return nn.Dense(1)(x)


model = ConvNet()
args = (jnp.linspace(-1.0, 1.0, 2 * 6 * 6, dtype=jnp.float32).reshape(2, 6, 6, 1),)
rngs = 0
