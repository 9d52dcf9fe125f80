"""A linear model updated by hand with a step size lr * step, a Python float: torch_xla uploads a
Python number as data, so the graph stays the same, except for the values 0 and 1, which it
keeps in the graph as constants. Step 0 (lr * 0 == 0.0) and step 1 compile; the rest hit the
cache. No finding: the loop settles."""

import torch

torch.manual_seed(0)
w = torch.randn(4, 1, requires_grad=True)
lr = 0.1


def f(x, step):
    loss = ((x @ w) ** 2).mean()
    loss.backward()
    with torch.no_grad():
        w.sub_(lr * step * w.grad)
    w.grad = None
    return loss


x = torch.linspace(-1.0, 1.0, 32).reshape(8, 4)
batches = [(x, step) for step in range(5)]
args = batches[0]
