# vmap builds a WrappedFun stack around f: flatten_fun_for_vmap, then _batch_inner, then
# _batch_outer. The arguments meet _batch_outer (the last applied) first; the result
# passes flatten_fun_for_vmap (the first applied) first, which fills its store with the
# output's PyTreeDef.
import jax.numpy as jnp

transform = "vmap"


def f(x, w):
    return {"y": jnp.sin(x) * w, "norm": jnp.sum(x * x)}


args = (jnp.arange(6.0).reshape(3, 2), 2.0)
in_axes = (0, None)
