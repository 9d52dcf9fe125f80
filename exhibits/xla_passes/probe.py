"""The xla_passes exhibit's backend half: compile the snippet's ``jax.jit(f)`` once with XLA's
pass-by-pass dump turned on for this compile only, and report every snapshot (design 0029).

``jax.jit(f).lower(*args).compile(compiler_options={"xla_dump_to": DIR,
"xla_dump_hlo_pass_re": ".+"})``: per-compile debug options (no process-wide ``XLA_FLAGS``; the
worker is shared code, pre-warmed). ``DIR`` is a fresh directory in the worker's private
``/tmp`` (a tmpfs that vanishes with the worker), removed once read. Public JAX only.

With option ``target`` "tpu-v5e" (a "tpu_compile" worker, designs 0067 and 0073) the program is
lowered and compiled for one chip of libtpu's offline v5e topology: the passes are the TPU
compiler's own pipeline (layout assignment with tiles, main fusion, memory space assignment...).
"""

from __future__ import annotations

import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import jax
from jaxscope.exhibit_api import ProbeContext, options_as, plan_call

from exhibits.stations import tpu_target
from exhibits.stations.options import StationsOptions

from .dump import fusions as fusions_of
from .dump import instructions as instructions_of
from .dump import read_dump, same_module, structural_diff
from .events import FusionCreated, HloPassRan, LlvmIrDumped, XlaDumpRead

# Every pass is dumped, changed or not: XLA skips the passes that report no change only when the
# regular expression is exactly ".*" (HloPassPipeline::RunPassesInternal), and ".+" matches
# every pass name as ".*" does.
DUMP_PASS_RE = ".+"


def dump_options(directory: str) -> dict[str, Any]:
    """The ``compiler_options`` that make XLA dump the module after every pass into
    ``directory`` (text only: ``xla_dump_hlo_as_text`` is on by default with ``xla_dump_to``)."""
    return {"xla_dump_to": directory, "xla_dump_hlo_pass_re": DUMP_PASS_RE}


def run(ctx: ProbeContext) -> None:
    """Lower ``f`` on ``args``, compile it with the dump on, emit one ``hlo_pass_ran`` per
    snapshot, one ``llvm_ir_dumped`` per kernel, then ``xla_dump_read``."""
    plan = plan_call(ctx.snippet)
    args, kwargs = plan.args, plan.kwargs
    lower_kw: dict[str, Any] = {}
    tpu = options_as(ctx.options, StationsOptions).target == "tpu-v5e"
    if tpu:
        # The TPU compiler's pipeline, offline: libtpu in a "tpu_compile" worker (design 0073)
        device = tpu_target.tpu_device()
        args, kwargs = tpu_target.placed(args, kwargs, set(plan.normalized_argnums()), device)
        lower_kw["lowering_platforms"] = tpu_target.PLATFORMS
    with ctx.stage("lower"):
        traced: Any = plan.jit().trace(*args, **kwargs, **plan.static_kwargs)
        lowered: Any = traced.lower(**lower_kw)
    with tempfile.TemporaryDirectory(prefix="jaxscope-xla-dump-") as directory:
        with ctx.stage("compile"):
            start = time.perf_counter()
            compiled: Any = lowered.compile(compiler_options=dump_options(directory))
            compile_s = time.perf_counter() - start
        start = time.perf_counter()
        dump = read_dump(Path(directory))
        previous = dump.baseline.read_text() if dump.baseline else ""
        previous_ins = instructions_of(previous)
        seen = Counter[str]()
        created: dict[str, int] = {}
        passes: list[HloPassRan] = []
        for index, snap in enumerate(dump.snapshots):
            text = snap.path.read_text()
            seen[snap.pass_name] += 1
            event = HloPassRan(
                index=index,
                dump_seq=snap.seq,
                pipeline=snap.pipeline,
                pass_name=snap.pass_name,
                occurrence=seen[snap.pass_name],
                changed=text != previous,
                instruction_count=len(previous_ins),
                text_bytes=len(text.encode()),
            )
            if event.changed:
                found = instructions_of(text)
                diff = structural_diff(previous, text, previous_ins, found)
                new_fusions = [i.name for i in diff.appeared if i.opcode == "fusion"]
                for name in new_fusions:
                    created.setdefault(name, index)
                event = event.model_copy(
                    update={
                        "instruction_count": len(found),
                        "appeared_count": len(diff.appeared),
                        "vanished_count": len(diff.vanished),
                        "rewritten_count": len(diff.rewritten),
                        "fusions_created": new_fusions,
                        "hlo_text": text,
                        "diff": diff.lines,
                    }
                )
                previous, previous_ins = text, found
            elif index == 0:
                # The first snapshot carries its text even when unchanged: every later unchanged
                # one is the text of a snapshot before it, and this one's is no event's.
                event.hlo_text = text
            passes.append(event)
        kernels = [
            (kernel, {stage: path.read_text() for stage, path in files.items()})
            for kernel, files in dump.llvm_ir.items()
        ]
        read_s = time.perf_counter() - start
    for event in passes:
        ctx.emit(event)
    final = {f.name: f for f in fusions_of(previous_ins)}
    for kernel, texts in kernels:
        no_opt, with_opt = texts.get("no-opt", ""), texts.get("with-opt", "")
        fusion = kernel.removesuffix("_kernel_module")
        ctx.emit(
            LlvmIrDumped(
                kernel=kernel,
                fusion=fusion if fusion in final and fusion != kernel else None,
                no_opt_bytes=len(no_opt.encode()),
                with_opt_bytes=len(with_opt.encode()),
                no_opt=no_opt,
                with_opt=with_opt,
            )
        )
    fusions = []
    for f in final.values():
        at = created.get(f.name)
        by = passes[at] if at is not None else None
        fusions.append(
            FusionCreated(
                name=f.name,
                kind=f.kind,
                calls=f.calls,
                fused_opcodes=list(f.fused_opcodes),
                pass_index=at if at is not None else -1,
                pass_name=by.pass_name if by else "",
                pipeline=by.pipeline if by else "",
            )
        )
    backend = (
        f"tpu ({tpu_target.NAME}, {tpu_target.TOPOLOGY} offline)" if tpu else jax.default_backend()
    )
    ctx.emit(
        XlaDumpRead(
            module=dump.module,
            backend=backend,
            dump_pass_re=DUMP_PASS_RE,
            pass_count=len(passes),
            changed_count=sum(p.changed for p in passes),
            dump_bytes=dump.bytes,
            fusions=fusions,
            last_is_compiled=same_module(previous, compiled.as_text()),
            llvm_ir_note=None
            if kernels
            else f"The {backend} backend wrote no LLVM IR files (*.ir-no-opt.ll, "
            "*.ir-with-opt.ll) for this module.",
            compile_s=round(compile_s, 4),
            read_s=round(read_s, 4),
        )
    )
