# The branch-built-submodule bug, loud: init without the extra layer makes Dense_0 (4 -> 4) and
# Dense_1 (4 -> 1); apply with it names its layers Dense_0, Dense_1, Dense_2, and Dense_1 now
# wants a (4, 4) kernel where the dict holds (4, 1): Flax raises ScopeParamShapeError.
import flax.linen as nn
import jax.numpy as jnp


class Net(nn.Module):
    @nn.compact
    def __call__(self, x, use_extra: bool):
        if use_extra:
            x = nn.relu(nn.Dense(4)(x))  # built in one branch only
        x = nn.relu(nn.Dense(4)(x))
        return nn.Dense(1)(x)


model = Net()
x = jnp.linspace(-1.0, 1.0, 8, dtype=jnp.float32).reshape(2, 4)
args = (x, False)  # init
apply_args = (x, True)  # apply
