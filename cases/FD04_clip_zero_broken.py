"""Differentiating through optax.clip_by_global_norm at zero updates gives NaN, although the clip
is the identity there (the norm 0 is under max_norm), so the gradient is the weights [1, 2, 3].

Reports: google-deepmind/optax PR #1752 (https://github.com/google-deepmind/optax/pull/1752):
clip_by_global_norm computes both branches of `select(g_norm < max_norm, t, t / g_norm *
max_norm)`, and the clipping branch is 0 / 0 at zero updates; optax#1452 and #1535 say the select
is kept so that meta-gradients flow through the clip. The same gradient is reported NaN for
tf.clip_by_norm at zeros in tensorflow/tensorflow#22048 ("should obviously be [1,1,1]").
"""
import jax.numpy as jnp
import optax

weights = jnp.array([1.0, 2.0, 3.0])


def f(updates):
    clipper = optax.clip_by_global_norm(1.0)
    clipped, _ = clipper.update({"w": updates}, clipper.init({"w": updates}))
    return jnp.sum(clipped["w"] * weights)


args = (jnp.zeros(3),)
