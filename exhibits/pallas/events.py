"""The pallas exhibit's events: a Pallas kernel in interpret mode, block by block.

``pallas_call_found``: one ``pl.pallas_call`` in the snippet's ``f`` (one eqn of
``jax.make_jaxpr(f)``): its grid, each operand's BlockSpec (block shape, index map), the kernel's
jaxpr, and, for every program instance (grid point), the block each index map returns and the
element ranges it covers; plus what the index maps say about the outputs: blocks written by more
than one program instance, elements no instance writes.

``pallas_output_compared``: ``f(*args)`` run (the kernel interpreted on the CPU) against the
snippet's ``reference(*args)``.

Imports only pydantic and ``jaxscope.protocol``.
"""

from __future__ import annotations

from typing import Literal

from jaxscope.exhibit_api import AvalView, EventBase, JaxprView, SourceLoc, WireModel


class PallasBlockDim(WireModel):
    """One dimension of a BlockSpec's block. ``kind``: ``blocked`` (block index ``i`` covers
    elements ``[i*size, (i+1)*size)``), ``squeezed`` (``None`` in the BlockSpec: one element,
    the dimension absent from the kernel's ref), ``element`` (``pl.Element(size)``: the index
    map returns the element offset), ``other`` (a window the index map returns as a slice; not
    evaluated). ``text``: JAX's own text of it (``Blocked(4)``)."""

    kind: Literal["blocked", "squeezed", "element", "other"]
    size: int
    text: str


class PallasOperand(WireModel):
    """One input or output of the call as its BlockSpec maps it. ``role``/``index``: the
    ``index``-th input (``in_specs[index]``) or output (``out_specs``). ``name``: the kernel's
    parameter name (``x_ref``). ``origin``: JAX's name for it (``args[0]``, ``outputs``).
    ``aval``: the whole array. ``block``: one dimension per array dimension. ``index_map``: the
    index map's jaxpr, as JAX traced it (grid indices in, one block index per dimension out)."""

    role: Literal["input", "output"]
    index: int
    name: str | None
    origin: str
    aval: AvalView
    block: list[PallasBlockDim]
    index_map: JaxprView


class PallasProgram(WireModel):
    """One program instance (grid point) ``program_id`` (what ``pl.program_id(axis)`` returns
    in it): for each operand, in ``operands`` order, the block indices its index map returns
    (``blocks``) and the element range ``[start, stop)`` per array dimension that block covers,
    clipped to the array (``ranges``; a partial last block is shorter)."""

    program_id: list[int]
    blocks: list[list[int]]
    ranges: list[list[list[int]]]


class PallasRevisit(WireModel):
    """An output block that more than one program instance writes: ``output`` (its index among
    the outputs), ``block`` (its block indices), ``program_ids`` (the writers, in grid order) and
    ``axes`` (the grid axes along which the writers' program ids differ)."""

    output: int
    block: list[int]
    program_ids: list[list[int]]
    axes: list[int]


class PallasCallFinding(WireModel):
    """A wrong result the index maps make certain. ``kind``: ``race`` (writers of one output
    block differ along a grid axis the call declares ``parallel``), ``overwrite`` (otherwise,
    when the kernel writes the output without reading it, so each writer replaces the previous
    one's block), ``unwritten`` (output elements no program instance writes),
    ``out_of_bounds`` (an index map returns a block that starts past the array's end),
    ``revisited_later`` (a kernel that may read the output block it writes comes back to it
    after other blocks: its buffer is then undefined, ``pl.RevisitMode``).
    ``operand``: the operand's index in ``operands`` (inputs, then outputs). ``message``: what
    the finding says, in words."""

    kind: Literal["race", "overwrite", "unwritten", "out_of_bounds", "revisited_later"]
    operand: int
    message: str


