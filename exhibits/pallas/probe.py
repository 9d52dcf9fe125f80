"""The pallas exhibit's backend half: find the ``pl.pallas_call``s in the snippet's ``f``, evaluate
each BlockSpec's index map on every grid point, run ``f`` (the kernel interpreted on the CPU)
and compare it with the snippet's ``reference``. With option ``target`` "tpu-v5e" (a
"tpu_compile" worker) each call is also lowered for a TPU v5e through Mosaic (``mosaic``), and
a kernel written for the TPU (``interpret=False``) runs in interpret mode on the CPU.

Snippet contract: ``f`` calls ``pl.pallas_call(kernel, grid=..., in_specs=[pl.BlockSpec(...)],
out_specs=..., out_shape=..., interpret=True)``; ``args``; optionally ``reference``, the jnp
function ``f`` should equal (``reference(*args)``). The calls are read from
``jax.make_jaxpr(f)(*args)`` (each is one ``pallas_call`` eqn; ``jaxscope.internals.api``
reads its params), so a call inside ``jax.jit`` or a helper is found as well.

Runs inside the sandbox worker (``jaxscope.sandbox.probe_api``).
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np
from jaxscope.exhibit_api import (
    FoundPallasCall,
    InvalidSnippet,
    ProbeContext,
    aval_view,
    blame_line,
    block_until_ready,
    explain,
    find_pallas_calls,
    jaxpr_view,
    options_as,
    pallas_block_indices,
    pallas_compiled_fun,
    pallas_kernel_view,
    pallas_ref_effects,
    plan_call,
    preview_value,
    setting_line,
)
from jaxscope.exhibit_api import finite_diff as fd

from exhibits.stations.options import StationsOptions

from .blocks import OutputWrites, element_ranges, judge, out_of_bounds, revisits, unwritten
from .events import (
    PallasBlockDim,
    PallasCallFinding,
    PallasCallFound,
    PallasOperand,
    PallasOutput,
    PallasOutputCompared,
    PallasProgram,
    PallasRevisit,
)

# Grid points sent as events (the revisits and unwritten elements cover the whole grid).
MAX_PROGRAMS = 1024
# Grid points whose index maps are evaluated at all (one vmapped evaluation per operand).
MAX_GRID = 1 << 16


def run(ctx: ProbeContext) -> None:
    """Trace ``f``, emit one ``pallas_call_found`` per call, run ``f`` and compare it."""
    plan = plan_call(ctx.snippet)
    with ctx.stage("trace"):
        closed, out_shapes = jax.make_jaxpr(
            plan.fun, static_argnums=plan.static_argnums, return_shape=True
        )(*plan.args, **plan.kwargs)
        calls = find_pallas_calls(closed)
        if not calls:
            raise blame_line(
                InvalidSnippet(
                    "f calls no pl.pallas_call: this exhibit shows a Pallas kernel's blocks; "
                    "call pl.pallas_call(kernel, grid=..., in_specs=..., out_specs=..., "
                    "out_shape=..., interpret=True)(...) in f"
                ),
                setting_line(ctx.snippet.source, "f"),
            )
        found = [call_found(i, call) for i, call in enumerate(calls)]
    for event in found:
        ctx.emit(event)
    tpu = options_as(ctx.options, StationsOptions).target == "tpu-v5e"
    if tpu:
        # the kernels lowered through Mosaic for a TPU v5e, offline (a "tpu_compile" worker),
        # before the run: a kernel written for the TPU (interpret=False) cannot run on its CPU
        from . import mosaic

        with ctx.stage("lower"):
            lowered = mosaic.lowered_events(calls, closed)
        for mosaic_event in lowered:
            ctx.emit(mosaic_event)
    compiled = [c for c in calls if not c.interpret]
    with ctx.stage("run"):
        try:
            if tpu and compiled and jax.default_backend() == "cpu":
                # compiled for the TPU above; on this CPU the same kernels in interpret mode
                fun, _ = pallas_compiled_fun(closed, interpret=True)
                static = set(plan.normalized_argnums())
                dynamic = tuple(a for i, a in enumerate(plan.args) if i not in static)
                outs = fun(*jax.tree.leaves((dynamic, plan.kwargs)))
                out = block_until_ready(jax.tree.unflatten(jax.tree.structure(out_shapes), outs))
            else:
                out = block_until_ready(plan.fun(*plan.args, **plan.kwargs))
        except Exception as exc:
            if compiled and not tpu and jax.default_backend() == "cpu":
                # The Pallas quickstart's kernels leave interpret out: JAX's message says only
                # that the CPU needs interpret mode, not where to ask for it.
                explain(exc, interpret_explanation(compiled[0]))
            raise
    with ctx.stage("call"):
        ctx.emit(compared(ctx, plan.args, plan.kwargs, out))


def interpret_explanation(call: FoundPallasCall) -> str:
    """What to change when ``call`` (``interpret=False``) failed on this CPU-only worker."""
    name = (call.kernel_name or "the kernel").split(" at ")[0]
    return (
        f"pl.pallas_call of {name} has no interpret=True: Pallas compiles a kernel"
        " only for a GPU (Triton, Mosaic GPU) or a TPU (Mosaic), and this worker has a CPU. Add"
        " interpret=True to pl.pallas_call(...): the kernel then runs with JAX's own ops, one"
        " grid point after another, and this exhibit can show its blocks"
    )


def _not_evaluated(call: FoundPallasCall) -> str | None:
    if call.grid is None:
        return "the grid has a dynamic bound: its size is known only when the kernel runs"
    if call.num_index_operands:
        return (
            "the index maps read scalar-prefetch operands, values known only when the kernel "
            "runs: not evaluated"
        )
    if int(np.prod(call.grid, dtype=np.int64)) > MAX_GRID:
        return f"the grid has more than {MAX_GRID} program instances: not evaluated"
    for op in call.operands:
        if any(d.kind == "other" for d in op.block):
            dims = ", ".join(d.text for d in op.block)
            return f"{op.name or op.origin}'s block ({dims}) is a window its index map slices"
    return None


def call_found(index: int, call: FoundPallasCall) -> PallasCallFound:
    """The event of one call: the operands, and every grid point's blocks and ranges."""
    operands = [
        PallasOperand(
            role=op.role,
            index=op.index,
            name=op.name,
            origin=op.origin,
            aval=aval_view(op.aval),
            block=[PallasBlockDim(kind=d.kind, size=d.size, text=d.text) for d in op.block],
            index_map=jaxpr_view(op.index_map),
        )
        for op in call.operands
    ]
    effects = [pallas_ref_effects(call.kernel, ref) for ref in call.output_refs()]
    reason = _not_evaluated(call)
    programs: list[PallasProgram] = []
    left_out = 0
    found_revisits: list[PallasRevisit] = []
    missing: list[int] = []
    findings: list[PallasCallFinding] = []
    notes: list[str] = []
    if reason is None and call.grid is not None:
        # one row per grid point (a grid of () is one program instance with no ids)
        points = list(np.ndindex(*call.grid))
        ids = np.array(points, dtype=np.int32).reshape(len(points), len(call.grid))
        blocks = [pallas_block_indices(op, ids) for op in call.operands]
        ranges = [
            element_ranges(o.block, o.aval.shape, b) for o, b in zip(operands, blocks, strict=True)
        ]
        shown = min(len(ids), MAX_PROGRAMS)
        left_out = len(ids) - shown
        programs = [
            PallasProgram(
                program_id=ids[p].tolist(),
                blocks=[b[p].tolist() for b in blocks],
                ranges=[r[p].tolist() for r in ranges],
            )
            for p in range(shown)
        ]
        for k, op in enumerate(call.operands):
            outside = out_of_bounds(
                k, op.name or op.origin, operands[k].block, op.shape, blocks[k], ids
            )
            if outside is not None:
                findings.append(outside)
        outputs = [k for k, op in enumerate(call.operands) if op.role == "output"]
        for n, k in enumerate(outputs):
            written, read = effects[n]
            writes = OutputWrites(
                index=n,
                operand=k,
                shape=call.operands[k].shape,
                blocks=blocks[k],
                ranges=ranges[k],
                written=written,
                read=read,
                aliased=n in call.aliased_outputs,
                revisit_any=call.operands[k].revisit_any,
            )
            again = revisits(ids, writes)
            found_revisits += again
            missing.append(unwritten(writes))
            more_findings, more_notes = judge(writes, again, missing[-1], call.dimension_semantics)
            findings += more_findings
            notes += more_notes
    return PallasCallFound(
        index=index,
        source=call.source,
        within=list(call.within),
        grid=list(call.grid) if call.grid is not None else None,
        dimension_semantics=(
            list(call.dimension_semantics) if call.dimension_semantics is not None else None
        ),
        interpret=call.interpret,
        kernel_name=call.kernel_name,
        kernel_jaxpr=pallas_kernel_view(call),
        operands=operands,
        programs=programs,
        programs_left_out=left_out,
        not_evaluated=reason,
        revisits=found_revisits,
        unwritten=missing,
        output_written=[w for w, _ in effects],
        output_read=[r for _, r in effects],
        findings=findings,
        notes=notes,
    )


