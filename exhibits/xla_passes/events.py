"""The xla_passes exhibit's events: XLA's optimizer, pass by pass (design 0029).

``hlo_pass_ran``: one per snapshot XLA dumped while compiling the snippet's ``jax.jit(f)``
(``compiler_options`` ``xla_dump_to`` + ``xla_dump_hlo_pass_re``), in the dump's order: the pass
and its pipeline, whether the module's text changed, its instruction counts and, in the whole
event, the HLO text after the pass and the structural diff from the text before it. A page that
asks for details on demand gets the summary (counts and names) and asks for the text and diff of
the pass it shows.

``llvm_ir_dumped``: one per kernel the CPU backend wrote LLVM IR for (before and after LLVM's
optimisation); summarised to its sizes.

``xla_dump_read``: last, once: the module's name, the totals, the fusions of the final module
with the pass that created each, whether the last snapshot is ``Compiled.as_text()``, and the
stage times.

Imports only pydantic and ``jaxscope.protocol``.
"""

from __future__ import annotations

from typing import Literal, Self

from jaxscope.exhibit_api import EventBase, WireModel


class HloPassRan(EventBase):
    """The module after one pass, as XLA dumped it.

    ``index`` is the snapshot's place in the dump (0-based; the dump's own sequence number is
    ``dump_seq``), ``pipeline`` the pass pipeline it ran in (``simplification``), ``pass_name``
    XLA's name of the pass (``algsimp``; ``pipeline-start`` for the snapshot a pipeline takes
    before its first pass), ``occurrence`` which run of that pass name this is (1-based: ``algsimp``
    runs in several pipelines and iterations; ``--print pass algsimp#3``). ``changed``: whether
    the module's text differs from the snapshot before (the first: from the module XLA received,
    its ``before_optimizations`` dump). ``instruction_count``: instructions in the text, fused
    computations included; ``appeared_count``/``vanished_count``/``rewritten_count``: the sizes
    of the diff's lists; ``fusions_created``: the names of the ``fusion`` instructions that
    appeared.

    Whole event only (a page asks for it; ``--json`` and the CLI get it): ``hlo_text``, the text
    after the pass (None when unchanged, except in the first snapshot: it is then the text of
    the last snapshot before it that carries one), and ``diff``, ``difflib.unified_diff`` of the
    text before and this one (2 lines of context, no file header). The instructions that
    appeared (a new name), vanished (a name gone) and were rewritten (same name, another line)
    are the names on the diff's ``+`` and ``-`` lines; their counts are above. The lists are not
    sent as well: on the 12-layer GPT stack they took a third of the ``fusion`` pass's 1.1 MB."""

    type: Literal["hlo_pass_ran"] = "hlo_pass_ran"
    index: int
    dump_seq: int
    pipeline: str
    pass_name: str
    occurrence: int
    changed: bool
    instruction_count: int
    appeared_count: int = 0
    vanished_count: int = 0
    rewritten_count: int = 0
    fusions_created: list[str] = []
    text_bytes: int
    hlo_text: str | None = None
    diff: list[str] = []
    # True in a summary: the text and the lists above are left out (details on demand).
    deferred: bool = False

    def summarised(self) -> Self | None:
        """The pass without its text and diff (their sizes and counts stay)."""
        if self.hlo_text is None and not self.diff:
            return None
        return self.model_copy(update={"hlo_text": None, "diff": [], "deferred": True})


class LlvmIrDumped(EventBase):
    """The LLVM IR the CPU backend wrote for one kernel (``kernel``: the file's name between the
    module's name and ``.ir-``, ``add_tanh_fusion_kernel_module``): ``no_opt`` as XLA emitted
    it, ``with_opt`` after LLVM's optimisation (``*.ir-no-opt.ll`` / ``*.ir-with-opt.ll``);
    ``fusion`` the fusion instruction of the final module it is the kernel of, where its name is
    that fusion's name with ``_kernel_module`` (XLA CPU's naming), else None. A summary leaves
    the texts out (``deferred``) and keeps their sizes."""

    type: Literal["llvm_ir_dumped"] = "llvm_ir_dumped"
    kernel: str
    fusion: str | None
    no_opt_bytes: int
    with_opt_bytes: int
    no_opt: str | None = None
    with_opt: str | None = None
    deferred: bool = False

    def summarised(self) -> Self | None:
        """The kernel without its two texts."""
        return self.model_copy(update={"no_opt": None, "with_opt": None, "deferred": True})


class FusionCreated(WireModel):
    """A ``fusion`` instruction of the final module (``Compiled.as_text()``): ``kind``
    (``kLoop``, ``kInput``, ``kOutput``, ``kCustom``), the computation it ``calls``, the opcodes
    fused into it (parameters left out), and the pass that created it: the first snapshot in
    which a fusion instruction of that name appears (``pass_index``, ``pass_name``,
    ``pipeline``)."""

    name: str
    kind: str
    calls: str
    fused_opcodes: list[str]
    pass_index: int
    pass_name: str
    pipeline: str


class XlaDumpRead(EventBase):
    """The dump as a whole. ``module``: the HLO module's name (``jit_f``); ``backend``:
    ``jax.default_backend()``; ``dump_pass_re``: the ``xla_dump_hlo_pass_re`` compiled with
    (``.+``: every pass, changed or not; XLA leaves out the unchanged ones for exactly ``.*``);
    ``pass_count``/``changed_count``: snapshots and those whose text changed;
    ``dump_bytes``: the size of every file XLA wrote; ``fusions``: the final module's fusions;
    ``last_is_compiled``: whether the last snapshot is ``Compiled.as_text()`` of the same
    compile (up to the key order of ``backend_config`` JSON, which the dump prints from the
    proto); ``llvm_ir_note``: why there is no LLVM IR, where there is none;
    ``compile_s``: ``Lowered.compile`` with the dump options; ``read_s``: reading the files and
    diffing the snapshots."""

    type: Literal["xla_dump_read"] = "xla_dump_read"
    module: str
    backend: str
    dump_pass_re: str
    pass_count: int
    changed_count: int
    dump_bytes: int
    fusions: list[FusionCreated]
    last_is_compiled: bool
    llvm_ir_note: str | None
    compile_s: float
    read_s: float


# This exhibit's events (checked: every event class defined here must be listed, see
# ``jaxscope.events``).
EVENTS: tuple[type[EventBase], ...] = (HloPassRan, LlvmIrDumped, XlaDumpRead)
