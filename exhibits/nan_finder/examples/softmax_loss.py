"""A cross-entropy loss through log_softmax: large logits, and still a finite gradient."""
import jax
import jax.numpy as jnp


def f(logits, label):
    # log_softmax subtracts the max first, so exp never overflows
    logp = jax.nn.log_softmax(logits)
    return -jnp.sum(logp * label)


args = (jnp.array([1000.0, 0.0, -1000.0]), jnp.array([0.0, 1.0, 0.0]))
