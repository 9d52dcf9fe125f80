"""A 2 x 2 mesh of 4 devices in a chosen order, and a spec that names its axes the other way
round: the tile assignment is the logical mesh transposed. Summing over the sharded rows needs
an all-reduce."""

import torch

mesh_shape = (2, 2)
axis_names = ("data", "model")
device_ids = [3, 1, 0, 2]  # the logical mesh is [[3, 1], [0, 2]]
partition_specs = [("model", "data")]


def f(x):
    return x.sum(dim=0)


args = (torch.arange(16, dtype=torch.float32).reshape(4, 4),)
