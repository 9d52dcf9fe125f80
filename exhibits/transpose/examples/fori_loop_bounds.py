"""fori_loop with a bound taken from an argument: eager grad works, jit(grad) does not.

Eagerly n is the Python int 3, so fori_loop has static bounds and JAX builds a scan, which
reverse mode can transpose. Under jax.jit(jax.grad(f)) n is traced: fori_loop becomes a
while_loop, which has no transpose. Mark n static (static_argnums = (1,)) and both work.
"""
import jax
from jax import lax


def f(x, n):
    return lax.fori_loop(0, n, lambda i, c: c * x, 1.0)  # x ** n


args = (2.0, 3)

if __name__ == "__main__":
    print(jax.grad(f)(*args))  # 12.0 = 3 * 2.0 ** 2
    print(jax.jit(jax.grad(f))(*args))  # ValueError: Reverse-mode differentiation ...
