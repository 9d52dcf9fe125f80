"""The ``pallas_call`` eqns inside a user's ``f``: the grid, each BlockSpec's index map, the kernel.

``jax.make_jaxpr(f)`` stages each ``pl.pallas_call(kernel, grid=..., in_specs=..., out_specs=...)``
as one ``pallas_call`` eqn (``jax._src.pallas.pallas_call``, JAX 0.10.2). Its params hold what
the call was given, canonicalized:

- ``jaxpr``: the kernel as a ``core.Jaxpr`` whose invars are ``Ref``s, in the order
  ``*scalar_prefetch, *inputs, *outputs, *scratch`` (``jaxpr.debug_info.arg_names`` are the
  kernel's parameter names, ``x_ref``);
- ``grid_mapping`` (``pallas.core.GridMapping``): ``grid`` (a tuple of ints, or a dynamic
  bound), ``num_index_operands`` (scalar prefetch), ``num_inputs``/``num_outputs``,
  ``num_scratch_operands``, ``num_dynamic_grid_bounds``, ``vmapped_dims`` and
  ``block_mappings`` (inputs, then outputs), each a ``pallas.core.BlockMapping`` with
  ``block_shape`` (one ``Blocked(n)``/``Squeezed()``/``Element(n)``/... per array dimension),
  ``index_map_jaxpr`` (a ``ClosedJaxpr`` from the grid indices, ``int32[]`` each, then the
  scalar-prefetch refs, to one block index per dimension), ``array_aval`` and ``origin``;
- ``compiler_params``: the backend's params, e.g. ``pltpu.CompilerParams`` whose
  ``dimension_semantics`` says which grid axes are ``parallel``; ``interpret``.

:func:`find_pallas_calls` reads them into :class:`FoundPallasCall` (plain data: ints, strings,
the index map jaxprs); :func:`block_indices` evaluates an index map on many grid points at once
(``jax.vmap`` of ``jax.extend.core.jaxpr_as_fun``, what interpret mode's
``BlockMapping.compute_start_indices_interpret`` calls one point at a time).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

import jax
import jax.extend
import numpy as np
from jax._src import core
from jax._src.pallas import core as pallas_core

from jaxscope.internals.views import jaxpr_view, print_with_context, snippet_source
from jaxscope.protocol import JaxprView, SourceLoc

# How one array dimension is cut into blocks: ``blocked`` (block index i covers elements
# [i*size, (i+1)*size)), ``squeezed`` (``None`` in the BlockSpec: the index is the element and
# the kernel sees no such dimension), ``element`` (``pl.Element(size)``: the index map returns
# the element offset itself), ``other`` (a bounded slice or an indirect dimension, whose window
# the index map returns as a slice: not evaluated here).
BlockKind = Literal["blocked", "squeezed", "element", "other"]


@dataclass(frozen=True)
class BlockDim:
    """One dimension of a BlockSpec's block: its kind, its size (1 for ``squeezed``) and JAX's
    own text of it (``Blocked(4)``, ``Squeezed()``)."""

    kind: BlockKind
    size: int
    text: str


@dataclass(frozen=True)
class PallasOperand:
    """One input or output of a ``pallas_call`` as its BlockSpec maps it.

    ``role``/``index``: the ``index``-th input or output. ``name``: the kernel's parameter name
    (``x_ref``; ``None`` when JAX recorded none). ``origin``: JAX's own name of the operand
    (``BlockMapping.origin``: ``args[0]``, ``outputs``). ``shape``/``dtype``/``aval``: the whole
    array (``array_aval``). ``block``: one :class:`BlockDim` per array dimension. ``index_map``: the
    index map as JAX traced it, grid indices (``int32[]`` each) then scalar-prefetch refs in,
    one block index per dimension out."""

    role: Literal["input", "output"]
    index: int
    name: str | None
    origin: str
    shape: tuple[int, ...]
    dtype: str
    aval: core.ShapedArray
    block: tuple[BlockDim, ...]
    index_map: core.ClosedJaxpr
    # ``pipeline_mode=pl.Buffered(..., revisit=pl.RevisitMode.ANY)``: an output block may be
    # revisited on any later grid point (by default only on the next one, ``RevisitMode``)
    revisit_any: bool = False


@dataclass(frozen=True)
class FoundPallasCall:
    """One ``pallas_call`` eqn of ``f``'s jaxpr.

    ``grid``: the grid (``None``: a dynamic bound, known only at run time). ``operands``: the
    inputs, then the outputs. ``kernel``: the kernel's jaxpr (``params['jaxpr']``, invars the
    refs ``*scalar_prefetch, *inputs, *outputs, *scratch``); ``kernel_name`` the kernel
    function's name as JAX recorded it (``kernel at file:line``). ``dimension_semantics``: the
    compiler params' ``dimension_semantics`` as strings (``"parallel"``, ``"arbitrary"``), one
    per grid axis; ``None`` when the call gave none. ``num_index_operands``: scalar-prefetch
    operands (the index maps read them); ``num_scratch_operands``. ``aliased_outputs``: the
    outputs ``input_output_aliases`` gives an input's buffer. ``source``: the user's line
    of the call; ``within``: the calls it sits in as JAX names them (``("jit(f)",)``)."""

    eqn: core.JaxprEqn
    source: SourceLoc | None
    within: tuple[str, ...]
    grid: tuple[int, ...] | None
    operands: tuple[PallasOperand, ...]
    kernel: core.Jaxpr
    kernel_name: str | None
    dimension_semantics: tuple[str, ...] | None
    num_index_operands: int
    num_scratch_operands: int
    interpret: bool
    aliased_outputs: tuple[int, ...]

    @property
    def kernel_closed(self) -> core.ClosedJaxpr:
        """The kernel as a ``ClosedJaxpr`` (no consts): its text is ``str(kernel)``."""
        return core.ClosedJaxpr(self.kernel, ())

    def output_refs(self) -> list[core.Var]:
        """The kernel's invars that are the output refs, in order."""
        start = self.num_index_operands + sum(op.role == "input" for op in self.operands)
        n = sum(op.role == "output" for op in self.operands)
        return list(self.kernel.invars[start : start + n])


