"""The pjrt_registry exhibit's probe (PyTorch/XLA track; runs in a torch worker, design 0038).

One try at creating torch_xla's PJRT client per run. The sandbox refuses to start processes
(its audit hook stops ``subprocess``), but a torch worker is already the fresh process a try
needs: it serves one run and retires, and its warm-up imports torch_xla without creating a
client (design 0025). The probe checks that (``_xla_runtime_is_initialized()`` False), then
replays the two things torch_xla's import reads from the environment before a client exists:
``PJRT_DYNAMIC_PLUGINS`` (the import sets it to 1 unless ``XLA_REGISTER_INSTALLED_PLUGINS=0``)
and, for an unset ``PJRT_DEVICE``, the import's default (``runtime._maybe_select_default_device``,
which the import calls). Then ``torch_xla.device()`` creates the client; the branch is read
from the shipped v2.9.0 source (``branches.py``) for the environment at that moment. The test
compares every outcome with a plain torch-venv process started with that environment.
"""

from __future__ import annotations

import os
import time
from typing import Any, Literal

from jaxscope.exhibit_api import InvalidSnippet, ProbeContext, blame_line, options_as, setting_line
from jaxscope.exhibit_api import torch_internals as ti

from . import branches
from .events import PjrtBranchView, PjrtClientTried
from .options import PjrtRegistryOptions

Switch = Literal["auto", "on", "off"]
_SWITCH: dict[Any, Switch] = {
    None: "auto",
    "auto": "auto",
    True: "on",
    "on": "on",
    False: "off",
    "off": "off",
}


def settings(ctx: ProbeContext) -> tuple[str | None, Switch]:
    """``(pjrt_device, dynamic_plugins)``: the run options, else the snippet's names, else
    ``("CPU", "auto")``. A snippet value of the wrong type is the snippet's error, at its line."""
    namespace = ctx.snippet.namespace
    device = options_as(ctx.options, PjrtRegistryOptions).pjrt_device
    if device is None:
        device = namespace.get("pjrt_device", "CPU")
        if device is not None and not isinstance(device, str):
            raise blame_line(
                InvalidSnippet(f"pjrt_device must be a string or None, got {device!r}"),
                setting_line(ctx.snippet.source, "pjrt_device"),
            )
    switch = options_as(ctx.options, PjrtRegistryOptions).dynamic_plugins
    if switch is None:
        given = namespace.get("dynamic_plugins")
        if not isinstance(given, (str, bool, type(None))) or given not in _SWITCH:
            raise blame_line(
                InvalidSnippet(
                    "dynamic_plugins must be True, False, None, 'on', 'off' or 'auto', "
                    f"got {given!r}"
                ),
                setting_line(ctx.snippet.source, "dynamic_plugins"),
            )
        switch = _SWITCH[given]
    return device, switch


def _prepare(device: str | None, switch: Switch) -> None:
    """Set the environment as a fresh process started with it would have it once torch_xla is
    imported."""
    import torch_xla.runtime as xr

    if switch == "on":
        os.environ["PJRT_DYNAMIC_PLUGINS"] = "1"
    elif switch == "off":
        os.environ.pop("PJRT_DYNAMIC_PLUGINS", None)
    if device is None:
        os.environ.pop("PJRT_DEVICE", None)
        xr._maybe_select_default_device()  # what `import torch_xla` does with PJRT_DEVICE unset
    else:
        os.environ["PJRT_DEVICE"] = device


def _try() -> tuple[Exception | None, float]:
    import torch_xla

    start = time.perf_counter()
    try:
        torch_xla.device()
    except Exception as exc:  # the outcome we show: torch_xla's own error
        return exc, time.perf_counter() - start
    return None, time.perf_counter() - start


def run(ctx: ProbeContext) -> None:
    """Create the client once with the asked-for environment; emit the branch and the outcome."""
    import torch_xla.runtime as xr
    from torch_xla.experimental import plugins

    device, switch = settings(ctx)
    with ctx.stage("client"):
        if ti.runtime_is_initialized():
            raise RuntimeError(
                "this worker already created a PJRT client: the try would not be fresh"
            )
        _prepare(device, switch)
        env = {name: os.environ.get(name) for name in ("PJRT_DEVICE", "PJRT_DYNAMIC_PLUGINS")}
        registry = sorted(plugins._plugin_registry)
        branch = branches.branch_for(
            {k: v for k, v in env.items() if v is not None}, tuple(registry)
        )
        error, seconds = _try()
        retry_error = None
        devices: list[str] = []
        if error is None:
            devices = ti.all_devices()
            count = xr.global_device_count()
        else:
            count = 0
            os.environ["PJRT_DEVICE"] = "CPU"
            again, _ = _try()
            retry_error = str(again) if again is not None else None
    ctx.emit(
        PjrtClientTried(
            pjrt_device=device,
            dynamic_plugins=switch,
            env=env,
            plugin_registry=registry,
            python_device_type=xr.device_type() if error is None else _device_type(env),
            branch=PjrtBranchView(
                name=branch.name,
                file=branch.file,
                condition=branch.condition,
                condition_lines=list(branch.condition_lines),
                lines=list(branch.lines),
                env_read=list(branch.env_read),
                env_read_if=list(branch.env_read_if),
            ),
            ok=error is None,
            error_type=type(error).__name__ if error is not None else None,
            error=str(error) if error is not None else None,
            retry_error=retry_error,
            devices=devices,
            device_count=count,
            init_seconds=round(seconds, 4),
            tag=branches.TAG,
            commit=branches.COMMIT,
            source=branches.source_text(branch.file),
        )
    )


def _device_type(env: dict[str, str | None]) -> str | None:
    """``torch_xla.runtime.device_type()`` for the environment of the first try (the retry
    changed ``PJRT_DEVICE``): the part before the first ``_``."""
    value = env["PJRT_DEVICE"]
    return value.split("_")[0] if value else value
