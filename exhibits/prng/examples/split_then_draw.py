# The correct pattern: split a typed key before every use, draw each key once.
import jax


def f(seed):
    key = jax.random.key(seed)
    key, init_key = jax.random.split(key)
    w = jax.random.normal(init_key, (3, 2))
    key, drop_key = jax.random.split(key)
    keep = jax.random.bernoulli(drop_key, 0.9, (3, 2))
    step_key = jax.random.fold_in(key, 7)
    noise = jax.random.uniform(step_key, (2,))
    return w * keep + noise


args = (0,)
