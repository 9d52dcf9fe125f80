"""jcmgray/autoray#27 (a jitted sampler printed 0.11975035 ten times: "jit tracing out the global
key") and jax-ml/jax#2793 (hawkinsp: JAX keeps no stateful np.random-like API because of
jit-invariance): numpy's global random state used inside a jitted function is read once, while
JAX traces it, and the numbers become constants of the program."""

import jax
import jax.numpy as jnp
import numpy as np


@jax.jit
def f(x):
    noise = np.random.normal(size=x.shape).astype(np.float32)
    return x + 0.1 * jnp.asarray(noise)


args = (jnp.zeros(4),)
