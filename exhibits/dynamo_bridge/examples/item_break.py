"""A .item() in the middle of f: dynamo cannot put a Python float into its graph, so it breaks
there. Two FX graphs, two XLA programs, and host code between them: the value read back to the
host, which the second graph holds as a constant (see FX graph 1's division)."""

import torch


def f(x, w):
    h = torch.relu(x @ w)
    peak = h.max().item()
    return torch.tanh(h / peak)


args = (
    torch.linspace(-1.0, 1.0, 12).reshape(4, 3),
    torch.linspace(0.5, -0.5, 15).reshape(3, 5),
)
calls = 3
