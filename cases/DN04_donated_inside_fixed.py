"""DN04 fixed: the second update takes the first one's result, as a training loop does.

Report: jax-ml/jax#9237 (what donation means: "You should not reuse buffers that you donate to
a computation, JAX will raise an error if you try to") and #16906 (the donated array read
afterwards raises). ``f`` is not jitted: called as a script calls it, the first ``sgd`` deletes
``params`` and the second raises at line 24. An exhibit that traces ``f`` under ``jax.jit``
(where donation does nothing) finished and printed outputs; it must fail there too (issue 33,
class 10).
"""

import functools

import jax
import jax.numpy as jnp


@functools.partial(jax.jit, donate_argnums=0)
def sgd(params, grads):
    return params - 0.1 * grads


def f(params, grads):
    first = sgd(params, grads)
    second = sgd(first, grads)  # the updated parameters, not the donated ones
    return second


args = (jnp.ones((4, 4)), jnp.full((4, 4), 0.5))
