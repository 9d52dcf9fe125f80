"""The pallas exhibit with option ``target`` "tpu-v5e": each ``pallas_call`` lowered for a TPU v5e
through Mosaic, offline (design 0073).

Runs only in a "tpu_compile" worker (libtpu loaded, the CPU the default backend; design 0067).
The snippet's program, its ``pallas_call``s' ``interpret`` turned off (what its author would run
on a TPU), is lowered with ``lowering_platforms=("tpu",)`` on abstract arguments placed on one
chip of libtpu's offline topology, and compiled by libtpu: JAX's Pallas TPU lowering makes each
kernel's Mosaic module, libtpu's compile runs Mosaic's own passes. Nothing runs on a chip.

A block the TPU cannot tile fails in JAX's lowering (``ValueError``: "... Block spec for args[0]
in pallas_call ..."): that error is the event's, blamed at the BlockSpec's line (its index map's
lambda), with the block shape that would tile.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from typing import Any

import jax
from jaxscope.exhibit_api import (
    FoundPallasCall,
    exception_text,
    pallas_compiled_fun,
    pallas_index_map_line,
    pallas_mosaic_kernels,
)

from exhibits.stations import tpu_target

from .events import MosaicOpView, MosaicWindowView, PallasMosaicLowered

# Pallas's TPU lowering: the last two block dimensions divisible by 8 and 128, or the array's.
TILE = (8, 128)
_BLOCK_SPEC_FOR = re.compile(r"Block spec for (\S+) in pallas_call")


def tiled_block(block: Sequence[int], shape: Sequence[int]) -> list[int] | None:
    """``block`` with each of its last two sizes that the TPU cannot tile (neither a multiple of
    8 and 128 nor the array's whole dimension) raised to the next multiple, at most the array's
    dimension; ``None`` when nothing needs to change."""
    out = list(block)
    changed = False
    for d, tile in zip(range(len(block) - 2, len(block)), TILE, strict=True):
        if d < 0:
            continue
        if out[d] % tile and out[d] != shape[d]:
            out[d] = min(shape[d], -(-out[d] // tile) * tile)
            changed = True
    return out if changed else None


def _blame(message: str, call: FoundPallasCall) -> tuple[int | None, str | None]:
    """The snippet line and the fix for a lowering error that names an operand's BlockSpec."""
    m = _BLOCK_SPEC_FOR.search(message)
    op = next((o for o in call.operands if m and o.origin == m.group(1)), None)
    line = call.source.line if call.source else None
    if op is None:
        return line, None
    line = pallas_index_map_line(op.index_map) or line
    block = [d.size for d in op.block]
    better = tiled_block(block, op.shape)
    if better is None:
        return line, None
    return line, (
        f"give {op.name or op.origin}'s BlockSpec a block whose last two dimensions are "
        f"multiples of {TILE[0]} and {TILE[1]} or the array's own ({tuple(op.shape)}): "
        f"{tuple(better)} instead of {tuple(block)} (the grid then needs fewer steps along those "
        "dimensions); or keep interpret=True, which runs any block on the CPU"
    )


def lowered_events(calls: Sequence[FoundPallasCall], closed: Any) -> list[PallasMosaicLowered]:
    """One ``pallas_mosaic_lowered`` per call of ``closed`` (``jax.make_jaxpr(f)(*args)``)."""
    device = tpu_target.tpu_device()
    fun, avals = pallas_compiled_fun(closed)
    sharding = jax.sharding.SingleDeviceSharding(device)
    placed = [tpu_target.placed_aval(a, sharding) for a in avals]
    target = f"tpu ({tpu_target.NAME}, {tpu_target.TOPOLOGY} offline, Mosaic)"
    empty: dict[str, Any] = {
        "target": target,
        "kernel": None,
        "grid": [],
        "dimension_semantics": [],
        "windows": [],
        "ops": [],
        "mosaic": "",
        "config": {},
        "compile_s": None,
    }
    try:
        lowered = jax.jit(fun).trace(*placed).lower(lowering_platforms=tpu_target.PLATFORMS)
    except Exception as exc:  # JAX's Pallas TPU lowering: the user's BlockSpec, in JAX's words
        text = exception_text(exc)
        # the call whose kernel the message names (else the first)
        call = next(
            (c for c in calls if c.kernel_name and c.kernel_name.split(" at ")[0] in text),
            calls[0],
        )
        line, fix = _blame(text, call)
        return [
            PallasMosaicLowered(
                index=calls.index(call),
                error=text,
                error_stage="lower",
                error_line=line,
                fix=fix,
                **empty,
            )
        ]
    kernels = pallas_mosaic_kernels(lowered)
    start = time.perf_counter()
    error: str | None = None
    try:
        lowered.compile()
    except Exception as exc:  # libtpu's Mosaic passes
        error = exception_text(exc)
    compile_s = round(time.perf_counter() - start, 4)
    events = []
    for index, k in enumerate(kernels):
        events.append(
            PallasMosaicLowered(
                index=index,
                target=target,
                kernel=k.name,
                grid=list(k.grid),
                dimension_semantics=list(k.dimension_semantics),
                windows=[
                    MosaicWindowView(
                        block=list(w.block) if w.block is not None else None,
                        memref=w.memref,
                        memory_space=w.memory_space,
                    )
                    for w in k.windows
                ],
                ops=[MosaicOpView(name=o.name, primitive=o.primitive, line=o.line) for o in k.ops],
                mosaic=k.text,
                config={key: str(v) for key, v in k.config.items()},
                compile_s=compile_s,
                error=error,
                error_stage="compile" if error else None,
                error_line=k.call_line if error else None,
            )
        )
    return events
