"""The pallas exhibit's tests, each value against an independent truth:

- the blocks: each example's own ``BlockSpec``s (recorded by running its ``f`` with
  ``pl.pallas_call`` wrapped), their ``index_map`` Python functions called on every grid point
  with plain ints, times the block shape, clipped to the array, in numpy;
- the kernel's jaxpr: ``str`` of the ``pallas_call`` eqn's ``jaxpr`` param in
  ``jax.make_jaxpr(f)``, as JAX prints it;
- the outputs: ``f(*args)`` against the reference computed with numpy;
- the findings: the overwrite example's output read in numpy (the last writer's block, NaN where
  nothing was written), and an accumulating matmul that revisits its output block in order
  (no finding);
- the golden stream against the probe, the ``--print`` artefacts' exact format.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import jax
import numpy as np
import pytest
from jaxscope.events import EVENT_ADAPTER
from jaxscope.protocol import EventBase, RunFinished
from jaxscope.sandbox.probe_api import EXPLAIN_ATTR
from jaxscope.sandbox.snippet import InvalidSnippet

from exhibits.conftest import Runner, jaxscope_run
from exhibits.registry import EXHIBITS

from .events import EVENTS, PallasCallFound, PallasOutputCompared

HERE = Path(__file__).resolve().parent
EXHIBIT = HERE.name
EXAMPLES = HERE / "examples"


def recorded(name: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The example run as plain Python, with every ``pl.pallas_call`` call's keyword arguments
    (grid, in_specs, out_specs, out_shape) recorded: ``(namespace, calls)``."""
    path = EXAMPLES / f"{name}.py"
    ns: dict[str, Any] = {"__name__": "example"}
    exec(compile(path.read_text(), str(path), "exec"), ns)
    calls: list[dict[str, Any]] = []
    real = ns["pl"]

    def pallas_call(kernel: Any, **kwargs: Any) -> Any:
        calls.append(kwargs)
        return real.pallas_call(kernel, **kwargs)

    ns["pl"] = SimpleNamespace(pallas_call=pallas_call, BlockSpec=real.BlockSpec)
    ns["f"](*ns["args"])
    return ns, calls


def expected_ranges(spec: Any, shape: tuple[int, ...], pid: tuple[int, ...]) -> list[list[int]]:
    """The element range per dimension of ``spec``'s block at grid point ``pid``: the user's
    ``index_map`` called with plain ints, times the block size (a ``None`` dimension: the
    index is the element), clipped to the array."""
    idx = spec.index_map(*pid)
    out = []
    for i, b, n in zip(idx, spec.block_shape, shape, strict=True):
        size = 1 if b is None else b
        start = int(i) * size
        out.append([min(start, n), min(start + size, n)])
    return out


def found(ctx: Any) -> PallasCallFound:
    return ctx.one(PallasCallFound)  # type: ignore[no-any-return]


@pytest.mark.parametrize("name", ["matmul", "add", "overwrite"])
def test_blocks_are_the_index_maps(name: str, probe_runner: Runner) -> None:
    ns, (call,) = recorded(name)
    ctx = probe_runner(EXHIBIT, (EXAMPLES / f"{name}.py").read_text())
    event = found(ctx)
    grid = call["grid"]
    assert event.grid == list(grid)
    in_shapes = [np.shape(a) for a in ns["args"]]
    out_shape = call["out_shape"].shape
    specs = [(s, shp) for s, shp in zip(call["in_specs"], in_shapes, strict=True)]
    specs.append((call["out_specs"], out_shape))
    assert [o.aval.shape for o in event.operands] == [list(s) for _, s in specs]
    assert [o.role for o in event.operands] == ["input"] * len(in_shapes) + ["output"]
    # every grid point, in interpret mode's order (row-major, last axis fastest)
    points = list(np.ndindex(*grid))
    assert [p.program_id for p in event.programs] == [list(p) for p in points]
    for program, pid in zip(event.programs, points, strict=True):
        want = [expected_ranges(spec, shape, pid) for spec, shape in specs]
        assert program.ranges == want, pid
        assert program.blocks == [[int(i) for i in s.index_map(*pid)] for s, _ in specs]
    # the block shapes, as the user wrote them
    for op, (spec, _) in zip(event.operands, specs, strict=True):
        assert [None if d.kind == "squeezed" else d.size for d in op.block] == list(
            spec.block_shape
        )


