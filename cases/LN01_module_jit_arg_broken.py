"""A Flax linen Module passed to a jitted eval step as an argument.

Report: google/flax#853, "Improve Error Message: Jitting linen.Module"
(https://github.com/google/flax/issues/853): ``eval_step(model, params, batch)`` under
``jax.jit``; linen modules are not pytrees, so JAX cannot take the module for an argument (with
jax 0.10.2 it becomes a tracer: "DynamicJaxprTracer has no attribute apply"). The report's
answer: mark it static (``static_argnums``), or close over it.
"""

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
