"""A ``pallas_call`` lowered for a TPU through Mosaic, read back from what JAX produces.

For platform ``tpu`` Pallas lowers each ``pallas_call`` eqn (``interpret=False``) to a Mosaic
MLIR module (``jax._src.pallas.mosaic.lowering``) and JAX stages it as one
``stablehlo.custom_call @tpu_custom_call`` whose ``backend_config`` is JSON:
``custom_call_config.body`` is the module serialized as MLIR bytecode (base64) after Mosaic's
``mosaic-serde{serialize=true}`` pass (``jax._src.tpu_custom_call._lower_mosaic_module_to_asm``,
JAX 0.10.2). :func:`mosaic_kernels` reverses that: parses the bytecode in a context with the
``tpu`` dialect, runs ``mosaic-serde{serialize=false}`` (what
``CustomCallBackendConfig.downgrade_lowered_module_asm`` runs first) and prints it.

The kernel's ``func.func`` carries the grid (``iteration_bounds``), ``dimension_semantics`` and one
``window_params`` entry per operand (``window_bounds``: the block shape; ``transform_indices``:
the index map as a function); its arguments are the grid indices, then one ``memref`` per operand
in its memory space (``#tpu.memory_space<vmem>``, ``smem``, ``any``). Each op's location is the
kernel jaxpr eqn it came from: ``"<prim>:"("<prim>/<prim>"(...("file":line:col)))``.

:func:`compiled_fun` is the snippet's program with every ``pallas_call`` eqn's ``interpret``
turned off, as ``jax.core.eval_jaxpr`` of its jaxpr: what the kernel's author would run on a TPU
(or turned on: what runs on a CPU).
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import jax
from jax._src import core
from jax._src.interpreters import mlir
from jax._src.lib import tpu
from jaxlib.mlir import ir
from jaxlib.mlir.passmanager import PassManager

from jaxscope.snippet_model import SNIPPET_FILENAME


def _interpret_set(jaxpr: core.Jaxpr, interpret: bool) -> core.Jaxpr:
    eqns = []
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "pallas_call":
            eqn = eqn.replace(params={**eqn.params, "interpret": interpret})
        else:
            params = {k: _in_param(v, interpret) for k, v in eqn.params.items()}
            if any(params[k] is not eqn.params[k] for k in params):
                eqn = eqn.replace(params=params)
        eqns.append(eqn)
    out: core.Jaxpr = jaxpr.replace(eqns=eqns)
    return out


def _in_param(value: Any, interpret: bool) -> Any:
    if isinstance(value, core.ClosedJaxpr):
        inner = _interpret_set(value.jaxpr, interpret)
        return value if inner is value.jaxpr else core.ClosedJaxpr(inner, value.consts)
    if isinstance(value, core.Jaxpr):
        return _interpret_set(value, interpret)
    if isinstance(value, tuple) and any(
        isinstance(v, (core.Jaxpr, core.ClosedJaxpr)) for v in value
    ):
        return tuple(_in_param(v, interpret) for v in value)
    return value


def compiled_fun(
    closed: core.ClosedJaxpr, interpret: bool = False
) -> tuple[Callable[..., Any], list[Any]]:
    """``closed`` (``jax.make_jaxpr(f)(*args)``) with every ``pallas_call`` eqn, also inside a
    ``jit`` body or a loop, set to ``interpret`` (False: compiled for the TPU; True: Pallas's
    interpreter): a function of the jaxpr's flat inputs (``jax.core.eval_jaxpr``, which keeps
    each eqn's source line) and those inputs' avals."""
    jaxpr = _interpret_set(closed.jaxpr, interpret)

    def fun(*flat: Any) -> Any:
        return core.eval_jaxpr(jaxpr, closed.consts, *flat)

    return fun, list(closed.in_avals)


@dataclass(frozen=True)
class MosaicOp:
    """One op of the kernel's body: its MLIR name (``tpu.matmul``), the kernel jaxpr primitive
    it came from (``dot_general``; ``None`` for the ops Mosaic adds) and the snippet line."""

    name: str
    primitive: str | None
    line: int | None


@dataclass(frozen=True)
class MosaicWindow:
    """One operand of the kernel: its block shape (``window_bounds``; ``None`` for a whole array
    in ``ANY``), the memref type the kernel sees and its memory space (``vmem``, ``smem``,
    ``any``, ``semaphore_mem``)."""

    block: tuple[int, ...] | None
    memref: str
    memory_space: str


@dataclass(frozen=True)
class MosaicKernel:
    """One ``tpu_custom_call`` of a program lowered for the TPU: the kernel function's name,
    its grid and dimension semantics, its operands (``windows``, in the kernel's order:
    scalar prefetch, inputs, outputs, scratch), the ops with their lines, the module's text
    (``text``, without locations) and the ``backend_config`` fields beside the body."""

    name: str
    grid: tuple[int, ...]
    dimension_semantics: tuple[str, ...]
    windows: tuple[MosaicWindow, ...]
    ops: tuple[MosaicOp, ...]
    text: str
    config: dict[str, Any]
    call_line: int | None


_SNIPPET_LOC = re.compile(rf'"{re.escape(SNIPPET_FILENAME)}":(\d+):')
_PRIMITIVE = re.compile(r'^loc\("([A-Za-z_0-9]+):"')
_SPACE = re.compile(r"#tpu\.memory_space<(\w+)>")
_SEMANTICS = re.compile(r"#tpu\.dimension_semantics<(\w+)>")


def _line(loc: str) -> int | None:
    found = _SNIPPET_LOC.findall(loc)
    return int(found[-1]) if found else None


def _custom_calls(op: ir.Operation) -> Iterator[ir.Operation]:
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                o = inner.operation
                if o.name == "stablehlo.custom_call":
                    target = ir.StringAttr(o.attributes["call_target_name"]).value
                    if target == "tpu_custom_call":
                        yield o
                yield from _custom_calls(o)


def _walk_ops(op: ir.Operation) -> Iterator[ir.Operation]:
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                yield inner.operation
                yield from _walk_ops(inner.operation)


def _kernel(call: ir.Operation) -> MosaicKernel:
    config = json.loads(ir.StringAttr(call.attributes["backend_config"]).value)
    custom = config["custom_call_config"]
    body = base64.b64decode(custom["body"])
    ctx = mlir.make_ir_context()
    tpu.register_dialect(ctx)
    with ctx, ir.Location.unknown():
        ctx.allow_unregistered_dialects = True
        module = ir.Module.parse(body)
        PassManager.parse("builtin.module(mosaic-serde{serialize=false})").run(module.operation)
        text = str(module.operation.get_asm(enable_debug_info=False))
        funcs = [op.operation for op in module.body.operations]
        main = next(
            f
            for f in funcs
            if "window_params" in f.attributes or "iteration_bounds" in f.attributes
        )
        attrs = main.attributes
        grid = tuple(int(b) for b in ir.DenseI64ArrayAttr(attrs["iteration_bounds"]))
        semantics = tuple(_SEMANTICS.findall(str(attrs["dimension_semantics"])))
        params: Any = ir.ArrayAttr(attrs["window_params"]) if "window_params" in attrs else []
        bounds: list[tuple[int, ...] | None] = []
        for p in params:
            d = ir.DictAttr(p)
            bounds.append(
                tuple(int(b) for b in ir.DenseI64ArrayAttr(d["window_bounds"]))
                if "window_bounds" in d
                else None
            )
        arg_types = [
            str(t) for t in ir.FunctionType(ir.TypeAttr(attrs["function_type"]).value).inputs
        ]
        memrefs = [t for t in arg_types if t.startswith("memref")]
        windows = []
        for k, t in enumerate(memrefs):
            space = _SPACE.search(t)
            windows.append(
                MosaicWindow(
                    block=bounds[k] if k < len(bounds) else None,
                    memref=t,
                    memory_space=space.group(1) if space else "any",
                )
            )
        ops = []
        for o in _walk_ops(main):
            loc = str(o.location)
            prim = _PRIMITIVE.match(loc)
            ops.append(MosaicOp(o.name, prim.group(1) if prim else None, _line(loc)))
        name = ir.StringAttr(main.attributes["sym_name"]).value
    return MosaicKernel(
        name=name,
        grid=grid,
        dimension_semantics=semantics,
        windows=tuple(windows),
        ops=tuple(ops),
        text=text,
        config={k: v for k, v in custom.items() if k != "body"},
        call_line=_line(str(call.location)),
    )


def mosaic_kernels(lowered: Any) -> list[MosaicKernel]:
    """Every ``tpu_custom_call`` in ``lowered`` (a ``jax.stages.Lowered`` for platform ``tpu``),
    in program order, read back into a :class:`MosaicKernel`."""
    module = lowered.compiler_ir("stablehlo")
    return [_kernel(call) for call in _custom_calls(module.operation)]


def index_map_line(index_map: core.ClosedJaxpr) -> int | None:
    """The snippet line of a BlockSpec's index map (the lambda's ``def``), from the index map
    jaxpr's debug info (``<lambda> at <snippet>:19``), or ``None``."""
    info = index_map.jaxpr.debug_info
    src = info.func_src_info if info is not None else None
    if not src:
        return None
    m = re.search(rf"{re.escape(SNIPPET_FILENAME)}:(\d+)", src)
    return int(m.group(1)) if m else None


_ = jax  # JAX is imported for its lowering rules (pallas's tpu lowering registers on import)
