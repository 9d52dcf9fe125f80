# jax.linear_transpose traces f with two transformations around it:
# flatten_fun_nokwargs (its store gets the output's PyTreeDef), then
# trace_to_subjaxpr_nounits, the partial evaluation that stages f into a jaxpr.
import jax.numpy as jnp

transform = "linear_transpose"


def f(x):
    return 2.0 * x + jnp.flip(x)


args = (jnp.arange(4.0),)
