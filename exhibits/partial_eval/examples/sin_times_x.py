"""The smallest example: f(x) = sum((sin(x) * x) ** 2). Its JVP splits into a forward jaxpr and
a linear one that reads four residuals of f32[3] (sin x, cos x, x, and sin(x) * x)."""
import jax
import jax.numpy as jnp
import numpy as np


def f(x):
    y = jnp.sin(x) * x
    return jnp.sum(y ** 2)


args = (np.array([0.0, 1.0, 2.0], np.float32),)

if __name__ == "__main__":
    print(jax.linearize(f, *args)[1])
