"""A small stack whose parameters are a dict of many leaves (26: more than the graph's
INVAR_GROUP_MIN), for the dataflow graph's argument group, its rows and its leaves' keypaths."""

import jax.numpy as jnp

D = 8


def init(n_layers=4):
    layer = {
        "w_in": jnp.full((D, D), 0.1),
        "b_in": jnp.zeros(D),
        "w_out": jnp.full((D, D), 0.2),
        "b_out": jnp.zeros(D),
        "ln_g": jnp.ones(D),
        "ln_b": jnp.zeros(D),
    }
    return {"layers": [dict(layer) for _ in range(n_layers)], "emb": jnp.ones((16, D)), "head": jnp.ones((D, 16))}


def block(p, x):
    h = jnp.tanh(x @ p["w_in"] + p["b_in"])
    x = x + h @ p["w_out"] + p["b_out"]
    return x * p["ln_g"] + p["ln_b"]


def f(params, tokens):
    x = params["emb"][tokens]
    for p in params["layers"]:
        x = block(p, x)
    return (x @ params["head"]).sum()


args = (init(), jnp.arange(4))
