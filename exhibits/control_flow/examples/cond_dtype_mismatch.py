"""A clipped update with lax.cond: one branch returns the input's int32, the other a float."""
import jax.numpy as jnp
from jax import lax


def f(step, lr):
    return lax.cond(
        step < 100,
        lambda s: s * lr,  # float32: int32 * float32
        lambda s: s // 2,  # int32: the other branch's type differs
        step,
    )


args = (jnp.int32(7), jnp.float32(0.1))

if __name__ == "__main__":
    print(f(*args))
