"""Three tanh layers whose pre-activations and activations are named with ``checkpoint_name``
("pre" and "act"), so that the named remat policies (``save_only_these_names``,
``save_any_names_but_these``) have something to save."""
import jax
import jax.numpy as jnp
import numpy as np
from jax.ad_checkpoint import checkpoint_name


def f(params, x):
    h = x
    for w in params:
        z = checkpoint_name(h @ w, "pre")
        h = checkpoint_name(jnp.tanh(z), "act")
    return jnp.sum(jnp.sin(h) ** 2)


rng = np.random.default_rng(0)
params = [(rng.standard_normal((16, 16)) * 0.3).astype(np.float32) for _ in range(3)]
x = rng.standard_normal((8, 16)).astype(np.float32)
args = (params, x)

if __name__ == "__main__":
    jax.ad_checkpoint.print_saved_residuals(f, *args)
    print(jax.grad(f)(*args)[0].shape)
