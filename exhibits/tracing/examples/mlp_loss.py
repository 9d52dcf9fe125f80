"""A 2-layer MLP classifier and its softmax cross-entropy loss on a small batch."""
import jax
import jax.numpy as jnp
import numpy as np


def init_params(rng, sizes=(8, 16, 4)):
    # numpy for the example values: they load instantly (no eager JAX kernels to compile)
    return {
        "w1": (rng.standard_normal((sizes[0], sizes[1])) * 0.1).astype(np.float32),
        "b1": np.zeros(sizes[1], np.float32),
        "w2": (rng.standard_normal((sizes[1], sizes[2])) * 0.1).astype(np.float32),
        "b2": np.zeros(sizes[2], np.float32),
    }


def f(params, x, labels):
    h = jax.nn.relu(x @ params["w1"] + params["b1"])
    logits = h @ params["w2"] + params["b2"]
    log_probs = jax.nn.log_softmax(logits)
    return -jnp.mean(jnp.take_along_axis(log_probs, labels[:, None], axis=1))


rng = np.random.default_rng(0)
x = rng.standard_normal((5, 8)).astype(np.float32)
labels = np.array([0, 1, 2, 3, 0], np.int32)
args = (init_params(rng), x, labels)

if __name__ == "__main__":
    print(jax.make_jaxpr(f)(*args))
    print(f(*args))
