"""jax.grad of sum(log_softmax(x)) over 65,537 float16 logits is -inf everywhere, although the
forward value is finite and the true gradient 1 - n * softmax(x) is small (-19.08 at the largest
logit, 0.00029 elsewhere).

Report: jax-ml/jax#40409, "jax.nn.log_softmax / jax.scipy.special.log_softmax gradient returns
NaN on large float16 arrays despite finite forward pass"
(https://github.com/jax-ml/jax/issues/40409; with these logits JAX 0.10.2 gives -inf rather than
NaN: the cotangent of the sum, n = 65,537, overflows float16's 65,504).
"""
import jax
import jax.numpy as jnp


def f(x):
    return jnp.sum(jax.nn.log_softmax(x))


args = (jnp.zeros(2**16 + 1, dtype=jnp.float16).at[0].set(3.0),)
