"""The pjrt_registry exhibit's event (PyTorch/XLA track, design 0038): one try at creating
torch_xla's PJRT client with a ``PJRT_DEVICE`` string, the branch of ``pjrt_registry.cpp``
(v2.9.0) that took it, and what came out.

Imports only pydantic and ``jaxscope.protocol``.
"""

from __future__ import annotations

from typing import Literal

from jaxscope.exhibit_api import EventBase, WireModel


class PjrtBranchView(WireModel):
    """A branch of client creation as the shipped source has it (``branches.Branch``):
    ``name`` (the device string it compares with, ``dynamic plugin``, ``plugin not
    registered``, ``unknown``, ``PJRT_DEVICE empty``), ``file`` (``pjrt_registry.cpp`` or
    ``runtime.cpp``), ``condition`` as written, ``condition_lines`` and ``lines`` ([first,
    last], 1-based, inclusive), ``env_read`` the environment variables read on the way and in
    it, ``env_read_if`` those read only inside a nested ``if`` of it."""

    name: str
    file: str
    condition: str
    condition_lines: list[int]
    lines: list[int]
    env_read: list[str]
    env_read_if: list[str]


class PjrtClientTried(EventBase):
    """One client creation (``torch_xla.device()``) in a worker that had imported torch_xla but
    created no client. ``pjrt_device`` is the string asked for (None: unset, so torch_xla's
    import-time default applies), ``dynamic_plugins`` the switch (``auto``: as torch_xla's
    import left it), ``env`` the two variables at creation (None: unset). ``plugin_registry`` is
    ``torch_xla.experimental.plugins._plugin_registry``'s names, ``python_device_type``
    ``torch_xla.runtime.device_type()``. ``ok`` with ``devices`` (``_xla_get_all_devices``) and
    ``device_count`` (``xr.global_device_count()``), or ``error_type`` and ``error`` (the
    exception's text, exactly); ``retry_error`` the text a second try with ``PJRT_DEVICE=CPU``
    raised after a failure (None: that retry created a client; a C++ failure is kept, the
    TPU plugin's Python error is not). ``source`` is the text of
    ``branch.file`` at ``tag`` (``commit``); ``init_seconds`` the creation's wall time."""

    type: Literal["pjrt_client_tried"] = "pjrt_client_tried"
    pjrt_device: str | None
    dynamic_plugins: Literal["auto", "on", "off"]
    env: dict[str, str | None]
    plugin_registry: list[str]
    python_device_type: str | None
    branch: PjrtBranchView
    ok: bool
    error_type: str | None
    error: str | None
    retry_error: str | None
    devices: list[str]
    device_count: int
    init_seconds: float
    tag: str
    commit: str
    source: str


EVENTS: tuple[type[EventBase], ...] = (PjrtClientTried,)
