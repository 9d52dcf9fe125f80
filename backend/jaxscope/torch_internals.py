"""The only part of jaxscope that calls torch_xla's private API (``torch_xla._XLAC``), for the
PyTorch/XLA track's probes (torch workers, design 0025).

It is the torch twin of :mod:`jaxscope.internals`: each function is a thin, typed wrapper over one
``_XLAC`` binding of torch_xla 2.9.0 (``torch_xla/csrc/init_python_bindings.cpp`` at the v2.9.0
tag), so that when torch_xla changes, one module and its contract test
(``backend/tests/test_torch_internals_contract.py``, run in ``.venv-torch``) fail, not every
probe. Nothing here imports torch at module import: the JAX workers import ``jaxscope`` too.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any


def _xlac() -> Any:
    import torch_xla

    return torch_xla._XLAC


def ir_text(tensors: Sequence[Any]) -> str:
    """torch_xla's text of the pending IR graph that computes ``tensors`` (XLA tensors), as
    ``_get_xla_tensors_text`` prints it (``IR {`` ... ``}``); reading it syncs nothing."""
    return str(_xlac()._get_xla_tensors_text(list(tensors)))


def hlo_text(tensors: Sequence[Any]) -> str:
    """The HLO module text torch_xla would compile for ``tensors`` (``_get_xla_tensors_hlo``),
    lowered from the pending IR without running it."""
    return str(_xlac()._get_xla_tensors_hlo(list(tensors)))


def graph_hash_hex(tensors: Sequence[Any]) -> str:
    """The graph hash torch_xla keys its compile cache by (``_get_graph_hash``: 16 bytes), as
    lowercase hex (32 characters)."""
    return bytes(_xlac()._get_graph_hash(list(tensors))).hex()


def tensor_debug_info(t: Any) -> str:
    """torch_xla's debug text of one XLA tensor (``_get_xla_tensor_debug_info``): its id, device,
    ``IR: None`` when it holds only device data, its handle and data state."""
    return str(_xlac()._get_xla_tensor_debug_info(t))


def has_ir(t: Any) -> bool:
    """Whether the XLA tensor ``t`` has an IR node yet (``IR: None`` in its debug info: device
    data only)."""
    return "\nIR: None\n" not in tensor_debug_info(t)


def set_ir_debug(on: bool) -> None:
    """Turn torch_xla's IR debug on or off (``_set_ir_debug``): with it on, each new IR node
    records the Python location that created it (``location=`` in the IR text, ``source_line``
    in the HLO metadata)."""
    _xlac()._set_ir_debug(on)


@contextmanager
def ir_debug() -> Iterator[None]:
    """IR debug on for the block, off after it (even when the block raises)."""
    set_ir_debug(True)
    try:
        yield
    finally:
        set_ir_debug(False)


def runtime_is_initialized() -> bool:
    """Whether this process has created its PJRT client (``_xla_runtime_is_initialized``)."""
    return bool(_xlac()._xla_runtime_is_initialized())


def all_devices() -> list[str]:
    """The XLA devices of this process's PJRT client (``_xla_get_all_devices``), e.g.
    ``['CPU:0']`` under ``PJRT_DEVICE=CPU``; creates the client if there is none."""
    return [str(d) for d in _xlac()._xla_get_all_devices()]


class TraceMe:
    """A span named ``name`` in the profiler's trace (``torch_xla._XLAC.profiler.TraceMe``, the
    binding under ``torch_xla.debug.profiler.Trace``, without the IR name scope that class also
    pushes): ``start()`` opens it, ``stop()`` closes it; recorded only while a trace is being
    captured (``torch_xla.debug.profiler.start_trace``)."""

    def __init__(self, name: str) -> None:
        self._me = _xlac().profiler.TraceMe(name)

    def start(self) -> None:
        self._me.__enter__()

    def stop(self) -> None:
        self._me.__exit__(None, None, None)


@contextmanager
def cached_graph_runs() -> Iterator[list[str]]:
    """Record, for the block, the graph hash (hex) of each ``_run_cached_graph(hash, inputs)``
    call: torch_xla's dynamo bridge launches every compiled program that way
    (``torch_xla/_dynamo/dynamo_bridge.py:552`` at v2.9.0), looking the hash up in the compile
    cache. The binding is wrapped as a module attribute (the bridge reads it at each call) and
    put back after the block, even when the block raises."""
    xlac = _xlac()
    real = xlac._run_cached_graph
    runs: list[str] = []

    def recording(graph_hash: Any, graph_input: Any) -> Any:
        runs.append(bytes(graph_hash).hex())
        return real(graph_hash, graph_input)

    xlac._run_cached_graph = recording
    try:
        yield runs
    finally:
        xlac._run_cached_graph = real


class ClientExists(RuntimeError):
    """This process already has its PJRT client, so settings torch_xla reads when it creates
    the client can no longer take effect."""


def set_client_env(settings: Mapping[str, str]) -> None:
    """Set, for this run's process, environment variables torch_xla's runtime reads when it
    creates the PJRT client (``CPU_NUM_DEVICES``, ``XLA_FLAGS``, ``PT_XLA_DEBUG_LEVEL``...:
    design 0025, a torch worker imports torch_xla but makes no client and serves one run). Raises
    :class:`ClientExists` when the client exists already (the snippet's module body made an XLA
    tensor): the setting would be silently ignored."""
    if runtime_is_initialized():
        raise ClientExists(
            "torch_xla's PJRT client exists already, so "
            + ", ".join(sorted(settings))
            + " can no longer take effect"
        )
    os.environ.update(settings)


def sharding_spec(t: Any) -> str:
    """The sharding of the XLA tensor ``t`` as the runtime prints it
    (``_get_xla_sharding_spec``), e.g. ``{devices=[2,1,4]0,1,2,3,4,5,6,7
    last_tile_dim_replicate}``; ``""`` for a tensor with none."""
    return str(_xlac()._get_xla_sharding_spec(t))


def op_sharding_args(
    mesh: Any, spec: tuple[Any, ...]
) -> tuple[list[Any], list[Any], list[Any], int]:
    """``Mesh._get_op_sharding_args(spec)`` of torch_xla's SPMD ``Mesh`` (what ``mark_sharding``
    builds its ``OpSharding`` from): ``(tile_assignment, group_assignment, replication_groups,
    sharding_type)``, the tile assignment as nested lists and the type as
    ``ShardingType``'s int."""
    tile, groups, replication, kind = mesh._get_op_sharding_args(spec)
    return list(tile), list(groups), list(replication), int(kind)


def real_devices(devices: Sequence[str]) -> list[str]:
    """The runtime devices behind XLA devices (``_xla_real_devices``): under SPMD every tensor
    lives on the one virtual device, ``['SPMD:0']``; otherwise e.g. ``['CPU:0']``."""
    return [str(d) for d in _xlac()._xla_real_devices(list(devices))]
