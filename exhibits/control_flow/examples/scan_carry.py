"""An exponential moving average over a sequence with lax.scan: the carry is a dict."""
import jax.numpy as jnp
import numpy as np
from jax import lax


def step(carry, x):
    print("tracing step")  # printed once per trace, not once per element
    mean = carry["decay"] * carry["mean"] + (1 - carry["decay"]) * x
    count = carry["count"] + 1
    return {"mean": mean, "count": count, "decay": carry["decay"]}, mean


def f(xs):
    init = {"mean": jnp.zeros(3), "count": jnp.int32(0), "decay": jnp.float32(0.9)}
    final, means = lax.scan(step, init, xs)
    return final["mean"], final["count"], means


# numpy for the example values: they load instantly
args = (np.linspace(0.0, 1.0, 24, dtype=np.float32).reshape(8, 3),)

if __name__ == "__main__":
    print(f(*args))
