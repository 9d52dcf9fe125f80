"""One FX graph with an op torch_xla cannot lower (aten.linalg_eig): the bridge partitions the
graph around it, so one dynamo region becomes two XLA programs with the op run on the CPU
between them."""

import torch


def f(a):
    s = a @ a.T + 1.0
    ev = torch.linalg.eigvals(s)
    return ev.real * 2.0


args = (torch.linspace(-1.0, 1.0, 9).reshape(3, 3),)
calls = 3
