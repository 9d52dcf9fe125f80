"""One Adam update on a params pytree, given its gradients and the optimizer state."""
import jax
import jax.numpy as jnp
import numpy as np


def f(params, grads, state, lr=1e-3, b1=0.9, b2=0.999, eps=1e-8):
    step = state["step"] + 1
    m = jax.tree.map(lambda m, g: b1 * m + (1 - b1) * g, state["m"], grads)
    v = jax.tree.map(lambda v, g: b2 * v + (1 - b2) * g * g, state["v"], grads)
    m_hat_scale = 1 / (1 - b1 ** step)
    v_hat_scale = 1 / (1 - b2 ** step)
    new_params = jax.tree.map(
        lambda p, m, v: p - lr * (m * m_hat_scale) / (jnp.sqrt(v * v_hat_scale) + eps),
        params, m, v)
    return new_params, {"step": step, "m": m, "v": v}


# numpy for the example values: they load instantly (no eager JAX kernels to compile)
params = {"w": np.ones((3, 2), np.float32), "b": np.zeros(2, np.float32)}
grads = {"w": np.full((3, 2), 0.5, np.float32), "b": np.array([0.1, -0.2], np.float32)}
state = {
    "step": np.array(0, np.int32),
    "m": jax.tree.map(np.zeros_like, params),
    "v": jax.tree.map(np.zeros_like, params),
}
args = (params, grads, state)
kwargs = {"lr": 1e-2}

if __name__ == "__main__":
    print(jax.make_jaxpr(lambda *a: f(*a, **kwargs))(*args))
    print(f(*args, **kwargs))
