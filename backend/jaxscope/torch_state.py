"""Moving a snippet's module-level torch state to a device in place.

A user's PyTorch script often builds its model, loss and optimizer at module level, beside the
function ``f`` a torch exhibit calls. To run ``f`` on the XLA device the probe moves, besides
``f``'s arguments, each ``torch.nn.Module``'s parameters and buffers and each module-level tensor
to the device *in place* with ``torch.utils.swap_tensors``: the Python objects stay the same, so an
optimizer made beside the model keeps its parameters (``Module.to`` would make new ones on a
device of another tensor type). Only public torch API is used; torch is imported when called,
not when this module is imported (the JAX side never imports torch).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def move_state(
    ns: dict[str, Any], exclude: Iterable[Any], device: Any
) -> tuple[list[Any], list[Any]]:
    """Move the ``torch.nn.Module`` parameters and buffers and the tensors among ``ns``'s values
    (a snippet's globals) to ``device`` in place, skipping the objects in ``exclude`` (the
    arguments, which the caller moves itself) and tensors already on an XLA device. Return the
    modules and the optimizers found in ``ns``, in the snippet's order."""
    import torch

    skip = {id(x) for x in exclude}
    modules = [v for v in ns.values() if isinstance(v, torch.nn.Module)]
    optimizers = [v for v in ns.values() if isinstance(v, torch.optim.Optimizer)]
    tensors = [t for m in modules for t in [*m.parameters(), *m.buffers()]]
    tensors += [v for v in ns.values() if isinstance(v, torch.Tensor) and id(v) not in skip]
    seen: set[int] = set()
    for t in tensors:
        if id(t) in seen or t.device.type == "xla":
            continue
        seen.add(id(t))
        moved = t.detach().to(device)
        if isinstance(t, torch.nn.Parameter):
            moved = torch.nn.Parameter(moved, requires_grad=t.requires_grad)
        else:
            moved.requires_grad_(t.requires_grad)
        torch.utils.swap_tensors(t, moved)
    return modules, optimizers
