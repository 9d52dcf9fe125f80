"""The same donated buffer passed to a jitted function twice, as the caches exhibit's `calls`.

Report: jax-ml/jax#9675 (the maintainers' reply: ``f_jit(buf)`` then ``f_jit(buf)`` raises
"ValueError: INVALID_ARGUMENT: ... buffer has been deleted or donated"). The caches exhibit
makes the snippet's ``calls`` in order: the second one must fail as the script's does, not run
on a fresh copy (issue 33, class 10).
"""

import jax
import jax.numpy as jnp


def add_one(x):
    return x + 1


f = jax.jit(add_one, donate_argnums=(0,))
buf = jnp.array([1.0, 2.0, 3.0])
args = (buf,)
calls = [(buf,), (buf,)]  # buf is donated by the first call and passed again
