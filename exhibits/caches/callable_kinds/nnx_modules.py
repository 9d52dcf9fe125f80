# An nnx.Module is a callable object: jax.jit(model) traces its __call__ (its arrays become
# constants of the program: one compile per instance), and nnx.jit of a function taking the
# module passes the module's state in (one compile for instances of one structure).
import jax
import jax.numpy as jnp
from flax import nnx


@nnx.jit
def forward(m, x):
    return m(x)


def f(x):
    m1 = nnx.Linear(3, 2, rngs=nnx.Rngs(0))
    m2 = nnx.Linear(3, 2, rngs=nnx.Rngs(1))
    direct = jax.jit(m1)
    return direct(x), direct(x), forward(m1, x), forward(m2, x)


args = (jnp.ones((1, 3)),)
