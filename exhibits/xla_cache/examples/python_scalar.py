"""A step size decayed by hand as decay ** step with the step a Python int: torch_xla keeps
pow's Python exponent in the graph as a constant, so every step is a new graph, compiled anew.
(A Python float multiplier, lr * step, would not: torch_xla uploads it as data.)"""

import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
decay = torch.tensor(0.9)


def f(x, y, step):
    model.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    with torch.no_grad():
        for p in model.parameters():
            p -= 0.1 * decay.pow(step) * p.grad
    return loss


x = torch.linspace(-1.0, 1.0, 32).reshape(8, 4)
y = x.sum(dim=1, keepdim=True).sin()
batches = [(x, y, step) for step in range(4)]
args = batches[0]
