"""torch.compile(model, backend="openxla") at module level, as a script does before its loop:
the compiled module is called inside f. The exhibit moves the model's parameters onto the XLA
device before the first compiled call (a script's model.to(device)), and its eager CPU truth
runs with torch.compile's stance "force_eager", so nothing is traced on the CPU first."""

import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
compiled = torch.compile(model, backend="openxla")


def f(x):
    return compiled(x)


args = (torch.linspace(-1.0, 1.0, 12).reshape(3, 4),)
