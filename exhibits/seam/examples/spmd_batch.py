"""The same SGD step under SPMD on a mesh of 4 virtual CPU devices: `mesh_shape` makes the
probe create the client with CPU_NUM_DEVICES=4, call torch_xla.runtime.use_spmd() and build
xs.Mesh, and the loop marks each batch tensor's first dimension sharded over the mesh
(xs.mark_sharding, spec (0, None)). The batch goes down shard by shard (TransferShardsToDevice,
one TransferToDevice inside it), the step runs as ExecuteReplicated on all 4 devices, and the
loss comes up through TransferFromDevice."""

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
mesh_shape = (4,)
steps = 3