def kernel_text(name: str) -> str:
    """``str`` of the kernel jaxpr JAX staged: the ``jaxpr`` param of the one ``pallas_call``
    eqn of ``jax.make_jaxpr(f)``."""
    ns, _ = recorded(name)
    (eqn,) = [e for e in jax.make_jaxpr(ns["f"])(*ns["args"]).eqns if "pallas" in str(e.primitive)]
    return str(eqn.params["jaxpr"])


@pytest.mark.parametrize("name", ["matmul", "add"])
def test_kernel_jaxpr_is_jaxs(name: str, probe_runner: Runner) -> None:
    ctx = probe_runner(EXHIBIT, (EXAMPLES / f"{name}.py").read_text())
    event = found(ctx)
    text = kernel_text(name)
    assert event.kernel_jaxpr.text == text
    assert EXHIBITS[EXHIBIT].artefacts["kernel_jaxpr"](ctx.events) == text
    # the refs the kernel takes: one per operand, of the block's shape
    shapes = [v.aval.shape for v in event.kernel_jaxpr.invars]
    assert shapes == [[d.size for d in o.block if d.kind != "squeezed"] for o in event.operands]


def test_matmul_output_equals_numpy(probe_runner: Runner) -> None:
    ns, _ = recorded("matmul")
    ctx = probe_runner(EXHIBIT, (EXAMPLES / "matmul.py").read_text())
    (out,) = ctx.one(PallasOutputCompared).outputs
    got = np.asarray(ns["f"](*ns["args"]), dtype=np.float64)
    want = np.asarray(ns["args"][0], np.float64) @ np.asarray(ns["args"][1], np.float64)
    # the exhibit compares with the snippet's jnp reference (float32): numpy agrees with both
    ref32 = np.asarray(ns["reference"](*ns["args"]), np.float64)
    assert out.max_abs_diff == pytest.approx(float(np.abs(got - ref32).max()), abs=0)
    assert np.allclose(got, want, rtol=0, atol=1e-4 * np.abs(want).max())
    assert out.allclose is True and out.tolerance == 1e-4
    assert out.aval.short == "f32[8,12]"


def test_add_partial_last_block(probe_runner: Runner) -> None:
    ctx = probe_runner(EXHIBIT, (EXAMPLES / "add.py").read_text())
    event = found(ctx)
    # 10 elements in blocks of 4: the third program's blocks hold 2 elements of the array
    assert [p.ranges[2] for p in event.programs] == [[[0, 4]], [[4, 8]], [[8, 10]]]
    assert event.unwritten == [0] and event.findings == [] and event.revisits == []
    (out,) = ctx.one(PallasOutputCompared).outputs
    x, y = recorded("add")[0]["args"]
    got = np.asarray(recorded("add")[0]["f"](x, y))
    np.testing.assert_array_equal(got, x + y)  # numpy's sum, exactly
    assert out.max_abs_diff == 0.0 and out.allclose is True


def test_overwrite_is_found(probe_runner: Runner) -> None:
    ns, (call,) = recorded("overwrite")
    ctx = probe_runner(EXHIBIT, (EXAMPLES / "overwrite.py").read_text())
    event = found(ctx)
    # numpy's truth: both programs' out index maps return block 0
    writers = [call["out_specs"].index_map(i) for i in range(2)]
    assert writers == [(0,), (0,)]
    (revisit,) = event.revisits
    assert revisit.block == [0] and revisit.program_ids == [[0], [1]] and revisit.axes == [0]
    assert event.dimension_semantics == ["parallel"]
    assert [f.kind for f in event.findings] == ["race", "unwritten"]
    assert event.unwritten == [4]
    # what interpret mode returned: program 1's block (x[4:8] * 2) in elements 0..3, NaN after
    got = np.asarray(ns["f"](*ns["args"]))
    x = ns["args"][0]
    np.testing.assert_array_equal(got[:4], x[4:8] * 2)
    assert np.isnan(got[4:]).all()
    (out,) = ctx.one(PallasOutputCompared).outputs
    assert out.allclose is False and out.max_abs_diff is None  # NaN on one side only
    assert out.first_diff_index == [0] and out.first_diff_got == 8.0 and out.first_diff_want == 0.0
    shown = EXHIBITS[EXHIBIT].shown_errors(ctx.events)
    assert [s.error_class for s in shown] == [
        "PallasOutputRace",
        "PallasOutputUnwritten",
        "ReferenceMismatch",
    ]
    assert all(s.kind == "finding" for s in shown)
    assert shown[0].line == 21 and shown[2].line == 32  # the call; def reference


