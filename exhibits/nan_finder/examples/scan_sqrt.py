"""A recurrent loop (lax.scan) whose body takes sqrt of each input: one input is 0, so the
backward pass of that iteration sends an infinite cotangent. The finder walks the scan's body
iteration by iteration (last first, as scan's transpose does) and lands inside it."""
import jax
import jax.numpy as jnp


def f(h0, xs):
    def step(h, x):
        h = jnp.tanh(0.5 * h + jnp.sqrt(x))  # x = 0 at iteration 2: sqrt's slope is infinite there
        return h, h

    h, hs = jax.lax.scan(step, h0, xs)
    return jnp.sum(hs)


args = (0.1, jnp.array([1.0, 4.0, 0.0, 9.0]))
