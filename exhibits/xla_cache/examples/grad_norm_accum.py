"""Gradient accumulation over four micro-batches, logging the gradient's norm after each
backward with .item(): the read runs the norm's graph, but the accumulated gradient stays
pending, so each micro-batch's read carries one more backward and add than the last. A new graph,
a new compile, at every read of the step (pytorch/xla issue 1367 and pytorch-tpu/fairseq PR 22:
a barrier after every accumulation step)."""

import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
norms = []


def f(x, y):
    opt.zero_grad()
    for i in range(4):
        loss = torch.nn.functional.mse_loss(model(x[i::4]), y[i::4])
        loss.backward()
        norms.append(model[0].weight.grad.norm().item())
    opt.step()
    return loss.detach()


x = torch.linspace(-1.0, 1.0, 32).reshape(8, 4)
args = (x, x.sum(dim=1, keepdim=True).sin())
steps = 3
