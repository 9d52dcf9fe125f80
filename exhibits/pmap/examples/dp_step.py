# A data-parallel training step: each device takes the gradient on its slice of the batch, and
# pmean averages the gradients over the devices. Below, the same step twice more: jax.jit on a
# batch placed with NamedSharding, and jax.shard_map. jaxscope runs all three and compares them.
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import AxisType
from jax.sharding import PartitionSpec as P

n = jax.local_device_count()  # the 8 virtual CPU devices, or your accelerator's
axis_name = "batch"
in_axes = (None, 0)  # params go to every device whole; the batch is split on its leading axis


def loss(params, x, y):
    pred = x @ params["w"] + params["b"]
    return jnp.mean((pred - y) ** 2)


def f(params, batch):  # one device's step: its slice of the batch
    x, y = batch
    grads = jax.grad(loss)(params, x, y)
    return jax.lax.pmean(grads, "batch")  # the mean of every device's gradients


rng = np.random.default_rng(0)
params = {"w": rng.normal(size=(3, 2)).astype(np.float32), "b": np.zeros(2, np.float32)}
batch = (
    rng.normal(size=(n, 4, 3)).astype(np.float32),  # n devices x 4 examples x 3 features
    rng.normal(size=(n, 4, 2)).astype(np.float32),
)
args = (params, batch)


# The same step on the whole batch: jaxscope places `batch` with NamedSharding(mesh, P("batch"))
# and the partitioner inserts the all-reduce that pmean wrote by hand.
def jit_version(params, batch):
    x, y = batch
    return jax.grad(loss)(params, x.reshape(-1, 3), y.reshape(-1, 2))


# The same step as pmap runs it: a shard_map over a one-axis mesh, each device's block [1, 4, 3].
# check_vma=False as pmap's: with shard_map's default (True) the gradient of the replicated params
# is already summed over the devices (psum_invariant), and pmean would return n times the mean.
mesh = jax.make_mesh((n,), ("batch",), axis_types=(AxisType.Auto,))
shard_map_version = jax.shard_map(
    lambda params, batch: f(params, jax.tree.map(lambda a: a[0], batch)),
    mesh=mesh,
    in_specs=(P(), P("batch")),
    out_specs=P(),
    check_vma=False,
)
