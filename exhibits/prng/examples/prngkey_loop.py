# A loop over raw uint32 keys (jax.random.PRNGKey): the key is split every step, but the noise
# is drawn from the parent key, which the next split consumes again. jax.debug_key_reuse cannot
# see raw keys; jaxscope's own check over the key tree finds the reuse.
import jax
import jax.numpy as jnp


def f(x):
    key = jax.random.PRNGKey(42)
    for _ in range(3):
        noise = jax.random.normal(key, x.shape)
        key, subkey = jax.random.split(key)
        x = x + 0.1 * noise + jax.random.uniform(subkey, x.shape)
    return x


args = (jnp.zeros(2),)
