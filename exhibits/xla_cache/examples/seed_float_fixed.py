"""Issue 2783's loop, fixed: the values stay on the device and are summed there; f returns
the sum, which the loop reads after the step's sync. One graph per step, compiled once."""

import torch

torch.manual_seed(0)
w = torch.linspace(-1.0, 1.0, 16).reshape(4, 4)


def f(x):
    total = torch.zeros((), device=x.device)
    for _ in range(5):
        noise = torch.randn(4, 4, device=x.device)
        total = total + (x @ w + noise).abs().sum()
    return total


args = (torch.ones(4, 4),)
steps = 3