def _tolerance(got: np.ndarray, want: np.ndarray) -> float:
    # jnp's issubdtype knows bfloat16 and float8_* as floats (numpy's says no: they were
    # compared exactly, so a 1-ulp bfloat16 rounding was a wrong-result finding)
    floats = [d for d in (got.dtype, want.dtype) if jax.numpy.issubdtype(d, jax.numpy.inexact)]
    if len(floats) == 2:
        return fd.tolerance(fd.narrower(*floats))
    if floats:
        return fd.tolerance(floats[0])
    return 0.0  # integers and booleans compare exactly


def _against(output: PallasOutput, got: np.ndarray, want: np.ndarray) -> PallasOutput:
    """``output`` with its comparison against ``want`` filled in: at the narrower dtype's
    tolerance; a shape mismatch is not close and has no difference."""
    tol = _tolerance(got, want)
    if got.shape != want.shape:
        diff, close, first = None, False, None
    else:
        diff, close = fd.compare(got, want, None, tol)
        first = None if close else fd.first_difference(got, want, tol)
    return output.model_copy(
        update={
            "reference_preview": preview_value(want),
            "max_abs_diff": diff,
            "allclose": close,
            "tolerance": tol,
            "first_diff_index": first[0] if first else None,
            "first_diff_got": first[1] if first else None,
            "first_diff_want": first[2] if first else None,
        }
    )


