"""A dense layer both ways across the bridge: `f` in JAX goes to TensorFlow through jax2tf
(the batch dimension polymorphic), `tf_f`, the same layer in TensorFlow, comes to JAX through
tf2jax."""

import jax.numpy as jnp
import numpy as np
import tensorflow as tf


def f(x, w, b):
    return jnp.tanh(x @ w + b)


def tf_f(x, w, b):
    return tf.tanh(tf.matmul(x, w) + b)


rng = np.random.default_rng(0)
args = (
    rng.standard_normal((4, 3)).astype(np.float32),
    rng.standard_normal((3, 2)).astype(np.float32),
    np.array([0.5, -0.5], np.float32),
)
# The batch dimension of x is a variable `b`: TensorFlow's signature says None for it.
polymorphic_shapes = ["(b, 3)", None, None]
