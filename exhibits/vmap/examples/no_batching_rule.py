"""A custom primitive with an implementation and an abstract evaluation rule but no batching
rule: under vmap, JAX finds nothing in batching.fancy_primitive_batchers for it."""
import jax
import jax.numpy as jnp
import numpy as np
from jax.extend.core import Primitive

twice_p = Primitive("twice")
twice_p.def_impl(lambda x: 2 * x)
twice_p.def_abstract_eval(lambda x: x)


def f(x):
    y = jnp.sin(x) * x
    z = twice_p.bind(y)  # no batching rule for 'twice'
    return jnp.cos(z)


args = (np.linspace(0.0, 1.0, 4, dtype=np.float32),)

if __name__ == "__main__":
    print(jax.make_jaxpr(f)(np.float32(1.0)))
