"""A jitted chain of matmuls and tanh (like shared case C24, smaller): time it honestly."""
import jax
import jax.numpy as jnp
import numpy as np

n = 256


def f(a, b):
    for _ in range(4):
        a = jnp.tanh(a @ b)
    return a  # a call returns this array before the computation has finished


args = (
    jax.random.normal(jax.random.key(0), (n, n)),
    jax.random.normal(jax.random.key(1), (n, n)) / np.sqrt(n),
)

if __name__ == "__main__":
    print(jax.jit(f).lower(*args).as_text())
    print(jax.jit(f)(*args).block_until_ready())
