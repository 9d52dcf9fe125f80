"""The decayed step size, fixed: the decay is computed on the host (0.1 * 0.9 ** step, one
Python float), which torch_xla uploads as data, so every step has the same graph."""

import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))


def f(x, y, step):
    model.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    lr = 0.1 * 0.9**step
    with torch.no_grad():
        for p in model.parameters():
            p -= lr * p.grad
    return loss


x = torch.linspace(-1.0, 1.0, 32).reshape(8, 4)
y = x.sum(dim=1, keepdim=True).sin()
batches = [(x, y, step) for step in range(4)]
args = batches[0]
