"""DN01 fixed: the first call gets a copy of the matrix (its donation takes the copy).

Report: flatironinstitute/jaxmg#29 (the public entry points wrap their pipeline in
``jax.jit(donate_argnums=...)``, so ``x1 = potrs(A, b)`` deletes ``A`` and ``x2 = potrs(A, b2)``
raises "RuntimeError: Array has been deleted"). Plain JAX fails on ``f(*args)``; every exhibit
must fail the same way, at the ``args`` line, with the donation named as the cause (issue 33,
class 10).
"""

import jax
import jax.numpy as jnp
import jax.scipy.linalg


def _solve(a, b):
    # the Cholesky factor has a's shape and dtype: XLA reuses a's donated buffer for it
    chol = jnp.linalg.cholesky(a)
    return chol, jax.scipy.linalg.cho_solve((chol, True), b)


f = jax.jit(_solve, donate_argnums=0)
a = jnp.array([[4.0, 1.0], [1.0, 3.0]])
x1 = f(a.copy(), jnp.array([1.0, 2.0]))  # the copy is donated; a is kept
args = (a, jnp.array([0.0, 1.0]))
# transform_order: the call itself, jitted (the solver is not per-row)
stack = ["jit"]
