# A submodule built inside one branch of nn.cond: Flax traces both branches, and they must make
# the same variables. The true branch makes a Dense's params, the false branch none, so JAX's
# cond rejects the branches' outputs (Flax's nn.cond docstring warns of exactly this).
import flax.linen as nn
import jax.numpy as jnp


class CondNet(nn.Module):
    @nn.compact
    def __call__(self, x, pred):
        def with_layer(module, x):
            return nn.Dense(4)(x)

        def without(module, x):
            return x

        return nn.cond(pred, with_layer, without, self, x)


model = CondNet()
args = (jnp.ones((2, 4), jnp.float32), jnp.bool_(True))
