"""softplus(x) = log(1 + exp(x)) with a custom_jvp: autodiff of the formula overflows at
x = 100 (exp(100) is inf in float32, and inf / inf is nan), the rule's sigmoid does not."""
import jax
import jax.numpy as jnp


@jax.custom_jvp
def softplus(x):
    return jnp.log(1.0 + jnp.exp(x))


@softplus.defjvp
def softplus_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return softplus(x), jax.nn.sigmoid(x) * t  # d/dx log(1 + e^x) = sigmoid(x)


def f(x):
    return jnp.sum(softplus(x))


args = (jnp.array([-3.0, 0.0, 2.0, 100.0]),)
