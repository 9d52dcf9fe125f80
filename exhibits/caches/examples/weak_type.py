"""A Python scalar in place of an array: its aval is weakly typed (f32[] weak), a new key."""
import jax.numpy as jnp


def f(x):
    return x * 3.0


calls = [
    (jnp.float32(2.0),),
    (2.0,),
    (5.0,),  # another Python float: the same weak aval, a cache hit
]
args = calls[0]
