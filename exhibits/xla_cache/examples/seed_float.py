"""Noise drawn on the device and read back with float() at every inner iteration, no sync in
between (pytorch/xla issue 2783, "randn causes recompile even data shapes are unchanged"): a
host read runs only the graph it needs and leaves the device's RNG seed update in the next
graph, so each read's graph carries one more seed update. Five reads, five compiles, in one
step."""

import torch

torch.manual_seed(0)
w = torch.linspace(-1.0, 1.0, 16).reshape(4, 4)


def f(x):
    total = 0.0
    for _ in range(5):
        noise = torch.randn(4, 4, device=x.device)
        total += float((x @ w + noise).abs().sum())
    return torch.tensor(total)


args = (torch.ones(4, 4),)
steps = 3
