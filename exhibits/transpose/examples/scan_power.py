"""The same power as fori_loop_bounds with a static trip count: lax.scan, which transposes."""
import jax
import jax.numpy as jnp
from jax import lax


def f(x):
    def step(c, _):
        return c * x, None

    y, _ = lax.scan(step, jnp.ones_like(x), None, length=3)  # x ** 3
    return jnp.sum(y)


args = (jnp.array([0.5, 2.0]),)

if __name__ == "__main__":
    print(jax.grad(f)(*args))  # 3 x ** 2 = [0.75, 12.]
