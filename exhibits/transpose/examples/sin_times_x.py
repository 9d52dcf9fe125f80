"""f(x) = sin(x) * x: x is used twice, so its cotangent is accumulated from two contributions."""
import jax
import jax.numpy as jnp


def f(x):
    return jnp.sin(x) * x


args = (1.0,)

if __name__ == "__main__":
    print(jax.grad(f)(*args))  # cos(1) * 1 + sin(1) = 1.3817732906760363
