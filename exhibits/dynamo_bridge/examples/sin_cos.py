"""torch.compile(f, backend="openxla") called three times on the same shapes: dynamo hands the
bridge one FX graph; the first call compiles it into one XLA program under its graph hash, the
next two replay that program by the hash (no compile)."""

import torch


def f(a, b):
    x = torch.sin(a) * b
    return x + torch.cos(a)


args = (
    torch.linspace(-2.0, 2.0, 12).reshape(3, 4),
    torch.linspace(1.0, 0.5, 12).reshape(3, 4),
)
calls = 3
