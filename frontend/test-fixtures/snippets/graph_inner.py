import jax
import jax.numpy as jnp


@jax.custom_vjp
def clip_grad(x):
    return x


clip_grad.defvjp(lambda x: (x, None), lambda _, g: (jnp.clip(g, -1.0, 1.0),))


@jax.jit
def big(x):  # more than 10 eqns and called twice: JAX prints it once, at the top, by name
    for _ in range(6):
        x = jnp.sin(x) * 2.0
    return x


def f(x, w):
    c, ys = jax.lax.scan(lambda c, a: (c + jnp.dot(a, w).sum(), c * 2.0), 0.0, x)
    i, n = jax.lax.while_loop(
        lambda v: v[0] < w.sum(), lambda v: (v[0] + 1.0, v[1] * w.sum()), (0.0, 1.0)
    )
    z = jax.lax.cond(c > 0, jnp.sin, jnp.cos, x)
    s = jax.lax.switch(jnp.argmax(w), [jnp.sin, jnp.cos, jnp.tanh], x)
    r = jax.checkpoint(lambda v: jnp.sin(jnp.sin(v)))(x) + jax.nn.relu(x)
    jax.debug.print("n={n}", n=n)
    b = big(x) + big(x + 1.0)
    return ys.sum() + i + n + z.sum() + s.sum() + clip_grad(x).sum() + r.sum() + b.sum()


args = (jnp.ones((3, 4)), jnp.ones((4,)))
