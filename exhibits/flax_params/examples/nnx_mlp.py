# An nnx MLP: the module holds its parameters as attributes; nnx.split turns it into a graphdef
# (the structure) and a state (the arrays), and nnx.merge puts them back together.
import jax.numpy as jnp
from flax import nnx


class MLP(nnx.Module):
    def __init__(self, din=4, dmid=16, dout=1, *, rngs: nnx.Rngs):
        self.l1 = nnx.Linear(din, dmid, rngs=rngs)
        self.dropout = nnx.Dropout(0.1, deterministic=True, rngs=rngs)
        self.l2 = nnx.Linear(dmid, dout, rngs=rngs)

    def __call__(self, x):
        return self.l2(self.dropout(nnx.relu(self.l1(x))))


model = MLP  # the class: the exhibit builds it with rngs=nnx.Rngs(rngs)
args = (jnp.linspace(-1.0, 1.0, 8, dtype=jnp.float32).reshape(2, 4),)
rngs = 0
