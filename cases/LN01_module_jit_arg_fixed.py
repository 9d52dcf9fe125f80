"""flax#853 fixed the way the hint says: the module argument is static (``static_argnums``; a
linen module is a hashable frozen dataclass). See ``LN01_module_jit_arg_broken.py``."""

import flax.linen as nn
import jax
import jax.numpy as jnp


class Model(nn.Module):
    features: int

    @nn.compact
    def __call__(self, x):
        return nn.Dense(self.features)(x)


model = Model(3)
batch = {"X": jnp.linspace(-1.0, 1.0, 8).reshape(2, 4), "y": jnp.array([0, 2])}
params = model.init(jax.random.key(0), batch["X"])["params"]


def f(model, params, batch):
    logits = model.apply({"params": params}, batch["X"])
    return jnp.mean(jnp.argmax(logits, -1) == batch["y"])


args = (model, params, batch)
static_argnums = (0,)
