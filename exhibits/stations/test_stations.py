"""Tests of the stations exhibit's probe: each station's artefact against JAX itself.

Truths are computed from a separately loaded copy of the snippet with plain ``jax.jit``
(``lower().as_text()``, ``compile().as_text()``, ``cost_analysis()``, the call's outputs), from the
golden files (``golden/regen.py``, plain JAX), from numpy (byte sizes) and from the shared case C24.

The compiled HLO text embeds the Python call stack of the user frames (file/line tables), so the
truth is computed next to the probe run, in the same fixture: both see the same stack (jaxscope
and ``exhibits/`` frames are excluded from JAX's user frames by ``jaxscope.internals``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jaxscope.internals.calling import block_until_ready
from jaxscope.internals.lowering import parsed_op_counts
from jaxscope.internals.views import preview_value
from jaxscope.protocol import JaxprStaged, StageStarted, StageTimed
from jaxscope.sandbox.snippet import load_snippet

from exhibits.conftest import CASES, EXHIBITS, FakeContext, example_sources, run_probe
from exhibits.registry import EXHIBITS as REGISTRY
from exhibits.stations.events import ExecutableCompiled, ModuleLowered, ProgramExecuted
from exhibits.tracing.events import EqnRecorded

GOLDEN = EXHIBITS / "stations" / "golden"
EXAMPLES = {**example_sources("tracing"), **example_sources("stations")}

WEAK = """
import jax.numpy as jnp

def f(x, y):
    z = jnp.sin(x) * 2.0
    w = z + y
    return jnp.sum(w), {"const": jnp.array([1.0, 2.0, 3.0])}

args = (jnp.ones(3), 1.0)
"""

SDS = """
import jax
import jax.numpy as jnp

def f(x, n):
    return jnp.cumsum(x) * n

args = (jax.ShapeDtypeStruct((4,), jnp.float32), 3)
static_argnums = (1,)
"""

WHILE_INTS = """
import jax
import jax.numpy as jnp
import numpy as np

def f(x, i):
    n, y = jax.lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * 2.0), (0, x))
    return y, i * 2, n

