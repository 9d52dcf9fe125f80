"""Newton's method for sqrt(a) with lax.while_loop: iterate until the step is small."""
import jax.numpy as jnp
from jax import lax


def f(a):
    def cond_fun(state):
        x, step, i = state
        return (jnp.abs(step) > 1e-6) & (i < 50)

    def body_fun(state):
        x, _, i = state
        new_x = 0.5 * (x + a / x)
        return new_x, new_x - x, i + 1

    x, _, iterations = lax.while_loop(cond_fun, body_fun, (a, jnp.float32(1.0), 0))
    return x, iterations


args = (jnp.float32(2.0),)

if __name__ == "__main__":
    print(f(*args))
