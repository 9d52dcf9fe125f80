"""One matrix applied to a batch of vectors: in_axes=(None, 0) keeps the matrix whole and maps
the vectors. dot_general's rule leaves the batch on axis 1 of the product; vmap moves it to
out_axes=0 at the end (try out_axes=1: no move)."""
import jax
import jax.numpy as jnp
import numpy as np


def f(A, x):
    return jnp.tanh(A @ x)  # A: (4, 3), x: one vector (3,)


rng = np.random.default_rng(1)
A = rng.standard_normal((4, 3)).astype(np.float32)
xs = rng.standard_normal((5, 3)).astype(np.float32)
args = (A, xs)
in_axes = (None, 0)

if __name__ == "__main__":
    print(jax.make_jaxpr(jax.vmap(f, in_axes))(*args))
