"""One SGD step of a small MLP: the batch goes down (two TransferToDevice), the step's graph is
compiled on the first step only (Compile), run (ExecuteComputation), and the loss comes up
(TransferFromDevice). The learning rate, a Python float, goes down once, at opt.step()'s line on
the first step; torch_xla keeps it on the device after that."""

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
steps = 3
