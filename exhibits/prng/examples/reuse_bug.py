# The JAX docs' sharp bit "Pseudorandom numbers" (docs.jax.dev, "JAX - The Sharp Bits" and
# "Pseudorandom numbers": "never reuse keys"): drawing twice from the same key gives the same
# numbers. Here the same typed key draws the weights' noise and the dropout mask, so the two
# are correlated; jax.debug_key_reuse reports the second use.
import jax


def f(seed):
    key = jax.random.key(seed)
    noise = jax.random.normal(key, (4,))
    mask = jax.random.bernoulli(key, 0.5, (4,))
    return noise * mask


args = (0,)
