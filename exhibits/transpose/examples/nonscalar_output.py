"""jax.grad of a function with a vector output: JAX refuses; jax.vjp takes any cotangent."""
import jax
import jax.numpy as jnp


def f(x):
    return jnp.tanh(x) * x  # shape (3,), not a scalar


args = (jnp.array([-1.0, 0.5, 2.0]),)

if __name__ == "__main__":
    out, f_vjp = jax.vjp(f, *args)
    print(f_vjp(jnp.ones_like(out)))  # the gradient of sum(f)
    print(jax.grad(f)(*args))  # TypeError: Gradient only defined for scalar-output functions
