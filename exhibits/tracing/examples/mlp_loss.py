"""A 2-layer MLP classifier and its softmax cross-entropy loss on a small batch."""
import jax
import jax.numpy as jnp


def init_params(key, sizes=(8, 16, 4)):
    k1, k2 = jax.random.split(key)
    return {
        "w1": jax.random.normal(k1, (sizes[0], sizes[1])) * 0.1,
        "b1": jnp.zeros(sizes[1]),
        "w2": jax.random.normal(k2, (sizes[1], sizes[2])) * 0.1,
        "b2": jnp.zeros(sizes[2]),
    }


def f(params, x, labels):
    h = jax.nn.relu(x @ params["w1"] + params["b1"])
    logits = h @ params["w2"] + params["b2"]
    log_probs = jax.nn.log_softmax(logits)
    return -jnp.mean(jnp.take_along_axis(log_probs, labels[:, None], axis=1))


x = jax.random.normal(jax.random.key(1), (5, 8))
labels = jnp.array([0, 1, 2, 3, 0])
args = (init_params(jax.random.key(0)), x, labels)

if __name__ == "__main__":
    print(jax.make_jaxpr(f)(*args))
    print(f(*args))
