"""optax#366 fixed: `jax.value_and_grad(model_loss, argnums=2)` differentiates the params (the
hint: say which argument), so the gradient has their structure. See
``FO02_params_not_first_broken.py``."""

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax


class Model(nn.Module):
    @nn.compact
    def __call__(self, x):
        x = jnp.tanh(nn.Dense(8)(x))
        return nn.Dense(1)(x)


model = Model()
x = jnp.linspace(-1.0, 1.0, 32).reshape(8, 4)
y = jnp.linspace(0.0, 1.0, 8)
critic_parameters = model.init(jax.random.key(0), x)
model_optimizer = optax.adam(learning_rate=0.04, eps=1e-5)
model_optimizer_state = model_optimizer.init(critic_parameters)


def model_loss(x, y, critic_parameters):
    newvalue = model.apply(critic_parameters, x)
    return 0.5 * ((newvalue.squeeze() - y) ** 2).mean()


def f(x, y, critic_parameters, model_optimizer_state):
    loss, grads = jax.value_and_grad(model_loss, argnums=2)(x, y, critic_parameters)
    updates, model_optimizer_state = model_optimizer.update(grads, model_optimizer_state)
    return loss, optax.apply_updates(critic_parameters, updates)


args = (x, y, critic_parameters, model_optimizer_state)
