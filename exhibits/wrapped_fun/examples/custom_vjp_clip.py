# A custom_vjp function builds a stack around each of its three functions: the primal
# clip_gradient, its fwd and its bwd. Under jax.vjp only fwd and bwd run; the primal's
# stack is built and its store stays empty.
import jax
import jax.numpy as jnp

transform = "custom_vjp"


@jax.custom_vjp
def clip_gradient(x):
    return x


def clip_fwd(x):
    return x, None


def clip_bwd(_, ct):
    return (jnp.clip(ct, -0.5, 0.5),)


clip_gradient.defvjp(clip_fwd, clip_bwd)


def f(x):
    return clip_gradient(jnp.sin(x)) * 3.0


args = (jnp.linspace(0.0, 1.0, 4),)
