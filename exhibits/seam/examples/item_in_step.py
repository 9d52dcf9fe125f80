"""The same step, logging the loss with .item() inside f, before the update: the read cuts the
lazy graph there. The forward and backward are compiled and run at the .item() line, then the
update is a second graph at the loop's sync: two Compiles on the first step, two
ExecuteComputations every step, and a TransferFromDevice at the logging line."""

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
steps = 3
