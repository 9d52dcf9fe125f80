"""Sequences of different lengths padded to 8 inside the step, on the device (pytorch/xla
issue 1509: "my data are of different length"): the padded tensor has one shape, but the
graph's input is the unpadded batch, whose length changes, so each new length is a new graph.
Padding the batch is the right idea; padding it on the device does not help."""

import torch
import torch.nn.functional as F

torch.manual_seed(0)
model = torch.nn.Linear(8, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)


def f(x, y):
    opt.zero_grad()
    padded = F.pad(x, (0, 8 - x.shape[1]))
    loss = F.mse_loss(model(padded), y)
    loss.backward()
    opt.step()
    return loss


def batch(n):
    return (torch.linspace(-1.0, 1.0, 4 * n).reshape(4, n), torch.ones(4, 1))


batches = [batch(n) for n in (5, 7, 6, 3)]
args = batches[0]
