"""A function with no cut: nothing reads a value on the host, so torch_xla keeps one pending
graph, and torchax can trace it too. Tick "torchax" to see the same f as torch_xla's IR and HLO
and as torchax's jaxpr and StableHLO, side by side. The exponent `p` is baked in (a new `p`, a new
graph hash), `scale` is uploaded as device data (the same hash)."""

import torch


def f(x, w, p, scale):
    y = (x @ w).abs() ** p
    return torch.relu(y.mean(dim=0) * scale - 0.01)


args = (
    torch.linspace(-1.0, 1.0, 12).reshape(4, 3),
    torch.linspace(0.5, -0.5, 15).reshape(3, 5),
    2,
    0.5,
)
