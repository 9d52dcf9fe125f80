"""Both mesh axes on one dimension: ('data', 'model') splits x's 8 rows over all 8 devices
(tile assignment [8, 1]); b is replicated. An elementwise f needs no communication."""

import torch

mesh_shape = (2, 4)
axis_names = ("data", "model")
partition_specs = [(("data", "model"), None), None]


def f(x, b):
    return torch.relu(x - b)


args = (torch.arange(24, dtype=torch.float32).reshape(8, 3) - 8, torch.tensor([1.0, 2.0, 3.0]))
