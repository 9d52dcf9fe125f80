"""Per-example gradients asked for with grad outside vmap: the stack's own error, shown.

Report: pytorch/functorch#381 (per-sample gradients: ``vmap(grad(loss), (None, 0, 0))`` works,
the other order does not), the lesson of JAX's per-example-gradients guide. ``f`` is right:
plain ``vmap(f)`` runs. ``grad(vmap(f))`` differentiates the batched loss, one value per
example, and JAX refuses a non-scalar output: the transform_order exhibit shows that error as
its lesson (the run finishes; ``jaxscope run`` exits 3), it is not ``f``'s (issue 33, class 7).
"""

import jax.numpy as jnp


def f(w, x, y):
    return (jnp.dot(x, w) - y) ** 2


w = jnp.array([0.5, -1.0, 2.0])
x = jnp.array([[1.0, 2.0, 3.0], [0.5, 0.1, -0.2], [2.0, 0.0, 1.0], [-1.0, 1.0, 0.0]])
y = jnp.array([1.0, -1.0, 1.0, -1.0])
args = (w, x, y)
in_axes = (None, 0, 0)
stack = ["grad", "vmap"]
