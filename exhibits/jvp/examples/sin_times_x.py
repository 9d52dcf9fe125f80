"""The smallest JVP: f(x) = sin(x) * x at x = 1.0, whose derivative is cos(1)·1 + sin(1)."""
import jax
import jax.numpy as jnp


def f(x):
    y = jnp.sin(x)
    return y * x


args = (1.0,)

if __name__ == "__main__":
    print(jax.make_jaxpr(lambda p, t: jax.jvp(f, p, t))(args, (1.0,)))
    print(jax.jvp(f, args, (1.0,)))
