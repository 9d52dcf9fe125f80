"""Asking for the gradient with respect to an int argument (argnums picks the arguments)."""
import jax
import jax.numpy as jnp


def f(x, k):
    return jnp.sum(x**k)


args = (jnp.array([1.0, 2.0]), 3)
argnums = (0, 1)  # k is an int: it has no tangent, so no gradient

if __name__ == "__main__":
    print(jax.grad(f, argnums=argnums)(*args))  # TypeError: grad requires real- or complex-...
