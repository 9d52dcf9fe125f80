"""A custom_vjp whose bwd rule has a sign error: jax.grad uses it silently.

Report: jax-ml/jax#13048, "Typo in tutorial for custom derivative rules"
(https://github.com/jax-ml/jax/issues/13048): the tutorial's f(x, y) = sin(x) * y had
`f_bwd` return `-sin_x * g` for y, so d/dy is -sin(x) instead of sin(x) (mattjj: possibly
"meant to add some difference between the custom_vjp rule and the standard derivative").
At (2, 3) jax.grad gives d/dy = -0.909297; the finite difference is sin(2) = 0.909297.
"""
import jax
import jax.numpy as jnp


@jax.custom_vjp
def f(x, y):
    return jnp.sin(x) * y


def f_fwd(x, y):
    return f(x, y), (jnp.cos(x), jnp.sin(x), y)


def f_bwd(res, g):
    cos_x, sin_x, y = res
    return (cos_x * g * y, -sin_x * g)


f.defvjp(f_fwd, f_bwd)

args = (jnp.array(2.0), jnp.array(3.0))
