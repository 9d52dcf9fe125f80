"""Parameters as a pytree: dict keys are visited sorted, Dense is a registered dataclass
(activation is aux data, not a leaf), Adam a namedtuple, None a node with no children."""
import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class Dense:
    w: jax.Array
    b: jax.Array
    activation: str = dataclasses.field(default="tanh", metadata={"static": True})


class Adam(NamedTuple):
    step: int
    mu: dict


def f(params, opt):
    h = jnp.ones(2)
    for layer in params["layers"]:
        h = jnp.tanh(h @ layer.w + layer.b)
    return params["scale"] * h.sum(), opt.step + 1


params = {
    "scale": np.float32(2.0),
    "layers": [
        Dense(w=np.full((2, 3), 0.1, np.float32), b=np.zeros(3, np.float32)),
        Dense(w=np.full((3, 2), 0.2, np.float32), b=np.zeros(2, np.float32)),
    ],
    "frozen": None,  # an empty subtree: no leaf
}
opt = Adam(step=0, mu={"w": np.zeros(2, np.float32)})
args = (params, opt)

if __name__ == "__main__":
    print(jax.tree_util.tree_structure(args))
    for path, leaf in jax.tree_util.tree_flatten_with_path(args)[0]:
        print(jax.tree_util.keystr(path), jax.typeof(leaf))
