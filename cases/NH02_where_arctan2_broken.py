"""An arctan2 whose NaN element is dropped by a where that looks only at a mask.

Report: jax-ml/jax#1052, "gradients through np.where when one of branches is nan, #347 except
with arctan2" (https://github.com/jax-ml/jax/issues/1052): ``arctan2(a, a)`` at ``a = 0`` is
finite (0) in the forward pass, but its derivative there divides by ``a**2 + a**2 = 0``. Here a
division by the same zero makes the NaN visible in the forward pass, and the ``where`` drops it.
"""
import jax.numpy as jnp


def f(a):
    b = jnp.arctan2(a, a) / a  # a = 0: 0 / 0 is NaN, in the element the mask drops
    mask = jnp.array([0.0, 1.0, 0.0])
    c = jnp.where(mask > 0.5, 0.0, b)
    return jnp.sum(c)


args = (jnp.array([3.0, 0.0, -5.0]),)