class PallasCallFound(EventBase):
    """One ``pallas_call`` eqn of ``jax.make_jaxpr(f)(*args)``, in program order (``index``).

    ``grid``: the grid (``None`` for a dynamic one). ``dimension_semantics``: the compiler
    params' (``pltpu.CompilerParams(dimension_semantics=...)``), one per grid axis, ``None`` when
    none given. ``interpret``: the call's ``interpret`` param. ``kernel_name``: the kernel
    function as JAX recorded it (``matmul_kernel at snippet.py:14``). ``kernel_jaxpr``: the
    kernel's jaxpr (``eqn.params['jaxpr']``), ``text`` is ``str`` of it. ``operands``: the
    inputs, then the outputs. ``programs``: every grid point in the order interpret mode runs
    them (row-major, the last axis fastest), the first ``MAX_PROGRAMS``; ``programs_left_out``
    the rest. ``not_evaluated``: why the index maps were not evaluated (scalar prefetch, a
    dynamic grid, a sliced block dimension), else ``None``. ``revisits``: the output blocks
    written by more than one program instance (over the whole grid). ``unwritten``: per output,
    the number of its elements no program instance writes. ``output_written``/``output_read``:
    per output, whether the kernel's top level writes its ref, and whether the kernel may read
    it (accumulation). ``findings``/``notes``: what the exhibit concludes from them.
    ``source``: the user's line of the call; ``within``: the calls it sits in (``jit(f)``)."""

    type: Literal["pallas_call_found"] = "pallas_call_found"
    index: int
    source: SourceLoc | None
    within: list[str]
    grid: list[int] | None
    dimension_semantics: list[str] | None
    interpret: bool
    kernel_name: str | None
    kernel_jaxpr: JaxprView
    operands: list[PallasOperand]
    programs: list[PallasProgram]
    programs_left_out: int = 0
    not_evaluated: str | None = None
    revisits: list[PallasRevisit]
    unwritten: list[int]
    output_written: list[bool]
    output_read: list[bool]
    findings: list[PallasCallFinding]
    notes: list[str]


class PallasOutput(WireModel):
    """One output leaf of ``f(*args)`` (``path``: ``out``, ``out[1]``) against the reference's
    leaf: ``max_abs_diff`` (``None``: no reference, a shape mismatch, or NaN/Inf on one side
    only), ``allclose`` (every element within the dtype's tolerance scaled by
    ``max(1, |reference|)``, ``jaxscope.finite_diff.compare``; ``None`` without a reference),
    ``first_diff_*`` the first element past it (row-major)."""

    path: str
    aval: AvalView
    preview: str
    reference_preview: str | None
    max_abs_diff: float | None
    allclose: bool | None
    tolerance: float | None
    first_diff_index: list[int] | None = None
    first_diff_got: float | None = None
    first_diff_want: float | None = None


class PallasOutputCompared(EventBase):
    """``f(*args)`` (the kernel run by Pallas's interpreter on the CPU) against
    ``reference(*args)`` when the snippet defines ``reference`` (``reference: "reference"``),
    else ``"none"`` with ``reference_note`` saying why; ``reference_line``: the snippet line
    that defines ``reference``."""

    type: Literal["pallas_output_compared"] = "pallas_output_compared"
    outputs: list[PallasOutput]
    reference: Literal["reference", "none"]
    reference_note: str | None
    reference_line: int | None


class MosaicWindowView(WireModel):
    """One operand of a kernel lowered through Mosaic, in the kernel's order (scalar prefetch,
    inputs, outputs, scratch): ``block`` (the ``window_bounds`` Mosaic got; ``None`` for a whole
    array left in place), the ``memref`` type the kernel body sees and its ``memory_space``
    (``vmem``, ``smem``, ``any``, ``semaphore_mem``)."""

    block: list[int] | None
    memref: str
    memory_space: str


class MosaicOpView(WireModel):
    """One op of the Mosaic kernel's body (``tpu.matmul``), the kernel jaxpr primitive it was
    lowered from (``dot_general``; ``None`` for an op Mosaic adds, ``func.return``) and its
    snippet line."""

    name: str
    primitive: str | None
    line: int | None


class PallasMosaicLowered(EventBase):
    """With option ``target`` "tpu-v5e": the ``index``-th ``pallas_call`` lowered for a TPU v5e
    through Mosaic, ``interpret`` turned off, offline (libtpu, no chip; design 0073).

    ``kernel``: the kernel function's name in the module; ``grid``/``dimension_semantics``: the
    kernel's ``iteration_bounds`` and semantics as Mosaic got them; ``windows``: its operands;
    ``ops``: its body, op by op, each linked to the kernel jaxpr's primitive and the user's line;
    ``mosaic``: the Mosaic MLIR module as text (what ``tpu_custom_call``'s ``backend_config``
    carries as bytecode); ``config``: that config's other fields. ``compile_s``: libtpu's compile
    of the whole program (Mosaic's own passes run there). ``error``: JAX's or Mosaic's words when
    the kernel cannot be lowered or compiled for the TPU (a block the TPU cannot tile), then
    ``error_line`` (the BlockSpec's line, else the call's) and ``fix``; the other fields are
    then empty."""

    type: Literal["pallas_mosaic_lowered"] = "pallas_mosaic_lowered"
    index: int
    target: str
    kernel: str | None
    grid: list[int]
    dimension_semantics: list[str]
    windows: list[MosaicWindowView]
    ops: list[MosaicOpView]
    mosaic: str
    config: dict[str, str]
    compile_s: float | None
    error: str | None = None
    error_stage: Literal["lower", "compile"] | None = None
    error_line: int | None = None
    fix: str | None = None


EVENTS: tuple[type[EventBase], ...] = (PallasCallFound, PallasOutputCompared, PallasMosaicLowered)
