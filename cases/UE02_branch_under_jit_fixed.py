"""UE02 fixed: the hinge written with ``jnp.maximum``, which every transform can trace.

Report: the example discussed in jax-ml/jax#2508 (``grad(lambda x: x if x > 0 else 0.)``, and
the ConcretizationTypeError it gives once ``jit`` stages the function out). ``grad`` alone works
on concrete values, but ``jit`` and ``vmap`` make ``margin`` abstract: plain ``jit(vmap(f))``
fails at the ``if`` as well, so the error is ``f``'s own and the run fails at that line.
"""

import jax.numpy as jnp


def f(w, x, y):
    margin = 1.0 - y * jnp.dot(x, w)
    return jnp.maximum(margin, 0.0)  # traced, not branched on


w = jnp.array([0.5, -1.0, 2.0])
x = jnp.array([[1.0, 2.0, 3.0], [0.5, 0.1, -0.2], [2.0, 0.0, 1.0], [-1.0, 1.0, 0.0]])
y = jnp.array([1.0, -1.0, 1.0, -1.0])
args = (w, x, y)
in_axes = (None, 0, 0)
stack = ["jit", "vmap", "grad"]
