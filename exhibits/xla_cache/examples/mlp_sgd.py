"""A small MLP trained with SGD on a fixed batch: the first step compiles the step's graph, the
next steps find it in torch_xla's compile cache (same graph hash) and only execute."""

import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)


def f(x, y):
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    return loss


x = torch.linspace(-1.0, 1.0, 32).reshape(8, 4)
args = (x, x.sum(dim=1, keepdim=True).sin())
steps = 4
