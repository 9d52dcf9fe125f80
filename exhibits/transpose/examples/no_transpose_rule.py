"""A custom primitive with a JVP rule but no transpose rule: jax.jvp works, jax.grad cannot."""
import jax
import jax.numpy as jnp
from jax.extend.core import Primitive
from jax.interpreters import ad

double_p = Primitive("double")
double_p.def_impl(lambda x: 2 * x)
double_p.def_abstract_eval(lambda x: x)
# linear: the tangent of double(x) is double(t), so reverse mode needs double's transpose
ad.primitive_jvps[double_p] = lambda primals, tangents: (
    double_p.bind(*primals), double_p.bind(*tangents))


def f(x):
    return jnp.sum(double_p.bind(jnp.sin(x)))


args = (jnp.array([0.5, 1.0, 2.0]),)

if __name__ == "__main__":
    print(jax.jvp(f, args, (jnp.ones(3),)))  # forward mode works
    print(jax.grad(f)(*args))  # NotImplementedError: Transpose rule ... for 'double'
