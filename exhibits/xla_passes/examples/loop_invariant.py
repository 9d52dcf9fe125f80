"""A fori_loop whose body computes something that does not depend on the loop: XLA's while-loop
passes hoist it out of the loop (while-loop-invariant-code-motion) and simplify the loop.
"""

import jax
import jax.numpy as jnp
import numpy as np


def f(x, w):
    def body(i, acc):
        scale = jnp.sum(w * w)  # the same every iteration
        return acc * 0.5 + jnp.sin(x) * scale + i

    return jax.lax.fori_loop(0, 10, body, jnp.zeros_like(x))


args = (np.linspace(0.0, 1.0, 64, dtype=np.float32), np.ones(16, np.float32))

if __name__ == "__main__":
    print(jax.jit(f)(*args)[:4])
