"""A training step that logs loss.item() before the optimizer's update (pytorch/xla issue
1777: "that model is calling loss.item() at every step ... That will execute the graph"):
the read runs the forward and backward graph there and waits for it; the update at the step's
sync is a second graph. Two graphs, two compiles, and two executions every step."""

import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
logged = []


def f(x, y):
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    logged.append(loss.item())
    opt.step()
    return loss


x = torch.linspace(-1.0, 1.0, 32).reshape(8, 4)
args = (x, x.sum(dim=1, keepdim=True).sin())
