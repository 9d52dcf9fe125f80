"""A Python `if` on a tensor's value: dynamo evaluates the condition on the host, so the graph
breaks at the `if`; the branch taken runs in a second graph (dynamo's resume function)."""

import torch


def f(a, b):
    x = torch.sin(a) * b
    if x.sum() > 0:
        x = x + 1
    return torch.cos(x)


args = (
    torch.linspace(-2.0, 2.0, 12).reshape(3, 4),
    torch.linspace(1.0, 0.5, 12).reshape(3, 4),
)
calls = 3
