# A training step as a PyTorch script writes it: the model, the loss and the optimizer are built
# at module level, and f runs one step on them. The probe moves the model's parameters to the XLA
# device in place, so the optimizer keeps them; each call of f (line by line, then plainly, then
# the hash trials) runs one more step and updates the weights.
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Linear(4, 3)
loss_fn = nn.CrossEntropyLoss()
opt = torch.optim.SGD(model.parameters(), lr=0.5)


def f(x, y):
    opt.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    opt.step()
    return loss


x = torch.linspace(-1.0, 1.0, 24).reshape(6, 4)
y = torch.tensor([0, 1, 2, 0, 1, 2])
args = (x, y)
