"""A small CNN on a batch of 8 RGB images of 32x32 (NHWC): two 3x3 convolutions
(``lax.conv_general_dilated``) with ReLU, each followed by 2x2 max pooling
(``lax.reduce_window``), a dense head and the mean softmax cross-entropy over 10 classes.

``f`` takes one image or a batch (it adds the batch dim a convolution needs), so ``in_axes``
(for the vmap exhibit) maps one image at a time (per-example losses).
"""

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax


def init_params(rng):
    # numpy for the example values: they load instantly (no eager JAX kernels to compile)
    def normal(*shape, fan_in):
        return (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)

    return {
        "conv1": {"w": normal(3, 3, 3, 16, fan_in=27), "b": np.zeros(16, np.float32)},  # HWIO
        "conv2": {"w": normal(3, 3, 16, 32, fan_in=144), "b": np.zeros(32, np.float32)},
        "dense": {"w": normal(8 * 8 * 32, 10, fan_in=2048) * 0.1, "b": np.zeros(10, np.float32)},
    }


def conv(x, p):
    y = lax.conv_general_dilated(
        x, p["w"], window_strides=(1, 1), padding="SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")
    )
    return y + p["b"]


def max_pool(x):  # 2x2, stride 2
    return lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")


def f(params, images, labels):
    x = images.reshape((-1, *images.shape[-3:]))  # one image or a batch -> NHWC
    x = max_pool(jax.nn.relu(conv(x, params["conv1"])))  # [n, 16, 16, 16]
    x = max_pool(jax.nn.relu(conv(x, params["conv2"])))  # [n, 8, 8, 32]
    logits = x.reshape(x.shape[0], -1) @ params["dense"]["w"] + params["dense"]["b"]
    logp = jax.nn.log_softmax(logits)
    labels = labels.reshape(-1)
    return -jnp.mean(jnp.take_along_axis(logp, labels[:, None], axis=1))


rng = np.random.default_rng(0)
images = rng.standard_normal((8, 32, 32, 3)).astype(np.float32)
labels = rng.integers(0, 10, 8).astype(np.int32)
args = (init_params(rng), images, labels)
in_axes = (None, 0, 0)

if __name__ == "__main__":
    print(len(jax.make_jaxpr(f)(*args).jaxpr.eqns), "eqns")
    print(f(*args))
