"""Issue 1509's batches, fixed: each batch is padded to 8 on the host (as a data loader's
collate function would) before it reaches the device, so every step's graph has one input
shape and compiles once."""

import torch
import torch.nn.functional as F

torch.manual_seed(0)
model = torch.nn.Linear(8, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)


def f(x, y):
    opt.zero_grad()
    loss = F.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    return loss


def batch(n):
    x = torch.linspace(-1.0, 1.0, 4 * n).reshape(4, n)
    return (F.pad(x, (0, 8 - n)), torch.ones(4, 1))


batches = [batch(n) for n in (5, 7, 6, 3)]
args = batches[0]