def compared(
    ctx: ProbeContext, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any
) -> PallasOutputCompared:
    """``out`` (``f(*args)``) leaf by leaf against ``reference(*args, **kwargs)``."""
    reference = ctx.snippet.namespace.get("reference")
    line = setting_line(ctx.snippet.source, "reference") if reference is not None else None
    paths, leaves = zip(*jax.tree_util.tree_flatten_with_path(out)[0], strict=True)
    want: list[Any] | None = None
    note: str | None = None
    if reference is None:
        note = "the snippet defines no reference(*args) to compare with"
    elif not callable(reference):
        raise blame_line(InvalidSnippet("`reference` must be a function of args"), line)
    else:
        want = [np.asarray(x) for x in jax.tree.leaves(reference(*args, **kwargs))]
        if len(want) != len(leaves):
            note = f"reference(*args) returned {len(want)} arrays, f(*args) {len(leaves)}"
            want = None
    outputs = []
    for i, (path, leaf) in enumerate(zip(paths, leaves, strict=True)):
        got = np.asarray(leaf)
        output = PallasOutput(
            path="out" + jax.tree_util.keystr(path),
            aval=aval_view(jax.typeof(leaf)),
            preview=preview_value(got),
            reference_preview=None,
            max_abs_diff=None,
            allclose=None,
            tolerance=None,
        )
        if want is not None:
            output = _against(output, got, want[i])
        outputs.append(output)
    return PallasOutputCompared(
        outputs=outputs,
        reference="reference" if want is not None else "none",
        reference_note=note,
        reference_line=line,
    )