ACCUMULATE = """\
import jax, jax.numpy as jnp, numpy as np
from jax.experimental import pallas as pl

def kernel(x_ref, y_ref, o_ref):
    @pl.when(pl.program_id(2) == 0)
    def _():
        o_ref[...] = jnp.zeros_like(o_ref)
    o_ref[...] += x_ref[...] @ y_ref[...]

def f(x, y):
    return pl.pallas_call(
        kernel,
        grid=(2, 2, 2),
        in_specs=[pl.BlockSpec((4, 4), lambda i, j, k: (i, k)),
                  pl.BlockSpec((4, 4), lambda i, j, k: (k, j))],
        out_specs=pl.BlockSpec((4, 4), lambda i, j, k: (i, j)),
        out_shape=jax.ShapeDtypeStruct((8, 8), jnp.float32),
        interpret=True,
    )(x, y)

def reference(x, y):
    return x @ y

args = (np.arange(64, dtype=np.float32).reshape(8, 8) / 64, np.eye(8, dtype=np.float32))
"""


def test_accumulation_is_a_note_not_a_finding(probe_runner: Runner) -> None:
    """The reduction axis k revisits each output block in order, and the kernel reads it
    (``+=``): correct in interpret mode (numpy agrees), so a note, never a finding."""
    ctx = probe_runner(EXHIBIT, ACCUMULATE)
    event = found(ctx)
    assert len(event.revisits) == 4
    assert all(r.axes == [2] for r in event.revisits)
    assert event.output_read == [True] and event.findings == []
    assert len(event.notes) == 1 and "axis 2" in event.notes[0]
    (out,) = ctx.one(PallasOutputCompared).outputs
    x, y = (np.asarray(a, np.float64) for a in load_args(ACCUMULATE))
    assert out.allclose is True and out.max_abs_diff is not None
    assert out.max_abs_diff <= 1e-6 * max(1.0, float(np.abs(x @ y).max()))


def load_args(source: str) -> Any:
    ns: dict[str, Any] = {}
    exec(source, ns)
    return ns["args"]


@pytest.mark.parametrize("semantics", [None, "arbitrary"])
def test_overwrite_on_a_grid_that_runs_in_order(
    semantics: str | None, probe_runner: Runner
) -> None:
    """No ``dimension_semantics``, or the axis declared ``arbitrary``: no race, but the kernel
    writes block 0 twice without reading it, so the first instance's values are lost."""
    line = '        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),\n'
    source = (EXAMPLES / "overwrite.py").read_text()
    assert line in source
    if semantics is None:
        source = source.replace(line, "")
    else:
        source = source.replace('("parallel",)', f'("{semantics}",)')
    event = found(probe_runner(EXHIBIT, source))
    assert event.dimension_semantics == (None if semantics is None else [semantics])
    assert event.output_written == [True] and event.output_read == [False]
    assert [f.kind for f in event.findings] == ["overwrite", "unwritten"]


OUT_OF_BOUNDS = """\
import jax, jax.numpy as jnp, numpy as np
from jax.experimental import pallas as pl

def k(x_ref, o_ref):
    o_ref[...] = x_ref[...] * 2

def f(x):
    return pl.pallas_call(k, grid=(2,), in_specs=[pl.BlockSpec((4,), lambda i: (i + 1,))],
        out_specs=pl.BlockSpec((4,), lambda i: (i,)),
        out_shape=jax.ShapeDtypeStruct((8,), jnp.float32), interpret=True)(x)

def reference(x):
    return x * 2

args = (np.arange(8, dtype=np.float32),)
"""


def test_block_outside_the_array(probe_runner: Runner) -> None:
    """``lambda i: (i + 1,)``: program 1 asks for block 2 of an 8-element x in blocks of 4,
    which starts at element 8. Interpret mode clamps the slice: program 1 reads x[4:8] again,
    so the output is x[4:8] * 2 twice (numpy)."""
    ctx = probe_runner(EXHIBIT, OUT_OF_BOUNDS)
    event = found(ctx)
    assert [p.blocks[0] for p in event.programs] == [[1], [2]]
    assert [p.ranges[0] for p in event.programs] == [[[4, 8]], [[8, 8]]]  # clipped: empty
    (finding,) = event.findings
    assert finding.kind == "out_of_bounds" and finding.operand == 0
    assert "(1,) gets block (2,) of x_ref, which starts at element (8,)" in finding.message
    ns: dict[str, Any] = {}
    exec(OUT_OF_BOUNDS, ns)
    x = ns["args"][0]
    np.testing.assert_array_equal(np.asarray(ns["f"](x)), np.concatenate([x[4:8], x[4:8]]) * 2)
    kinds = [s.error_class for s in EXHIBITS[EXHIBIT].shown_errors(ctx.events)]
    assert kinds == ["PallasBlockOutOfBounds", "ReferenceMismatch"]


