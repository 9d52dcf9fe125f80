"""A small MLP loss on the XLA device: each line adds IR nodes to the pending graph, the
`.item()` cuts it (torch_xla compiles and runs what is pending), the rest stays lazy."""

import torch


def f(x, w1, w2):
    h = torch.relu(x @ w1 + 1.0)
    y = h @ w2
    peak = y.abs().max().item()
    scaled = y / peak
    return (scaled * 0.5).sum()


args = (
    torch.linspace(-1.0, 1.0, 12).reshape(4, 3),
    torch.linspace(0.5, -0.5, 15).reshape(3, 5),
    torch.linspace(-0.25, 0.75, 10).reshape(5, 2),
)