args = (jnp.ones(3), np.arange(4, dtype=np.uint8))
"""

SNIPPETS = {"weak": WEAK, "sds": SDS, "while_ints": WHILE_INTS}
C24 = (
    (CASES / "C24_async_dispatch.py").read_text()
    if (CASES / "C24_async_dispatch.py").exists()
    else None
)


@dataclass
class Truth:
    """Plain-JAX artefacts of a fresh copy of the snippet."""

    stablehlo: str
    hlo: str
    compiled_text: str
    cost: Any
    memory: Any
    outputs: Any
    jaxpr: Any


def truth_of(source: str) -> Truth:
    s = load_snippet(source)
    jf = jax.jit(s.f, static_argnums=s.static_argnums, static_argnames=s.static_argnames)
    lowered = jf.lower(*s.args, **s.kwargs)
    compiled = lowered.compile()
    args = jax.tree.map(
        lambda x: np.zeros(x.shape, x.dtype) if isinstance(x, jax.ShapeDtypeStruct) else x,
        s.args,
    )
    return Truth(
        stablehlo=lowered.as_text(),
        hlo=lowered.as_text(dialect="hlo"),
        compiled_text=str(compiled.as_text()),
        cost=compiled.cost_analysis(),
        memory=compiled.memory_analysis(),
        outputs=block_until_ready(jf(*args, **s.kwargs)),
        jaxpr=jax.make_jaxpr(s.f, static_argnums=s.static_argnums)(*s.args, **s.kwargs),
    )


@pytest.fixture(scope="module")
def runs() -> dict[str, tuple[FakeContext, Truth]]:
    """Each snippet through the probe, and its truth computed right after (same stack)."""
    sources = {**EXAMPLES, **SNIPPETS}
    return {name: (run_probe("stations", src), truth_of(src)) for name, src in sources.items()}


NAMES = sorted({**EXAMPLES, **SNIPPETS})


@pytest.mark.parametrize("name", NAMES)
def test_station_texts_are_jax_texts(runs: dict[str, tuple[FakeContext, Truth]], name: str) -> None:
    ctx, truth = runs[name]
    assert ctx.one(JaxprStaged).jaxpr.text == str(truth.jaxpr)
    lowered = ctx.one(ModuleLowered)
    assert lowered.stablehlo == truth.stablehlo
    assert lowered.hlo == truth.hlo
    assert ctx.one(ExecutableCompiled).compiled_text == truth.compiled_text


@pytest.mark.parametrize("name", NAMES)
def test_stages_in_order_with_jax_timers(
    runs: dict[str, tuple[FakeContext, Truth]], name: str
) -> None:
    ctx, _ = runs[name]
    assert [e.stage for e in ctx.of_type(StageStarted)] == ["trace", "lower", "compile", "run"]
    timed = ctx.of_type(StageTimed)
    assert [t.stage for t in timed] == ["trace", "lower", "compile"]
    assert [t.fun_name for t in timed] == ["f", "jit(f)", "jit(f)"]
    assert all(t.duration_ms > 0 for t in timed)
    types = [e.type for e in ctx.events]
    # Each timer arrives inside its own stage (after its stage_started, before the next one).
    starts = [i for i, t in enumerate(types) if t == "stage_started"]
    for t, start, end in zip(timed, starts, starts[1:], strict=False):
        assert start < ctx.events.index(t) < end


@pytest.mark.parametrize("name", NAMES)
def test_costs_and_memory_are_jax_figures(
    runs: dict[str, tuple[FakeContext, Truth]], name: str
) -> None:
    ctx, truth = runs[name]
    compiled = ctx.one(ExecutableCompiled)
    cost = truth.cost[0] if isinstance(truth.cost, list) else truth.cost
    assert compiled.cost == {k: float(v) for k, v in cost.items()}
    assert compiled.memory is not None
    for key, value in compiled.memory.items():
        assert value == getattr(truth.memory, key)
    assert compiled.caveats  # the estimate caveats are always stated
    # Independent truth for sizes: numpy byte counts of the arguments and the outputs.
    s = load_snippet({**EXAMPLES, **SNIPPETS}[name])
    dynamic = [a for i, a in enumerate(s.args) if i not in s.static_argnums]
    arg_bytes = sum(
        np.dtype(x.dtype).itemsize * int(np.prod(x.shape))
        for x in jax.tree.leaves((dynamic, s.kwargs))
        if hasattr(x, "dtype")
    )
    py_scalars = [x for x in jax.tree.leaves((dynamic, s.kwargs)) if not hasattr(x, "dtype")]
    arg_bytes += 4 * len(py_scalars)  # Python scalars become 32-bit values
    assert compiled.memory["argument_size_in_bytes"] == arg_bytes
    out_leaves = jax.tree.leaves(truth.outputs)
    out_bytes = sum(np.asarray(x).nbytes for x in out_leaves)
    if len(out_leaves) == 1:
        assert compiled.memory["output_size_in_bytes"] == out_bytes
    else:  # several outputs: XLA's result tuple also holds a table of buffer pointers
        assert compiled.memory["output_size_in_bytes"] >= out_bytes


@pytest.mark.parametrize("name", NAMES)
def test_outputs_are_the_jitted_call(runs: dict[str, tuple[FakeContext, Truth]], name: str) -> None:
    ctx, truth = runs[name]
    executed = ctx.one(ProgramExecuted)
    leaves = jax.tree_util.tree_flatten_with_path(truth.outputs)[0]
    assert [o.path for o in executed.outputs] == [jax.tree_util.keystr(p) for p, _ in leaves]
    for out, (_, leaf) in zip(executed.outputs, leaves, strict=True):
        assert out.shape == list(leaf.shape)
        assert out.dtype == str(leaf.dtype)
        assert out.preview == preview_value(np.asarray(leaf))
    device = next(iter(jax.tree.leaves(truth.outputs)[0].devices()))
    assert executed.device == str(device)
    assert executed.platform == jax.default_backend()
    assert executed.repeats >= 1 and executed.blocked_ms > 0 and executed.dispatch_ms > 0


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_examples_match_golden(runs: dict[str, tuple[FakeContext, Truth]], name: str) -> None:
    ctx, _ = runs[name]
    golden = json.loads((GOLDEN / f"{name}.json").read_text())
    assert ctx.one(JaxprStaged).jaxpr.text == golden["jaxpr"]
    assert parsed_op_counts(ctx.one(ModuleLowered).stablehlo) == golden["stablehlo_op_counts"]
    outputs = ctx.one(ProgramExecuted).outputs
    assert [{"path": o.path, "shape": o.shape, "dtype": o.dtype} for o in outputs] == golden[
        "outputs"
    ]


@pytest.mark.parametrize("name", NAMES)
def test_recorded_eqns_are_the_staged_eqns(
    runs: dict[str, tuple[FakeContext, Truth]], name: str
) -> None:
    ctx, _ = runs[name]
    recorded = ctx.of_type(EqnRecorded)
    eqns = ctx.one(JaxprStaged).jaxpr.eqns
    assert [(r.index, r.primitive, r.source) for r in recorded] == [
        (e.index, e.primitive, e.source) for e in eqns
    ]


@pytest.mark.parametrize("name", NAMES)
def test_op_links_point_at_eqns_of_the_same_line(
    runs: dict[str, tuple[FakeContext, Truth]], name: str
) -> None:
    ctx, _ = runs[name]
    lowered = ctx.one(ModuleLowered)
    eqns = ctx.one(JaxprStaged).jaxpr.eqns
    lines = lowered.stablehlo.splitlines()
    assert lowered.op_links, "no op was linked"
    for link in lowered.op_links:
        assert link.op.split(".")[-1] in lines[link.line]
        for k in link.eqn_indices:
            eqn = eqns[k]
            if link.source is not None and eqn.source is not None and not eqn.inner_jaxprs:
                # A plain eqn links only to ops lowered from its own line.
                assert eqn.source.line == link.source.line


def test_op_links_of_a_known_function(runs: dict[str, tuple[FakeContext, Truth]]) -> None:
    ctx, _ = runs["weak"]
    lowered = ctx.one(ModuleLowered)
    eqns = ctx.one(JaxprStaged).jaxpr.eqns
    index = {e.primitive: e.index for e in eqns}
    by_op: dict[str, list[Any]] = {}
    for link in lowered.op_links:
        by_op.setdefault(link.op, []).append(link)
    (sine,) = by_op["stablehlo.sine"]
    assert sine.name_stack == "jit(f)/sin"
    assert sine.source is not None and (sine.source.line, sine.source.function) == (5, "f")
    assert sine.eqn_indices == [index["sin"]]
    # The op's debug location and the eqn's source_info name the same span of the line.
    assert sine.source == eqns[index["sin"]].source
    assert (sine.source.column, sine.source.end_column) == (8, 18)  # `jnp.sin(x)`
    multiply = by_op["stablehlo.multiply"]
    assert all(m.eqn_indices == [index["mul"]] for m in multiply)
    (reduce_,) = by_op["stablehlo.reduce"]
    assert reduce_.eqn_indices == [index["reduce_sum"]] and reduce_.source.line == 7


def test_shape_dtype_struct_arguments_run_on_zeros(
    runs: dict[str, tuple[FakeContext, Truth]],
) -> None:
    ctx, _ = runs["sds"]
    (out,) = ctx.one(ProgramExecuted).outputs
    assert out.shape == [4] and out.preview == preview_value(np.zeros(4, np.float32))


@pytest.mark.skipif(C24 is None, reason="shared case C24 not present")
def test_c24_async_dispatch() -> None:
    assert C24 is not None
    expect = json.loads((CASES / "C24_async_dispatch.expect.json").read_text())
    ctx = run_probe("stations", C24)
    assert ctx.one(JaxprStaged).jaxpr.text == expect["jaxpr"]
    counts = parsed_op_counts(ctx.one(ModuleLowered).stablehlo)
    for op, n in expect["lowered_op_counts"].items():
        assert counts[f"stablehlo.{op}"] == n
    executed = ctx.one(ProgramExecuted)
    (out,) = executed.outputs
    assert out.shape == expect["out_shape"]
    # Four 1000x1000 matmuls: waiting for the result takes far longer than dispatching.
    assert executed.dispatch_ms < executed.blocked_ms
    cost = ctx.one(ExecutableCompiled).cost
    assert cost is not None
    n = 1000
    assert cost["flops"] >= 4 * 2 * n**3  # XLA counts a dot of [n,n]x[n,n] as 2n^3
    assert cost["transcendentals"] == 4 * n * n  # one tanh per element, four times


SDS_MATMUL = """
import jax
import jax.numpy as jnp

