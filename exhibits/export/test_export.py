"""The export exhibit's tests: every field, text and number against plain ``jax.export`` run here
(the module text, the ``Exported`` fields, the serialized size, the constraints against the
module's own ``shape_assertion`` messages), the round trip against numpy, JAX's error text for a
dimension that is not polymorphic, the snippet settings' errors at their lines, the ``--print``
artefacts' formats, the golden streams against the probe."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jax
import numpy as np
import pytest
from jaxscope.events import EVENT_ADAPTER
from jaxscope.explainers import ErrorContext
from jaxscope.protocol import EventBase, RunFailed, RunFinished
from jaxscope.sandbox.probe_api import BLAME_ATTR

from exhibits.conftest import Runner, jaxscope_run
from exhibits.registry import EXHIBITS

from .events import (
    EVENTS,
    MODULE_SUMMARY_BYTES,
    DimsSolved,
    ExportRoundTripped,
    ExportSpecsBuilt,
    FunctionExported,
    StablehloExported,
)
from .explain import explain_error

HERE = Path(__file__).resolve().parent
EXHIBIT = HERE.name
EXAMPLES = HERE / "examples"
MLP = EXAMPLES / "mlp_batch.py"
RESHAPE = EXAMPLES / "reshape_not_polymorphic.py"
MULTI = EXAMPLES / "multi_platform.py"


def namespace_of(path: Path) -> dict[str, Any]:
    """The example run as plain Python (not through the probe)."""
    namespace: dict[str, Any] = {"__name__": "example"}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    return namespace


def plain_export(ns: dict[str, Any]) -> Any:
    """What a user writes: ``jax.export.export(jax.jit(f))`` of the example's arguments, with
    its ``shapes`` through ``symbolic_args_specs`` and its ``platforms``."""
    args = ns["args"]
    if "shapes" in ns:
        args = jax.export.symbolic_args_specs(args, tuple(ns["shapes"]))
    return jax.export.export(jax.jit(ns["f"]), platforms=ns.get("platforms"))(*args)


def without_locations(text: str) -> str:
    """A StableHLO text without its source locations (``loc(...)`` and the ``#loc`` table): those
    name the file and line that called ``export`` (the probe's, or this test's)."""
    lines = [line for line in text.splitlines() if not line.startswith("#loc")]
    located = re.compile(r" loc\((?:[^()\"]|\"[^\"]*\"|\([^()]*\))*\)")
    return "\n".join(located.sub("", line) for line in lines)


def mlp_numpy(params: dict[str, np.ndarray], x: np.ndarray) -> np.ndarray:
    h = np.tanh(x @ params["w1"] + params["b1"])
    return np.asarray(h @ params["w2"] + params["b2"])


@pytest.fixture(scope="module")
def mlp_run() -> tuple[list[EventBase], Any]:
    """The probe's events on the default example, and the ``Exported`` that
    ``jax.export.export`` returned to the probe (caught by wrapping the public function): the
    serialized size depends on the source locations in the module, which name the probe's
    file, so only the probe's own object can be its truth."""
    from exhibits.conftest import run_probe

    made: list[Any] = []
    real = jax.export.export

    def export(*a: Any, **k: Any) -> Any:
        exporting = real(*a, **k)

        def run(*args: Any, **kwargs: Any) -> Any:
            made.append(exporting(*args, **kwargs))
            return made[-1]

        return run

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(jax.export, "export", export)
        events = run_probe(EXHIBIT, MLP.read_text()).events
    (exported,) = made
    return events, exported


@pytest.fixture(scope="module")
def mlp_events(mlp_run: tuple[list[EventBase], Any]) -> list[EventBase]:
    return mlp_run[0]


def one(events: list[EventBase], cls: type[Any]) -> Any:
    (found,) = [e for e in events if isinstance(e, cls)]
    return found


def test_module_text_is_jaxs(mlp_run: tuple[list[EventBase], Any]) -> None:
    mlp_events, probes = mlp_run
    module = one(mlp_events, StablehloExported)
    assert module.text == probes.mlir_module()
    # the same module as a user's own export, but for the file and line that called export
    want = plain_export(namespace_of(MLP)).mlir_module()
    assert without_locations(module.text) == without_locations(want)
    assert module.line_count == len(module.text.splitlines())
    assert module.byte_count == len(module.text.encode())
    # JAX's shape check in the wrapper main: one assertion for the one constraint on b
    assert module.shape_assertions == want.count("stablehlo.custom_call @shape_assertion(") == 1
    # the module's ops carry the user's lines (f's matmul on line 8 of the snippet)
    assert re.search(r'loc\("<[^"]*>":8:', module.text), "no location at the snippet's line 8"


def test_exported_fields_are_jaxs(mlp_run: tuple[list[EventBase], Any]) -> None:
    mlp_events, probes = mlp_run
    e = one(mlp_events, FunctionExported)
    exp = plain_export(namespace_of(MLP))
    assert [a.aval.short for a in e.in_avals] == [
        a.str_short(short_dtypes=True) for a in exp.in_avals
    ]
    assert [a.aval.short for a in e.in_avals] == [
        "f32[16]",
        "f32[4]",
        "f32[8,16]",
        "f32[16,4]",
        "f32[b,8]",
    ]
    assert [a.path for a in e.in_avals] == [
        "args[0]['b1']",
        "args[0]['b2']",
        "args[0]['w1']",
        "args[0]['w2']",
        "args[1]",
    ]
    assert e.in_avals[-1].dims == ["b", "8"] and e.in_avals[-1].aval.shape == [-1, 8]
    assert [(a.path, a.aval.short) for a in e.out_avals] == [("out", "f32[b,4]")]
    assert e.fun_name == exp.fun_name == "f"
    assert e.platforms == list(exp.platforms) == [jax.export.default_export_platform()]
    assert e.calling_convention_version == exp.calling_convention_version
    assert e.calling_convention_version == jax.export.maximum_supported_calling_convention_version
    assert e.nr_devices == exp.nr_devices == 1
    assert e.module_kept_var_idx == list(exp.module_kept_var_idx) == [0, 1, 2, 3, 4]
    assert e.uses_global_constants is exp.uses_global_constants is True
    assert e.disabled_safety_checks == [] == list(exp.disabled_safety_checks)
    assert e.in_shardings_hlo == [None if s is None else str(s) for s in exp.in_shardings_hlo]
    assert e.serialized_bytes == len(probes.serialize())
    specs = one(mlp_events, ExportSpecsBuilt)
    assert [a.aval.short for a in specs.leaves] == [a.aval.short for a in e.in_avals]
    assert [(s.index, s.spec) for s in specs.specs] == [(0, None), (1, "(b, 8)")]
    assert specs.shapes_line == 22 and specs.platforms is None


def test_constraints_are_the_modules_shape_assertions(mlp_events: list[EventBase]) -> None:
    dims = one(mlp_events, DimsSolved)
    ns = namespace_of(MLP)
    module = plain_export(ns).mlir_module()
    # JAX's own texts: the error message of each shape_assertion custom call in the module
    messages = re.findall(r'error_message = "((?:[^"\\]|\\.)*)"', module)
    assert [c.message for c in dims.constraints] == messages
    assert [c.text for c in dims.constraints] == ["args[1].shape[0] >= 1"]
    assert [(v.name, v.solved_as, v.value) for v in dims.variables] == [
        ("b", "args[1].shape[0]", ns["x"].shape[0])
    ]
    assert dims.shape_assertions == len(messages)


def test_constraints_of_a_multiple_and_a_shared_variable(probe_runner: Runner) -> None:
    source = (
        "import numpy as np\n"
        "def f(x, y):\n"
        "    return x.sum() + y.sum()\n"
        "args = (np.ones((4, 8), np.float32), np.ones((2,), np.float32))\n"
        "shapes = ['(2*b, 8)', '(b,)']\n"
    )
    ctx = probe_runner(EXHIBIT, source)
    dims = ctx.one(DimsSolved)
    ns: dict[str, Any] = {}
    exec(source, ns)
    module = plain_export(ns).mlir_module()
    messages = re.findall(r'error_message = "((?:[^"\\]|\\.)*)"', module)
    assert [c.message for c in dims.constraints] == messages
    assert [c.text for c in dims.constraints] == [
        "mod(args[0].shape[0], 2) == 0",
        "floordiv(args[0].shape[0], 2) >= 1",
        "args[1].shape[0] == floordiv(args[0].shape[0], 2)",
    ]
    assert [(v.name, v.value) for v in dims.variables] == [("b", 2)]
    # the other size: b doubled to 4, so x is (8, 8) and y (4,); sum = 64 + 4
    rt = ctx.one(ExportRoundTripped)
    assert [(c.label, c.arg_shapes, c.equal, c.constraint_check) for c in rt.calls] == [
        ("args", ["f32[4,8]", "f32[2]"], True, False),
        ("b=4", ["f32[8,8]", "f32[4]"], True, False),
        ("b=0", ["f32[0,8]", "f32[0]"], False, True),
    ]
    # b=0 breaks floordiv(args[0].shape[0], 2) >= 1: JAX's own refusal of the call
    back: Any = jax.export.deserialize(plain_export(ns).serialize())
    with pytest.raises(ValueError) as refused:
        back.call(np.ones((0, 8), np.float32), np.ones((0,), np.float32))
    assert rt.calls[2].error == f"ValueError: {refused.value}"
    assert "Expected value >= 1 for dimension variable 'b'" in str(refused.value)


def test_round_trip_equals_numpy(mlp_run: tuple[list[EventBase], Any]) -> None:
    mlp_events, probes = mlp_run
    rt = one(mlp_events, ExportRoundTripped)
    ns = namespace_of(MLP)
    blob = probes.serialize()
    assert rt.serialized_bytes == len(blob)
    back: Any = jax.export.deserialize(blob)
    assert rt.same_fields and rt.callable_here
    assert rt.backend == jax.export.default_export_platform()
    params, x = ns["args"]
    x6 = np.resize(x, (6, 8))
    compared, (check,) = rt.calls[:2], rt.calls[2:]
    for call, xs in zip(compared, (x, x6), strict=True):
        got = np.asarray(back.call(params, xs))
        np.testing.assert_allclose(got, mlp_numpy(params, xs), rtol=1e-5, atol=1e-6)
        want = np.asarray(jax.jit(ns["f"])(params, xs))
        assert call.max_abs_diff == float(np.max(np.abs(got - want)))
        assert call.equal and call.identical == bool(np.array_equal(got, want))
        assert call.out_avals == [f"f32[{xs.shape[0]},4]"]
    assert [(c.label, c.dim_values) for c in rt.calls] == [
        ("args", {"b": 3}),
        ("b=6", {"b": 6}),
        ("b=0", {"b": 0}),
    ]
    # the module's shape check refuses b=0 with the message of the constraint b >= 1
    with pytest.raises(ValueError) as refused:
        back.call(params, np.zeros((0, 8), np.float32))
    assert check.constraint_check and not check.equal
    assert check.error == f"ValueError: {refused.value}"


def test_a_reshape_that_is_not_polymorphic_fails_with_jaxs_error(probe_runner: Runner) -> None:
    ns = namespace_of(RESHAPE)
    with pytest.raises(jax.errors.InconclusiveDimensionOperation) as plain:
        plain_export(ns)
    with pytest.raises(jax.errors.InconclusiveDimensionOperation) as ours:
        probe_runner(EXHIBIT, RESHAPE.read_text())
    assert str(ours.value) == str(plain.value)
    assert str(ours.value).startswith("Cannot divide evenly the sizes of shapes (b, 8) and (3, -1)")
    explained = explain_error(ours.value, ErrorContext())
    assert explained is not None and "every value of `b`" in explained.explanation


def test_the_cli_reports_the_error_at_the_reshape_line() -> None:
    proc = jaxscope_run(EXHIBIT, RESHAPE, "--json")
    assert proc.returncode == 1, proc.stderr
    events = [EVENT_ADAPTER.validate_json(x) for x in proc.stdout.splitlines() if x.strip()]
    failed = events[-1]
    assert isinstance(failed, RunFailed)
    ns = namespace_of(RESHAPE)
    with pytest.raises(jax.errors.InconclusiveDimensionOperation) as plain:
        plain_export(ns)
    assert failed.message == str(plain.value)
    assert failed.error_class == "InconclusiveDimensionOperation"
    assert failed.source is not None and failed.source.line == 8
    assert "not polymorphic" in (failed.explanation or "")
    # what was asked is shown before the error
    assert [
        e.type for e in events if e.type in {c.model_fields["type"].default for c in EVENTS}
    ] == ["export_specs_built"]


def test_a_shape_dependent_branch_is_explained(probe_runner: Runner) -> None:
    source = (
        "import numpy as np\n"
        "def f(x):\n"
        "    if x.shape[0] > 4:\n"
        "        return x.sum()\n"
        "    return x.mean()\n"
        "args = (np.ones((6, 8), np.float32),)\n"
        "shapes = ['(b, 8)']\n"
    )
    with pytest.raises(jax.errors.InconclusiveDimensionOperation) as ours:
        probe_runner(EXHIBIT, source)
    assert str(ours.value).startswith("Symbolic dimension comparison 'b' > '4' is inconclusive.")
    explained = explain_error(ours.value, ErrorContext())
    assert explained is not None and "constraints" in (explained.fix or "")


def test_multi_platform_export(probe_runner: Runner) -> None:
    ctx = probe_runner(EXHIBIT, MULTI.read_text())
    exp = plain_export(namespace_of(MULTI))
    e = ctx.one(FunctionExported)
    assert e.platforms == list(exp.platforms) == ["cpu", "cuda"]
    # serialize() is deterministic: the size read once with the fields, once in the round trip
    assert e.serialized_bytes == ctx.one(ExportRoundTripped).serialized_bytes
    module = ctx.one(StablehloExported)
    assert without_locations(module.text) == without_locations(exp.mlir_module())
    assert 'jax.global_constant = "_platform_index"' in module.text
    assert ctx.of_type(DimsSolved) == []  # no symbolic dimension
    rt = ctx.one(ExportRoundTripped)
    ns = namespace_of(MULTI)
    if jax.export.default_export_platform() in ("cpu", "cuda"):
        assert [(c.label, c.equal) for c in rt.calls] == [("args", True)]
        back: Any = jax.export.deserialize(exp.serialize())
        got = np.asarray(back.call(*ns["args"]))
        np.testing.assert_allclose(got, np.cumsum(ns["args"][0]))


def test_args_that_break_a_given_constraint_are_refused_by_the_module(
    probe_runner: Runner,
) -> None:
    source = (
        "import numpy as np\n"
        "def f(x):\n"
        "    return x.sum(axis=1)\n"
        "args = (np.ones((3, 8), np.float32),)\n"
        "shapes = ['(b, 8)']\n"
        "constraints = ['b >= 5']\n"
    )
    ctx = probe_runner(EXHIBIT, source)
    ns: dict[str, Any] = {}
    exec(source, ns)
    specs = jax.export.symbolic_args_specs(ns["args"], ns["shapes"], constraints=ns["constraints"])
    exp = jax.export.export(jax.jit(ns["f"]))(*specs)
    dims = ctx.one(DimsSolved)
    # the given constraint is asserted in the module too, after the derived b >= 1
    messages = re.findall(r'error_message = "((?:[^"\\]|\\.)*)"', exp.mlir_module())
    assert [c.message for c in dims.constraints] == messages
    assert [c.text for c in dims.constraints] == [
        "args[0].shape[0] >= 1",
        "args[0].shape[0] - 5 >= 0",
    ]
    assert [(v.name, v.value) for v in dims.variables] == [("b", None)]
    back: Any = jax.export.deserialize(exp.serialize())
    with pytest.raises(ValueError) as refused:
        back.call(*ns["args"])
    rt = ctx.one(ExportRoundTripped)
    assert [(c.label, c.error) for c in rt.calls] == [("args", f"ValueError: {refused.value}")]
    # jax 0.10.2 checks only the derived constraints before compiling; a given one fails in
    # XLA's shape refinement of the module, with this terse message
    assert str(refused.value).startswith("Error refining shapes.")


def test_an_export_for_another_platform_is_not_called_here(probe_runner: Runner) -> None:
    source = (
        "import numpy as np\n"
        "def f(x):\n"
        "    return x * 2\n"
        "args = (np.ones(3, np.float32),)\n"
        "platforms = ['tpu']\n"
    )
    ctx = probe_runner(EXHIBIT, source)
    rt = ctx.one(ExportRoundTripped)
    assert not rt.callable_here and rt.calls == []
    assert rt.note is not None and "tpu" in rt.note and rt.same_fields
    assert ctx.one(FunctionExported).platforms == ["tpu"]


@pytest.mark.parametrize(
    ("shapes", "message"),
    [
        ("['(b, 8)']", "`shapes` has 1 entries but `args` has 2 arguments"),
        ("[None, 3]", "`shapes` must be a str"),
        ("[None, '(b + , 8)']", "syntax error in symbolic shape '(b + , 8)'"),
    ],
)
def test_bad_shapes_are_blamed_on_their_line(
    probe_runner: Runner, shapes: str, message: str
) -> None:
    source = (
        "import numpy as np\n"
        "def f(w, x):\n"
        "    return x @ w\n"
        "args = (np.ones((8, 2), np.float32), np.ones((3, 8), np.float32))\n"
        f"shapes = {shapes}\n"
    )
    with pytest.raises(Exception) as raised:
        probe_runner(EXHIBIT, source)
    assert message in str(raised.value)
    assert getattr(raised.value, BLAME_ATTR)[0] == 5


def test_a_big_module_is_summarised() -> None:
    small = StablehloExported(text="a\n", line_count=1, byte_count=2, shape_assertions=0)
    assert small.summarised() is None
    text = "".join(f"  %{i} = stablehlo.add %a, %b : tensor<f32>\n" for i in range(20_000))
    big = StablehloExported(
        text=text, line_count=20_000, byte_count=len(text.encode()), shape_assertions=0
    )
    summary = big.summarised()
    assert summary is not None and not summary.complete
    assert len(summary.text.encode()) <= MODULE_SUMMARY_BYTES
    assert text.startswith(summary.text) and summary.text.endswith("\n")
    assert summary.byte_count == big.byte_count


def test_print_artefacts(mlp_run: tuple[list[EventBase], Any]) -> None:
    mlp_events, exp = mlp_run
    artefacts = EXHIBITS[EXHIBIT].artefacts
    assert artefacts["stablehlo"](mlp_events) == one(mlp_events, StablehloExported).text
    fields = json.loads(artefacts["exported"](mlp_events) or "")
    assert fields == {
        "fun_name": "f",
        "in_avals": ["f32[16]", "f32[4]", "f32[8,16]", "f32[16,4]", "f32[b,8]"],
        "out_avals": ["f32[b,4]"],
        "platforms": [jax.export.default_export_platform()],
        "calling_convention_version": exp.calling_convention_version,
        "nr_devices": 1,
        "module_kept_var_idx": [0, 1, 2, 3, 4],
        "uses_global_constants": True,
        "disabled_safety_checks": [],
        "ordered_effects": [],
        "unordered_effects": [],
        "in_shardings_hlo": [None] * 5,
        "out_shardings_hlo": [None],
        "serialized_bytes": len(exp.serialize()),
        "dim_vars": {"b": "args[1].shape[0]"},
        "constraints": ["args[1].shape[0] >= 1"],
    }
    rt = json.loads(artefacts["roundtrip"](mlp_events) or "")
    calls = one(mlp_events, ExportRoundTripped).calls
    compared = [c for c in calls if not c.constraint_check]
    assert [c.label for c in calls] == ["args", "b=6", "b=0"] and len(compared) == 2
    assert rt == {
        "serialized_bytes": len(exp.serialize()),
        "same_fields": True,
        "callable_here": True,
        "equal": True,
        "max_abs_diff": max(c.max_abs_diff for c in compared if c.max_abs_diff is not None),
        "calls": [
            {
                "label": c.label,
                "dim_values": c.dim_values,
                "equal": not c.constraint_check,
                "identical": c.identical,
                "max_abs_diff": c.max_abs_diff,
                "error": c.error,
                "constraint_check": c.constraint_check,
            }
            for c in calls
        ],
    }


def golden_streams() -> list[Path]:
    return sorted((HERE / "golden").glob("*.events.jsonl"))


def comparable(events: list[EventBase]) -> list[dict[str, Any]]:
    """This exhibit's events without what differs per run: wall times (``*_ms``) and the
    module's source locations (the probe's own file and line among them), with the sizes that
    include them (the text's, the serialized module's)."""
    varying = ("serialized_bytes", "byte_count")

    def clean(value: Any) -> Any:
        if isinstance(value, dict):
            return {
                k: clean(v) for k, v in value.items() if not k.endswith("_ms") and k not in varying
            }
        if isinstance(value, list):
            return [clean(v) for v in value]
        return value

    out = []
    for e in events:
        if not isinstance(e, EVENTS):
            continue
        d = clean(e.model_dump(exclude={"seq", "run_id"}))
        if isinstance(e, StablehloExported):
            d["text"] = without_locations(d["text"])
            d.pop("line_count")
        out.append(d)
    return out


@pytest.mark.parametrize("golden", golden_streams(), ids=lambda p: p.name)
def test_golden_stream_is_the_probes(golden: Path, probe_runner: Runner) -> None:
    """The golden (``jaxscope run ID examples/NAME.py --json``, the real sandbox) parses with the
    event union and holds what the probe emits now."""
    lines = [line for line in golden.read_text().splitlines() if line.strip()]
    stream = [EVENT_ADAPTER.validate_json(line) for line in lines]
    assert isinstance(stream[-1], RunFinished)
    assert [e.seq for e in stream] == list(range(len(stream)))
    example = EXAMPLES / (golden.name.removesuffix(".events.jsonl") + ".py")
    ctx = probe_runner(EXHIBIT, example.read_text())
    assert comparable(stream) == comparable(ctx.events)
    assert comparable(stream), "the golden holds none of this exhibit's events"


def test_a_shape_dtype_struct_argument_is_refused_at_the_args_line(probe_runner: Runner) -> None:
    """The JAX docs' form (a ShapeDtypeStruct of ``export.symbolic_shape``) is refused at the
    ``args`` line with the snippet's form of the same export; the suggested snippet exports to
    the same avals as JAX's own export of the docs' form."""
    source = (
        "import jax\n"
        "import jax.numpy as jnp\n"
        "from jax import export\n"
        "def f(x):\n"
        "    return jnp.concatenate([x, x], axis=1)\n"
        'args = (jax.ShapeDtypeStruct(export.symbolic_shape("a, b"), jnp.float32),)\n'
    )
    with pytest.raises(Exception) as raised:
        probe_runner(EXHIBIT, source)
    message = str(raised.value)
    assert message.startswith("args[0] is a jax.ShapeDtypeStruct (a, b)")
    assert "np.ones((3, 3), np.float32)" in message and 'shapes = ["(a, b)"]' in message
    assert getattr(raised.value, BLAME_ATTR)[0] == 6

    fixed = (
        "import jax.numpy as jnp\n"
        "import numpy as np\n"
        "def f(x):\n"
        "    return jnp.concatenate([x, x], axis=1)\n"
        "args = (np.ones((3, 3), np.float32),)\n"
        'shapes = ["(a, b)"]\n'
    )
    spec: Any = jax.ShapeDtypeStruct
    docs = jax.export.export(jax.jit(lambda x: jax.numpy.concatenate([x, x], axis=1)))(
        spec(jax.export.symbolic_shape("a, b"), np.float32)
    )
    exported = probe_runner(EXHIBIT, fixed).one(FunctionExported)
    out_avals: Any = docs.out_avals
    assert [a.aval.short for a in exported.out_avals] == [
        a.str_short(short_dtypes=True) for a in out_avals
    ]
