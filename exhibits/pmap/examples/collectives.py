# pmap runs f once per device, each on one row of x. Inside, psum, pmean and all_gather name the
# axis pmap was given (axis_name) and move data between the devices.
import jax
import numpy as np

n = jax.local_device_count()  # the 8 virtual CPU devices, or your accelerator's
axis_name = "i"


def f(x):  # x: this device's row, f32[3]
    total = jax.lax.psum(x, "i")  # every device gets the sum of all rows
    mean = jax.lax.pmean(x, "i")  # ... and their mean (psum, then divide by n)
    sums = jax.lax.all_gather(x.sum(), "i")  # every device gets every device's x.sum()
    centred = x - mean  # this device's row minus the mean row: differs per device
    return total, mean, sums, centred


args = (np.arange(n * 3, dtype=np.float32).reshape(n, 3),)
