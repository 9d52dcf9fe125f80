"""A small conv net: two 3x3 convolutions (lax.conv_general_dilated), ReLU, global pooling."""
import jax
import jax.numpy as jnp
from jax import lax


def init_params(key):
    k1, k2, k3 = jax.random.split(key, 3)
    return {
        "conv1": jax.random.normal(k1, (4, 1, 3, 3)) * 0.3,  # OIHW
        "conv2": jax.random.normal(k2, (8, 4, 3, 3)) * 0.3,
        "dense": jax.random.normal(k3, (8, 3)) * 0.3,
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


images = jax.random.normal(jax.random.key(1), (2, 1, 8, 8))
args = (init_params(jax.random.key(0)), images)

if __name__ == "__main__":
    print(jax.make_jaxpr(f)(*args))
    print(f(*args))