def _block_dim(dim: Any) -> BlockDim:
    if isinstance(dim, pallas_core.Blocked):
        return BlockDim("blocked", int(dim.block_size), str(dim))
    if isinstance(dim, pallas_core.Squeezed):
        return BlockDim("squeezed", 1, str(dim))
    if isinstance(dim, pallas_core.Element) and dim.padding == (0, 0):
        return BlockDim("element", int(dim.block_size), str(dim))
    return BlockDim("other", int(getattr(dim, "block_size", 0)), str(dim))


def _semantics(params: Any) -> tuple[str, ...] | None:
    sem = getattr(params, "dimension_semantics", None)
    if sem is None:
        return None
    # pltpu takes strings or its GridDimensionSemantics enum (whose value is the string)
    return tuple(str(getattr(s, "value", s)).lower() for s in sem)


def _call_name(eqn: core.JaxprEqn) -> str:
    name = eqn.params.get("name")
    return f"{eqn.primitive.name}({name})" if name else eqn.primitive.name


def _found(
    eqn: core.JaxprEqn, source: SourceLoc | None, within: tuple[str, ...]
) -> FoundPallasCall:
    gm = eqn.params["grid_mapping"]
    kernel: core.Jaxpr = eqn.params["jaxpr"]
    info = kernel.debug_info
    names = list(info.arg_names) if info is not None and info.arg_names is not None else []
    n_in = gm.num_inputs
    operands = []
    for k, bm in enumerate(gm.block_mappings):
        role: Literal["input", "output"] = "input" if k < n_in else "output"
        position = gm.num_index_operands + k
        operands.append(
            PallasOperand(
                role=role,
                index=k if k < n_in else k - n_in,
                name=names[position] if position < len(names) else None,
                origin=str(bm.origin),
                shape=tuple(int(d) for d in bm.array_aval.shape),
                dtype=str(bm.array_aval.dtype),
                aval=bm.array_aval,
                block=tuple(_block_dim(d) for d in bm.block_shape),
                index_map=bm.index_map_jaxpr,
                revisit_any=getattr(bm.pipeline_mode, "revisit", None)
                == pallas_core.RevisitMode.ANY,
            )
        )
    static = gm.num_dynamic_grid_bounds == 0 and all(isinstance(g, int) for g in gm.grid)
    return FoundPallasCall(
        eqn=eqn,
        source=source,
        within=within,
        grid=tuple(int(g) for g in gm.grid) if static else None,
        operands=tuple(operands),
        kernel=kernel,
        kernel_name=info.func_src_info if info is not None else None,
        dimension_semantics=_semantics(eqn.params.get("compiler_params")),
        num_index_operands=int(gm.num_index_operands),
        num_scratch_operands=int(gm.num_scratch_operands),
        interpret=bool(eqn.params.get("interpret")),
        # input_output_aliases: (operand index, output index) pairs
        aliased_outputs=tuple(int(o) for _, o in eqn.params.get("input_output_aliases", ())),
    )


