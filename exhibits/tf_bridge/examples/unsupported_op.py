"""tf2jax has no JAX rule for some TensorFlow ops: here MatrixDeterminant (`tf.linalg.det`).
The run fails at the line of `tf_f` that creates the op."""

import jax.numpy as jnp
import numpy as np
import tensorflow as tf


def f(a):
    return jnp.linalg.det(a)


def tf_f(a):
    return tf.linalg.det(a)


args = (np.array([[2.0, 1.0], [1.0, 3.0]], np.float32),)
