# The branch-built-submodule bug, silent: a Dense built only when use_extra is True. init runs
# with True and makes Dense_0, Dense_1, Dense_2; apply runs with False, so its two layers are
# named Dense_0 and Dense_1 and read the first two, and Dense_2 is never read. The shapes
# happen to match, so Flax raises nothing.
import flax.linen as nn
import jax.numpy as jnp


class Net(nn.Module):
    @nn.compact
    def __call__(self, x, use_extra: bool):
        if use_extra:
            x = nn.relu(nn.Dense(4)(x))  # built in one branch only
        x = nn.relu(nn.Dense(4)(x))
        return nn.Dense(4)(x)


model = Net()
x = jnp.linspace(-1.0, 1.0, 8, dtype=jnp.float32).reshape(2, 4)
args = (x, True)  # init
apply_args = (x, False)  # apply