def test_no_pallas_call_is_blamed_on_f(probe_runner: Runner) -> None:
    from jaxscope.sandbox.probe_api import BLAME_ATTR

    source = "import jax.numpy as jnp\n\ndef f(x):\n    return x * 2\n\nargs = (jnp.ones(3),)\n"
    with pytest.raises(InvalidSnippet, match=r"f calls no pl\.pallas_call") as info:
        probe_runner(EXHIBIT, source)
    line, _, _ = getattr(info.value, BLAME_ATTR)
    assert line == 3


def test_no_grid_is_one_instance_over_the_whole_array(probe_runner: Runner) -> None:
    """``pallas_call`` without ``grid``/``in_specs``: one program instance whose blocks are the
    whole arrays (the BlockSpec default); the output is numpy's ``x * 2``."""
    source = (
        "import jax, jax.numpy as jnp, numpy as np\n"
        "from jax.experimental import pallas as pl\n"
        "def k(x_ref, o_ref):\n"
        "    o_ref[...] = x_ref[...] * 2\n"
        "def f(x):\n"
        "    return pl.pallas_call(k, out_shape=jax.ShapeDtypeStruct((8,), jnp.float32),\n"
        "                          interpret=True)(x)\n"
        "reference = lambda x: x * 2\n"
        "args = (np.arange(8, dtype=np.float32),)\n"
    )
    ctx = probe_runner(EXHIBIT, source)
    event = found(ctx)
    assert event.grid == [] and [p.program_id for p in event.programs] == [[]]
    assert event.programs[0].ranges == [[[0, 8]], [[0, 8]]]
    (out,) = ctx.one(PallasOutputCompared).outputs
    assert out.allclose is True and out.max_abs_diff == 0.0


def test_scalar_prefetch_is_not_evaluated(probe_runner: Runner) -> None:
    """An index map that reads a scalar-prefetch operand depends on values: no blocks, a reason."""
    source = (
        "import jax, jax.numpy as jnp, numpy as np\n"
        "from jax.experimental import pallas as pl\n"
        "from jax.experimental.pallas import tpu as pltpu\n"
        "def k(idx_ref, x_ref, o_ref):\n"
        "    o_ref[...] = x_ref[...]\n"
        "def f(idx, x):\n"
        "    spec = pltpu.PrefetchScalarGridSpec(num_scalar_prefetch=1, grid=(2,),\n"
        "        in_specs=[pl.BlockSpec((4,), lambda i, idx: (idx[i],))],\n"
        "        out_specs=pl.BlockSpec((4,), lambda i, idx: (i,)))\n"
        "    return pl.pallas_call(k, grid_spec=spec,\n"
        "        out_shape=jax.ShapeDtypeStruct((8,), jnp.float32), interpret=True)(idx, x)\n"
        "args = (np.array([1, 0], np.int32), np.arange(8, dtype=np.float32))\n"
    )
    ctx = probe_runner(EXHIBIT, source)
    event = found(ctx)
    assert event.programs == [] and event.findings == []
    assert event.not_evaluated is not None and "scalar-prefetch" in event.not_evaluated
    # the operands are the BlockSpec'd ones (the prefetch operand has no BlockSpec)
    assert [o.name for o in event.operands] == ["x_ref", "o_ref"]


def test_print_blocks_format(probe_runner: Runner) -> None:
    _, (call,) = recorded("add")
    ctx = probe_runner(EXHIBIT, (EXAMPLES / "add.py").read_text())
    text = EXHIBITS[EXHIBIT].artefacts["blocks"](ctx.events)
    assert text is not None
    assert json.loads(text) == [
        {
            "program_id": [i],
            "reads": {"0": [[4 * i, min(4 * i + 4, 10)]], "1": [[4 * i, min(4 * i + 4, 10)]]},
            "writes": {"0": [[4 * i, min(4 * i + 4, 10)]]},
        }
        for i in range(call["grid"][0])
    ]
    assert text.startswith('[{"program_id": [0], "reads": {"0": [[0, 4]], "1": [[0, 4]]}, ')


def test_cli_prints_blocks_and_exits_3_on_findings() -> None:
    ok = jaxscope_run(EXHIBIT, EXAMPLES / "matmul.py", "--print", "blocks")
    assert ok.returncode == 0, ok.stderr
    rows = json.loads(ok.stdout)
    assert [r["program_id"] for r in rows] == [list(p) for p in np.ndindex(2, 3)]
    bad = jaxscope_run(EXHIBIT, EXAMPLES / "overwrite.py", "--print", "blocks")
    assert bad.returncode == 3
    assert "PallasOutputRace" in bad.stderr and "PallasOutputUnwritten" in bad.stderr


