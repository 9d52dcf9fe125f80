# A model, a tensor and a loss at module level, as a PyTorch script writes them; f reads them.
# torch_xla: the probe moves the model's parameters and the tensor to the XLA device in place.
# torchax (the torchax option): the model's parameters are inputs of the jaxpr, named as
# named_parameters() names them; the module-level tensor f reads is a constant.
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
scale = torch.tensor([1.0, 2.0, 3.0])
loss_fn = nn.CrossEntropyLoss()


def f(x, y):
    logits = model(x) * scale
    return loss_fn(logits, y)


x = torch.linspace(-1.0, 1.0, 24).reshape(6, 4)
y = torch.tensor([0, 1, 2, 0, 1, 2])
args = (x, y)
use_torchax = True  # the torchax panel on (the torchax option, set either way, wins)
