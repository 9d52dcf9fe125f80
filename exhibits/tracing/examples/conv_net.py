"""A small conv net: two 3x3 convolutions (lax.conv_general_dilated), ReLU, global pooling."""
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax


def init_params(rng):
    # numpy for the example values: they load instantly (no eager JAX kernels to compile)
    def normal(*shape):
        return (rng.standard_normal(shape) * 0.3).astype(np.float32)

    return {
        "conv1": normal(4, 1, 3, 3),  # OIHW
        "conv2": normal(8, 4, 3, 3),
        "dense": normal(8, 3),
    }


def conv(x, w):
    return lax.conv_general_dilated(
        x, w, window_strides=(1, 1), padding="SAME",
        dimension_numbers=("NCHW", "OIHW", "NCHW"))


def f(params, images):
    h = jax.nn.relu(conv(images, params["conv1"]))
    h = jax.nn.relu(conv(h, params["conv2"]))
    pooled = jnp.mean(h, axis=(2, 3))  # [batch, channels]
    return pooled @ params["dense"]


rng = np.random.default_rng(0)
images = rng.standard_normal((2, 1, 8, 8)).astype(np.float32)
args = (init_params(rng), images)

if __name__ == "__main__":
    print(jax.make_jaxpr(f)(*args))
    print(f(*args))