def _walk(
    jaxpr: core.Jaxpr, within: tuple[str, ...], outer: SourceLoc | None = None
) -> Iterator[FoundPallasCall]:
    for eqn in jaxpr.eqns:
        source = snippet_source(eqn.source_info.traceback) or outer
        if eqn.primitive.name == "pallas_call":
            yield _found(eqn, source, within)
            continue
        for inner in core.jaxprs_in_params(eqn.params):
            yield from _walk(inner, (*within, _call_name(eqn)), source)


def find_pallas_calls(closed: core.ClosedJaxpr) -> list[FoundPallasCall]:
    """Every ``pallas_call`` eqn of ``closed`` (``jax.make_jaxpr(f)(*args)``), in program order,
    looking into the jaxprs held in eqns' params (``jit`` bodies, loop bodies)."""
    return list(_walk(closed.jaxpr, ()))


def block_indices(operand: PallasOperand, program_ids: np.ndarray) -> np.ndarray:
    """The block index per array dimension that ``operand``'s index map returns at each grid
    point: ``program_ids`` ``int32[n, len(grid)]`` in, ``int64[n, ndim]`` out. The index map's
    jaxpr is evaluated once, vmapped over the ``n`` points (an index map reading scalar-prefetch
    operands is not: the caller checks ``num_index_operands == 0``)."""
    fun = jax.extend.core.jaxpr_as_fun(operand.index_map)
    n = program_ids.shape[0]
    columns = [
        jax.numpy.asarray(program_ids[:, a], dtype=jax.numpy.int32)
        for a in range(program_ids.shape[1])
    ]
    outs = jax.vmap(fun)(*columns) if columns else fun()
    # an index map output that does not depend on the grid (a literal 0) comes back unbatched
    return (
        np.stack([np.broadcast_to(np.asarray(o, dtype=np.int64), (n,)) for o in outs], axis=1)
        if outs
        else np.zeros((n, 0), np.int64)
    )


def ref_effects(kernel: core.Jaxpr, ref: core.Var) -> tuple[bool, bool]:
    """``(written unconditionally, maybe read)`` of the kernel's ``ref``: written when a
    top-level ``swap``/``addupdate`` eqn (``o_ref[...] = x``, ``o_ref[...] += x``) writes it;
    maybe read when a top-level ``get``/``addupdate`` reads it or any other eqn (a ``cond`` of
    ``pl.when``, a loop) takes it as an operand, whose body may read it."""
    written = read = False
    for eqn in kernel.eqns:
        if not eqn.invars or not any(v is ref for v in eqn.invars if isinstance(v, core.Var)):
            continue
        name = eqn.primitive.name
        if name in ("swap", "addupdate") and eqn.invars[0] is ref:
            written = True
            read = read or name == "addupdate"
        else:
            read = True
    return written, read


# ``str`` of a kernel's ref effect names the ref as ``Var(id=<address>)`` (``Read<Var(id=...):
# Ref<default>{float32[4]}>``): the address differs from one process to the next.
_VAR_ID = re.compile(r"Var\(id=(\d+)\)")


def kernel_view(call: FoundPallasCall) -> JaxprView:
    """:func:`jaxpr_view` of the kernel (``text == str(call.kernel)``), with each effect's
    ``Var(id=...)`` replaced by the var's name as the text prints it (``Read<a:Ref<...>>``), so
    that a view is the same in every process."""
    view = jaxpr_view(call.kernel_closed)
    _, ctx = print_with_context(call.kernel)
    by_id = {id(v): v for v in call.kernel.invars}

    def name(m: re.Match[str]) -> str:
        v = by_id.get(int(m.group(1)))
        return str(core.pp_var(v, ctx)) if v is not None else "Var"

    def fix(effects: list[str]) -> list[str]:
        return sorted(_VAR_ID.sub(name, e) for e in effects)

    eqns = [e.model_copy(update={"effects": fix(e.effects)}) for e in view.eqns]
    return view.model_copy(update={"effects": fix(view.effects), "eqns": eqns})
