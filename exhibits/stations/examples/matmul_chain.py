"""A jitted chain of matmuls and tanh (like shared case C24, smaller): time it honestly."""
import jax
import jax.numpy as jnp
import numpy as np

n = 256


def f(a, b):
    for _ in range(4):
        a = jnp.tanh(a @ b)
    return a  # a call returns this array before the computation has finished


rng = np.random.default_rng(0)  # numpy values load instantly (no eager kernels to compile)
args = (
    rng.standard_normal((n, n)).astype(np.float32),
    (rng.standard_normal((n, n)) / np.sqrt(n)).astype(np.float32),
)

if __name__ == "__main__":
    print(jax.jit(f).lower(*args).as_text())
    print(jax.jit(f)(*args).block_until_ready())
