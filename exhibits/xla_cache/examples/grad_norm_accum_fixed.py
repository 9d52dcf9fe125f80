"""The accumulation loop, fixed: each micro-batch's gradient norm is kept on the device and f
returns them stacked after the loss; they are read after the step's sync. One graph per step."""

import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)


def f(x, y):
    opt.zero_grad()
    norms = []
    for i in range(4):
        loss = torch.nn.functional.mse_loss(model(x[i::4]), y[i::4])
        loss.backward()
        norms.append(model[0].weight.grad.norm())
    opt.step()
    return loss.detach(), torch.stack(norms)


x = torch.linspace(-1.0, 1.0, 32).reshape(8, 4)
args = (x, x.sum(dim=1, keepdim=True).sin())
steps = 3
