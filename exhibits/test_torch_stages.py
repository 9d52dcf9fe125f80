"""The PyTorch/XLA exhibits name their stages in torch_xla's words (issue 31, item 5): a torch
run creates its PJRT client and copies the inputs (``client``), runs f on XLA tensors while
torch_xla records the pending graph (``lazy_trace``), then syncs it, compiling it on a new graph
hash and executing it (``sync``), or runs a training loop of such steps (``steps``); ``call`` is
a call of f itself (eager on the CPU, or ``torch.compile``'s). None says JAX's ``trace`` or
``run`` (torchax's panel traces f into a jaxpr: that one is JAX's ``trace``). Each default
example runs through the CLI, in the sandbox, as the page runs it."""

from __future__ import annotations

import pytest
from jaxscope.protocol import StageStarted
from jaxscope.sandbox.kinds import kind_problem

from exhibits.registry import EXHIBITS
from exhibits.torch_testing import events_of

pytestmark = pytest.mark.skipif(kind_problem("torch") is not None, reason="no torch venv")

# Each exhibit's stages, in order, on its default example.
STAGES = {
    "lazy_tensor": ["load", "client", "lazy_trace", "sync", "lazy_trace"],
    "xla_cache": ["load", "client", "steps"],
    "seam": ["load", "client", "steps"],
    "torch_spmd": ["load", "client", "lazy_trace", "sync", "call"],
    "dynamo_bridge": ["load", "client", "call"],
    "pjrt_registry": ["load", "client"],
}


def test_every_torch_exhibit_is_listed() -> None:
    assert sorted(STAGES) == sorted(e.id for e in EXHIBITS.values() if e.worker == "torch")


@pytest.mark.parametrize("exhibit_id", sorted(STAGES))
def test_a_torch_run_speaks_torch_xla(exhibit_id: str) -> None:
    exhibit = EXHIBITS[exhibit_id]
    events = events_of(exhibit_id, exhibit.picker_paths()[exhibit.default_example])
    stages = [e.stage for e in events if isinstance(e, StageStarted)]
    assert stages == STAGES[exhibit_id]
    assert events[-1].type == "run_finished"