def golden_streams() -> list[Path]:
    return sorted((HERE / "golden").glob("*.events.jsonl"))


@pytest.mark.parametrize("golden", golden_streams(), ids=lambda p: p.name)
def test_golden_stream_is_the_probes(golden: Path, probe_runner: Runner) -> None:
    """The golden (``jaxscope run ID examples/NAME.py --json``, the real sandbox) parses with the
    event union and holds what the probe emits now."""
    lines = [line for line in golden.read_text().splitlines() if line.strip()]
    stream = [EVENT_ADAPTER.validate_json(line) for line in lines]
    assert isinstance(stream[-1], RunFinished)
    assert [e.seq for e in stream] == list(range(len(stream)))
    example = HERE / "examples" / (golden.name.removesuffix(".events.jsonl") + ".py")
    ctx = probe_runner(EXHIBIT, example.read_text())

    def own(events: list[EventBase]) -> list[dict[str, Any]]:
        return [e.model_dump(exclude={"seq", "run_id"}) for e in events if isinstance(e, EVENTS)]

    golden_own, fresh_own = own(stream), own(ctx.events)
    assert golden_own, "the golden holds none of this exhibit's events"
    # Equal, but for the values computed: up to float32 rounding (the golden was recorded on
    # another CPU, whose XLA code orders float32 sums differently: last-bit differences).
    assert [_text_only(e) for e in golden_own] == [_text_only(e) for e in fresh_own]
    want = np.array([x for e in golden_own for x in _numbers(e)], np.float64)
    got = np.array([x for e in fresh_own for x in _numbers(e)], np.float64)
    assert want.shape == got.shape
    scale = float(np.nanmax(np.abs(want), initial=1.0))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6 * scale)


_NUMBER = re.compile(r"-?(?:\d+\.\d*|\.\d+|\d+)(?:e[+-]?\d+)?|nan|-?inf")
_VALUE_FIELDS = (
    "preview",
    "reference_preview",
    "max_abs_diff",
    "first_diff_got",
    "first_diff_want",
)


def _text_only(event: dict[str, Any]) -> dict[str, Any]:
    """``event`` with its outputs' computed values left out (compared by :func:`_numbers`)."""
    if event.get("type") != "pallas_output_compared":
        return event
    outputs = [{k: v for k, v in o.items() if k not in _VALUE_FIELDS} for o in event["outputs"]]
    return {**event, "outputs": outputs}


def _numbers(event: dict[str, Any]) -> list[float]:
    """The computed values of ``event``'s outputs: their previews' numbers and the differences."""
    if event.get("type") != "pallas_output_compared":
        return []
    found: list[float] = []
    for o in event["outputs"]:
        for key in _VALUE_FIELDS:
            value = o.get(key)
            if isinstance(value, str):
                found += [float(x) for x in _NUMBER.findall(value)]
            elif isinstance(value, float | int):
                found.append(float(value))
    return found


QUICKSTART = """\
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def add_vectors_kernel(x_ref, y_ref, o_ref):
    x, y = x_ref[...], y_ref[...]
    o_ref[...] = x + y


@jax.jit
def f(x, y):
    return pl.pallas_call(
        add_vectors_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype)
    )(x, y)


args = (jnp.arange(8), jnp.arange(8))
"""


def test_a_kernel_without_interpret_says_to_add_it(probe_runner: Runner) -> None:
    """The Pallas quickstart's add_vectors (no interpret=True) fails on this CPU worker with
    JAX's own error, as plain JAX does, explained: the call to change and the keyword to add."""
    ns: dict[str, Any] = {}
    exec(compile(QUICKSTART, "<quickstart>", "exec"), ns)
    with pytest.raises(Exception) as plain:
        ns["f"](*ns["args"])
    with pytest.raises(Exception) as raised:
        probe_runner(EXHIBIT, QUICKSTART)
    assert type(raised.value) is type(plain.value) and str(raised.value) == str(plain.value)
    explanation = getattr(raised.value, EXPLAIN_ATTR)
    assert explanation.startswith("pl.pallas_call of add_vectors_kernel has no interpret=True")
    assert "Add interpret=True to pl.pallas_call(...)" in explanation
    fixed = QUICKSTART.replace("x.dtype)\n", "x.dtype), interpret=True\n")
    assert "interpret=True" in fixed
    probe_runner(EXHIBIT, fixed)  # runs
