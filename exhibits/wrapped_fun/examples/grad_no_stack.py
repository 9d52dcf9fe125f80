# jax.grad builds no WrappedFun around f in jax 0.10.2: it linearizes f directly
# (ad.linearize through a plain wrapper); jit, jvp, vjp, make_jaxpr and checkpoint too.
# Switch the transform to vmap to see a stack.
import jax.numpy as jnp

transform = "grad"


def f(x):
    return jnp.sum(jnp.tanh(x) ** 2)


args = (jnp.array([0.5, -1.0, 2.0]),)
