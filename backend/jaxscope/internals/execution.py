"""The Run station: execute a ``jax.stages.Compiled`` and time it honestly.

JAX dispatches asynchronously: a call returns a ``jax.Array`` as soon as the computation is
enqueued, before it has finished. So we report two times, both with ``time.perf_counter``:

* ``dispatch_ms``: the call alone (returns when dispatched; no wait), median over warm repeats;
* ``blocked_ms``: the same calls followed by ``jax.block_until_ready`` on their outputs, median
  over the same warm repeats (fewer repeats for slow programs, so the run stays within budget);
* ``ready_after_dispatch``: whether every output leaf's ``is_ready()`` was already true right
  after the first call returned.

Outputs are previewed with numpy (``jaxscope.internals.views.preview_value``); ``path`` is
``jax.tree_util.keystr`` of the leaf's path in the output pytree (``""`` for a single array);
``device`` is ``str(device)`` of the first output's device, ``platform`` its ``.platform``.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import jax

from jaxscope.internals.views import preview_value
from jaxscope.protocol import ArrayPreview

# Time budget for the warm repeats (seconds) and the most repeats of each measurement.
REPEAT_BUDGET_S = 1.0
MAX_REPEATS = 5


def _ms(seconds: float) -> float:
    return seconds * 1e3


def _all_ready(out: Any) -> bool:
    return all(leaf.is_ready() for leaf in jax.tree.leaves(out) if hasattr(leaf, "is_ready"))


def output_previews(out: Any) -> list[ArrayPreview]:
    """An :class:`ArrayPreview` per leaf of the output pytree ``out``."""
    previews = []
    for path, leaf in jax.tree_util.tree_flatten_with_path(out)[0]:
        shape = [int(d) for d in getattr(leaf, "shape", ())]
        dtype = getattr(leaf, "dtype", None)
        if dtype is not None and dtype == jax.dtypes.float0:
            dtype = "float0"  # numpy's str of it is "[('float0', 'V')]"
        previews.append(
            ArrayPreview(
                path=jax.tree_util.keystr(path),
                shape=shape,
                dtype=str(dtype) if dtype is not None else type(leaf).__name__,
                preview=preview_value(leaf),
            )
        )
    return previews


def output_device(out: Any) -> tuple[str, str]:
    """``(str(device), device.platform)`` of the first output leaf (default device if none)."""
    for leaf in jax.tree.leaves(out):
        devices = getattr(leaf, "devices", None)
        if devices is not None:
            device = sorted(devices(), key=lambda d: d.id)[0]
            return str(device), str(device.platform)
    device = jax.devices()[0]
    return str(device), str(device.platform)


@dataclass(frozen=True)
class ProgramRun:
    """What one compiled program's run gave: the device and platform of its outputs, the
    outputs' previews, the median dispatch and blocked times of the warm calls (ms), how many
    warm calls, and whether the outputs were ready right after the first call returned. The
    stations probe makes its ``program_executed`` event of it (design 0059: the walker returns
    records, the exhibit builds its events)."""

    device: str
    platform: str
    outputs: list[ArrayPreview]
    dispatch_ms: float
    blocked_ms: float
    repeats: int
    ready_after_dispatch: bool
    # The first call's outputs themselves (not on the wire): a run for the CLI sends the values
    # of those whose preview is summarised (design 0060).
    values: Any = field(default=None, compare=False, repr=False)


def program_executed(
    call: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    max_repeats: int = MAX_REPEATS,
) -> ProgramRun:
    """Call ``call(*args, **kwargs)`` (a ``Compiled`` or jitted function) and time it.

    The first call gives the outputs and ``ready_after_dispatch``; then up to ``max_repeats``
    warm calls (fewer when one call takes long: about :data:`REPEAT_BUDGET_S` in all) each time
    the dispatch (until the call returns) and the whole call followed by
    ``jax.block_until_ready``. A program with effects (``jax.debug.print``) prints once per call.
    """
    t0 = time.perf_counter()
    out = call(*args, **kwargs)
    ready = _all_ready(out)
    jax.block_until_ready(out)
    first = time.perf_counter() - t0

    repeats = max(1, min(max_repeats, int(REPEAT_BUDGET_S / max(first, 1e-6))))
    dispatch: list[float] = []
    blocked: list[float] = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        warm = call(*args, **kwargs)
        t1 = time.perf_counter()
        jax.block_until_ready(warm)
        t2 = time.perf_counter()
        dispatch.append(t1 - t0)
        blocked.append(t2 - t0)
    device, platform = output_device(out)
    return ProgramRun(
        device=device,
        platform=platform,
        outputs=output_previews(out),
        dispatch_ms=_ms(statistics.median(dispatch)),
        blocked_ms=_ms(statistics.median(blocked)),
        repeats=repeats,
        ready_after_dispatch=ready,
        values=out,
    )
