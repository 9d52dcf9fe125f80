"""Repeated squaring-and-multiply with lax.fori_loop and static bounds: JAX stages a scan."""
import jax.numpy as jnp
from jax import lax


def f(x, y):
    def body(i, acc):
        return acc * x + y[i]  # Horner's rule: acc = acc * x + y[i]

    return lax.fori_loop(0, 4, body, jnp.zeros_like(x))


args = (jnp.float32(0.5), jnp.array([1.0, -2.0, 3.0, 0.5], jnp.float32))

if __name__ == "__main__":
    print(f(*args))