def f(x, w, scale):
    return jnp.tanh(x @ w).sum() * scale

args = (jax.ShapeDtypeStruct((4, 3), jnp.float32), jnp.ones((3, 2)), 2.0)
kwargs = {}
"""


def test_shape_dtype_struct_arguments_run_on_zeros_and_say_so() -> None:
    ctx = run_probe("stations", SDS_MATMUL)
    executed = ctx.of_type(ProgramExecuted)[-1]
    assert executed.zeros_for == ["args[0]"]
    # tanh(0 @ w) = 0 everywhere: the output is JAX's value on zeros.
    expected = jax.jit(load_snippet(SDS_MATMUL).f)(jnp.zeros((4, 3)), jnp.ones((3, 2)), 2.0)
    assert executed.outputs[0].preview == preview_value(np.asarray(expected))
    text = REGISTRY["stations"].artefacts["output"](ctx.events)
    assert text is not None and text.startswith("# ran on zeros for args[0]")
    assert "\noutput: float32[]" in text


def _computation_lines(text_lines: list[str], name: str) -> list[str]:
    """The instruction lines of computation ``%name`` in an HLO module's text (its header line
    ends with ``{``, its body with a lone ``}``)."""
    start = next(
        i
        for i, line in enumerate(text_lines)
        if line.startswith((f"%{name} ", f"ENTRY %{name} ")) and line.endswith("{")
    )
    end = text_lines.index("}", start)
    return text_lines[start + 1 : end]


@pytest.mark.parametrize("name", NAMES)
def test_hlo_links_address_the_compiled_text(
    runs: dict[str, tuple[FakeContext, Truth]], name: str
) -> None:
    """Each link names the instruction on its line of ``Compiled.as_text()``, and a plain eqn
    links only to instructions of its own line."""
    ctx, truth = runs[name]
    compiled = ctx.one(ExecutableCompiled)
    eqns = ctx.one(JaxprStaged).jaxpr.eqns
    lines = truth.compiled_text.splitlines()
    assert any(link.eqn_indices for link in compiled.hlo_links), "no instruction was linked"
    for link in compiled.hlo_links:
        text = lines[link.line]
        assert f"%{link.instruction} = " in text and f" {link.opcode}(" in text
        assert link.computation in {
            line.split()[1 if line.startswith("ENTRY") else 0].lstrip("%")
            for line in lines[: link.line]
            if line.endswith("{") and line.startswith(("%", "ENTRY %"))
        }
        if link.op_name is not None:  # as XLA prints it (C escapes: params[\'b\'])
            escaped = link.op_name.replace("\\", "\\\\").replace("'", "\\'")
            assert f'op_name="{escaped}"' in text
        for k in link.eqn_indices:
            eqn = eqns[k]
            if link.opcode != "fusion" and link.source and eqn.source and not eqn.inner_jaxprs:
                assert eqn.source.line == link.source.line


def test_hlo_links_of_jnp_sin(runs: dict[str, tuple[FakeContext, Truth]]) -> None:
    """The instructions linked to the ``jnp.sin`` eqn of WEAK (line 5) are sines, or a fusion
    whose computation holds that sine, in the text of ``jax.jit(f).lower(...).compile()``."""
    ctx, truth = runs["weak"]
    compiled = ctx.one(ExecutableCompiled)
    eqns = ctx.one(JaxprStaged).jaxpr.eqns
    (sin,) = [e.index for e in eqns if e.primitive == "sin"]
    lines = truth.compiled_text.splitlines()
    linked = [link for link in compiled.hlo_links if sin in link.eqn_indices]
    sines = [link for link in linked if link.opcode != "fusion"]
    fusions = [link for link in linked if link.opcode == "fusion"]
    assert sines, "no sine instruction linked to the sin eqn"
    for link in sines:
        assert " sine(" in lines[link.line]
        assert link.op_name == "jit(f)/sin"
        assert link.source is not None and link.source.line == 5
        source = eqns[sin].source
        assert source is not None  # the eqn's own place: `jnp.sin(x)` starts at column 8
        assert (link.source.line, link.source.column, link.source.function) == (5, 8, "f")
        assert (source.line, source.column, source.function) == (5, 8, "f")
    for link in fusions:
        called = lines[link.line].split("calls=%")[1].split(",")[0].split()[0]
        assert any(" sine(" in line for line in _computation_lines(lines, called))
    # Every sine of the module is linked back to the sin eqn.
    sine_lines = {i for i, line in enumerate(lines) if " sine(" in line}
    assert sine_lines == {link.line for link in sines}
    # The program opens on the user's code: the first linked instruction sits below the stack
    # frame tables XLA prints at the top (which list the harness's files too).
    first = min(link.line for link in compiled.hlo_links if link.source is not None)
    assert first > lines.index("StackFrames")
