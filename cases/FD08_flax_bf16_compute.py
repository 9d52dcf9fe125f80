"""A Flax linen MLP whose Dense layers compute in bfloat16 (dtype=jnp.bfloat16) over float32
parameters: the usual mixed-precision setup, whose gradient is right for a bfloat16 computation.

Report: google/flax#2384, "Half precision in flax models"
(https://github.com/google/flax/issues/2384): with nn.Dense(feat, dtype=jnp.bfloat16) the
parameters stay float32 and the computation is bfloat16. Finite differences of such a function
cannot be taken at float64's step: widened to float64, the parameters are rounded back to
bfloat16 inside Dense, so f is flat at that step and jumps at bfloat16's resolution.
"""
import jax
import jax.numpy as jnp
from flax import linen as nn


class MLP(nn.Module):
    @nn.compact
    def __call__(self, x):
        x = nn.relu(nn.Dense(8, dtype=jnp.bfloat16)(x))
        return nn.Dense(1, dtype=jnp.bfloat16)(x)


model = MLP()
x = jnp.linspace(-1.0, 1.0, 24).reshape(4, 6)
params = model.init(jax.random.key(0), x)


def f(params, x):
    return jnp.mean(model.apply(params, x).astype(jnp.float32) ** 2)


args = (params, x)
argnums = 0
