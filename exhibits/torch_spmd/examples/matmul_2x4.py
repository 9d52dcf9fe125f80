"""x @ w on a 2 x 4 mesh of 8 virtual CPU devices: x's columns and w's rows (the contracted
dimension) are split over 'model', so each device multiplies its blocks and the partitioner
adds an all-reduce over each 'model' row of the mesh."""

import torch

mesh_shape = (2, 4)
axis_names = ("data", "model")
# One partition spec per argument: a mesh axis (or None) per dimension.
partition_specs = [("data", "model"), ("model", None)]


def f(x, w):
    return x @ w


x = torch.arange(32, dtype=torch.float32).reshape(4, 8)
w = (torch.arange(32, dtype=torch.float32).reshape(8, 4) % 5) - 2
args = (x, w)
