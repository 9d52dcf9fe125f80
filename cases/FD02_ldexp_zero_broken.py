"""jnp.ldexp(x, 1) is 2x, but its gradient at x = 0 is 1, not 2: a finite, wrong gradient.

Report: jax-ml/jax#37992, "`jax.grad` of `jnp.ldexp(x, 1)` returns `1.0` instead of `2.0` at
`x=0`" (https://github.com/jax-ml/jax/issues/37992). ldexp keeps a signed zero with
`where(x == 0, x, computed)`, so at 0 the gradient flows through `x` itself (slope 1). The
finite differences are [2, 2, 2].
"""
import jax.numpy as jnp


def f(x):
    return jnp.sum(jnp.ldexp(x, 1))


args = (jnp.array([0.0, 1.0, 2.0]),)
