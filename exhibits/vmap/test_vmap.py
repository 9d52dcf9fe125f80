"""Tests of the vmap exhibit's probe: every artefact against JAX itself.

The probe runs in-process (``exhibits/conftest.py``). Truths: a plain ``jax.vmap`` of a separately
loaded copy of the snippet (``golden/regen.py``'s helpers), the batch dims observed inside that
plain ``jax.vmap`` (``BatchTrace.process_primitive`` patched: ``internals.batching_steps.
observe_vmap``), numpy slicing for the per-example shapes, the golden files and the cases'
``.expect.json`` files.
"""

from __future__ import annotations

import ast
import importlib
import json
from pathlib import Path
from typing import Any

import jax
import numpy as np
import pytest
from jaxscope.internals.batching_steps import batching_rules, observe_vmap
from jaxscope.protocol import JaxprStaged, RunOptions
from jaxscope.sandbox.errors import classify
from jaxscope.sandbox.snippet import load_snippet

from exhibits.conftest import EXHIBITS, FakeContext, run_probe
from exhibits.vmap.events import BatchedJaxprStaged, BatchRuleApplied, VmapInputsMapped
from exhibits.vmap.golden.regen import EXAMPLES, golden, load, vmap_parts
from testkit import run_cli

GOLDEN = EXHIBITS / "vmap" / "golden"
CASES = Path(__file__).resolve().parents[2] / "cases"
EXAMPLE_PATHS = {p.stem: p for p in EXAMPLES}
ERROR_EXAMPLES = {"in_axes_mismatch", "inconsistent_sizes", "no_batching_rule"}
RUNNING = sorted(set(EXAMPLE_PATHS) - ERROR_EXAMPLES)
RUNNING_CASES = ["C01_escape_fixed", "C06_vmap_grad_fixed"]


def _path(name: str) -> Path:
    return EXAMPLE_PATHS[name] if name in EXAMPLE_PATHS else CASES / f"{name}.py"


def number(preview: str | None) -> np.ndarray:
    """A value preview (numpy's printout, never summarised for these sizes) as an array."""
    assert preview is not None and "..." not in preview
    return np.asarray(ast.literal_eval(preview), dtype=np.float64)


@pytest.fixture(scope="module", params=RUNNING + RUNNING_CASES)
def example(request: pytest.FixtureRequest) -> tuple[Path, FakeContext]:
    path = _path(request.param)
    return path, run_probe("vmap", path.read_text())


def test_bdims_equal_those_observed_inside_jax_vmap(example: tuple[Path, FakeContext]) -> None:
    path, ctx = example
    ns = load(path)
    args = tuple(ns["args"])
    observed = observe_vmap(
        ns["f"],
        ns.get("in_axes", 0),
        ns.get("out_axes", 0),
        args,
        tuple(ns.get("static_argnums", ())),
    )
    steps = ctx.of_type(BatchRuleApplied)
    assert steps, "no steps"
    # Calls with no mapped input are compared out: vmap also makes them for Python constants
    # (``convert_element_type`` of a literal) that the per-example trace folds into a literal;
    # they cannot map anything (checked below).
    assert [(s.primitive, s.in_bdims, s.out_bdims) for s in steps if _mapped(s.in_bdims)] == [
        (o.primitive, o.in_bdims, o.out_bdims) for o in observed if _mapped(o.in_bdims)
    ]
    for s in steps:
        if not _mapped(s.in_bdims):
            assert all(d is None for d in s.out_bdims)


def _mapped(bdims: list[int | None]) -> bool:
    return any(d is not None for d in bdims)


def test_batched_jaxpr_and_outputs_equal_plain_jax(example: tuple[Path, FakeContext]) -> None:
    path, ctx = example
    staged = ctx.one(BatchedJaxprStaged)
    truth = golden(path)
    assert staged.jaxpr.text == truth["batched_jaxpr"]
    assert staged.matches_jax_vmap and staged.interpreted_text_equal
    assert [o.shape for o in staged.outputs] == truth["output_shapes"]
    for got, want in zip(staged.outputs, truth["outputs"], strict=True):
        # previews print 6 significant digits; matches_jax_vmap is the exact comparison
        np.testing.assert_allclose(
            number(got.preview), np.asarray(want, np.float64), rtol=1e-5, atol=1e-6
        )
    if path.parent == GOLDEN.parent / "examples":
        assert json.loads((GOLDEN / f"{path.stem}.json").read_text()) == truth


def test_per_example_avals_are_the_args_with_the_mapped_axis_removed(
    example: tuple[Path, FakeContext],
) -> None:
    path, ctx = example
    ns = load(path)
    _, args, static = vmap_parts(ns)
    mapped = ctx.one(VmapInputsMapped)
    in_axes = ns.get("in_axes", 0)
    axes = in_axes if isinstance(in_axes, (tuple, list)) else (in_axes,) * len(args)
    want_shapes: list[list[int]] = []
    for i, (arg, axis) in enumerate(zip(args, axes, strict=True)):
        if i in static:
            continue
        for leaf in jax.tree.leaves(arg):
            a = np.asarray(leaf)
            one = np.take(a, 0, axis=axis) if axis is not None else a
            want_shapes.append(list(one.shape))
            assert mapped.axis_size == (a.shape[axis] if axis is not None else mapped.axis_size)
    got = [i.example_aval.shape for i in mapped.inputs if not i.static and i.example_aval]
    assert got == want_shapes
    per_example = ctx.one(JaxprStaged).jaxpr
    assert [v.aval.shape for v in per_example.invars] == want_shapes
    steps = ctx.of_type(BatchRuleApplied)
    # Every batched aval is the per-example aval with the batch axis inserted at its bdim.
    for s in steps:
        pairs = [*zip(s.example_in_avals, s.in_avals, s.in_bdims, strict=True)]
        pairs += [*zip(s.example_out_avals, s.out_avals, s.out_bdims, strict=True)]
        for ex, batched, d in pairs:
            want = list(ex.shape)
            if d is not None:
                assert mapped.axis_size is not None
                want.insert(d, mapped.axis_size)
            assert batched.shape == want


def test_steps_attribute_every_batched_eqn_and_name_the_rule(
    example: tuple[Path, FakeContext],
) -> None:
    _, ctx = example
    staged = ctx.one(BatchedJaxprStaged)
    steps = ctx.of_type(BatchRuleApplied)
    indices = [k for s in steps for k in s.batched_eqn_indices]
    n_out_moves = len(staged.output_moves)
    assert indices == list(range(len(staged.jaxpr.eqns) - n_out_moves))
    for s in steps:
        assert [staged.jaxpr.eqns[k].text for k in s.batched_eqn_indices] == s.emitted
        assert s.mechanism == "rule" and s.rule is not None
        assert s.rule.table == "fancy_primitive_batchers" and s.rule.file and s.rule.line


def test_default_example_is_the_linear_per_example_loss() -> None:
    ctx = run_probe("vmap", EXAMPLE_PATHS["per_example_loss"].read_text())
    ns = load(EXAMPLE_PATHS["per_example_loss"])
    w, b = ns["params"]["w"].astype(np.float64), float(ns["params"]["b"])
    want = (ns["xs"].astype(np.float64) @ w + b - ns["ys"]) ** 2  # numpy, per example
    out = ctx.one(BatchedJaxprStaged).outputs
    np.testing.assert_allclose(number(out[0].preview), want, rtol=1e-5)
    dot = ctx.of_type(BatchRuleApplied)[0]
    assert (dot.primitive, dot.in_bdims, dot.out_bdims) == ("dot_general", [0, None], [0])


def test_moves_and_broadcasts_are_the_rules_own_eqns() -> None:
    ctx = run_probe("vmap", EXAMPLE_PATHS["broadcast_columns"].read_text())
    mul = ctx.of_type(BatchRuleApplied)[0]
    assert mul.in_bdims == [1, 0] and mul.out_bdims == [0]
    assert len(mul.moves) == 1 and "transpose[permutation=(1, 0)]" in mul.moves[0]
    staged = ctx.one(BatchedJaxprStaged)
    assert staged.result_bdims == [0, None]  # the bias came back unmapped
    assert len(staged.output_moves) == 1 and "broadcast_in_dim" in staged.output_moves[0]
    for text in [*mul.moves, *staged.output_moves]:
        assert text in staged.jaxpr.text

    matvec = run_probe("vmap", EXAMPLE_PATHS["matvec_shared_matrix"].read_text())
    staged = matvec.one(BatchedJaxprStaged)
    assert staged.result_bdims == [1] and "transpose" in staged.output_moves[0]


def test_in_axes_and_out_axes_options_override_the_snippet() -> None:
    path = EXAMPLE_PATHS["matvec_shared_matrix"]
    ctx = run_probe("vmap", path.read_text(), RunOptions(out_axes="1"))
    ns = load(path)
    truth = jax.vmap(ns["f"], in_axes=(None, 0), out_axes=1)(*ns["args"])
    staged = ctx.one(BatchedJaxprStaged)
    assert staged.out_axes == "1" and staged.output_moves == []
    assert staged.outputs[0].shape == list(truth.shape) == [4, 5]
    assert staged.jaxpr.text == str(
        jax.make_jaxpr(jax.vmap(ns["f"], in_axes=(None, 0), out_axes=1))(*ns["args"])
    )
    # in_axes as an expression: leave the targets unmapped, so each example meets all of them.
    path = EXAMPLE_PATHS["per_example_loss"]
    ns = load(path)
    ctx = run_probe("vmap", path.read_text(), RunOptions(in_axes="(None, 0, None)"))
    assert [i.bdim for i in ctx.one(VmapInputsMapped).inputs] == [None, None, 0, None]
    staged = ctx.one(BatchedJaxprStaged)
    assert staged.in_axes == "(None, 0, None)" and staged.matches_jax_vmap
    truth = jax.vmap(ns["f"], in_axes=(None, 0, None))(*ns["args"])
    assert staged.outputs[0].shape == list(truth.shape) == [8, 8]


def _failure(source: str) -> Any:
    with pytest.raises(Exception) as info:
        run_probe("vmap", source)
    return classify(info.value, "run", load_snippet(source).f)


@pytest.mark.parametrize("name", sorted(ERROR_EXAMPLES))
def test_error_examples_raise_jaxs_own_error_explained(name: str) -> None:
    path = EXAMPLE_PATHS[name]
    want = json.loads((GOLDEN / f"{name}.json").read_text())
    assert want == golden(path)
    failed = _failure(path.read_text())
    assert failed.error_class == want["error_class"]
    assert failed.message.splitlines()[0] == want["error_first_line"]
    assert failed.explanation and failed.fix
    assert failed.source is not None
    lines = path.read_text().splitlines()
    line = lines[failed.source.line - 1]
    if name == "no_batching_rule":  # the user's line that binds the primitive
        assert "twice_p.bind(y)" in line
        assert failed.during == "while batching (jax.vmap's batching rules)"
    elif name == "in_axes_mismatch":  # vmap rejected the snippet's in_axes: the line setting it
        assert line == "in_axes = (0, 0, None)"
        assert failed.during == "while jax.vmap mapped the arguments (in_axes)"
    else:  # vmap rejected the arguments' sizes: the line setting args
        assert line.startswith("args = (")
        assert failed.during == "while jax.vmap mapped the arguments (in_axes)"
    if name == "inconsistent_sizes":
        assert "axis 0 of argument a of type float32[3]" in failed.message
        assert "axis 0 of argument b of type float32[4]" in failed.message


@pytest.mark.parametrize("case", ["C01_escape_broken", "C06_vmap_grad_broken"])
def test_cases_reproduce_their_errors(case: str) -> None:
    expect = json.loads((CASES / f"{case}.expect.json").read_text())
    failed = _failure((CASES / f"{case}.py").read_text())
    assert failed.error_class == expect["error_class"]
    assert failed.message.splitlines()[0] == expect["error_first_line"]
    assert failed.source is not None and failed.source.line == expect["error_user_line"]
    assert failed.explanation
    if case.startswith("C01"):
        assert "BatchTracer" in failed.message and "BatchTracer" in failed.explanation


@pytest.mark.parametrize("case", RUNNING_CASES)
def test_fixed_cases_reproduce_their_outcomes(case: str) -> None:
    expect = json.loads((CASES / f"{case}.expect.json").read_text())
    ctx = run_probe("vmap", (CASES / f"{case}.py").read_text())
    staged = ctx.one(BatchedJaxprStaged)
    assert staged.jaxpr.text == expect["jaxpr"]
    assert staged.outputs[0].shape == expect["vmap_out_shape"]
    np.testing.assert_allclose(number(staged.outputs[0].preview), expect["vmap_out"], rtol=1e-5)
    assert ctx.one(JaxprStaged).jaxpr.text == expect["per_example_jaxpr"]


def _cli(path: Path, name: str) -> str:
    out = run_cli("run", "vmap", str(path), "--print", name)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_cli_prints_batched_jaxpr_bdims_and_output_shape() -> None:
    path = CASES / "C01_escape_fixed.py"  # static_argnums and in_axes=(0, None)
    ns = load(path)
    assert _cli(path, "batched_jaxpr") == golden(path)["batched_jaxpr"]
    observed = observe_vmap(ns["f"], ns["in_axes"], 0, tuple(ns["args"]), ns["static_argnums"])
    printed = json.loads(_cli(path, "bdims"))
    assert [p for p in printed if _mapped(p[1])] == [
        [o.primitive, o.in_bdims, o.out_bdims] for o in observed if _mapped(o.in_bdims)
    ]
    steps = run_probe("vmap", path.read_text()).of_type(BatchRuleApplied)
    assert printed == [[s.primitive, s.in_bdims, s.out_bdims] for s in steps]
    assert json.loads(_cli(path, "output_shape")) == golden(path)["output_shapes"]


# ---- static arguments stay closed over (fix-review-34 item 3) ----------------------------------

TILE = """
import jax.numpy as jnp


def f(x, n):
    return jnp.tile(x, n)


args = (jnp.ones((4, 3)), 2)
static_argnums = (1,)
"""


@pytest.mark.parametrize(
    ("in_axes_line", "dynamic_axes"),
    [
        ("", 0),  # the default in_axes=0 applies to the dynamic x only
        ("in_axes = (0, None)\n", (0,)),  # one entry per positional argument: static dropped
        ("in_axes = (1,)\n", (1,)),  # one entry per dynamic argument
        ("in_axes = 1\n", 1),
    ],
)
def test_static_argnums_stay_closed_over(in_axes_line: str, dynamic_axes: Any) -> None:
    ctx = run_probe("vmap", TILE + in_axes_line)
    x = jax.numpy.ones((4, 3))

    def f_closed(x: Any) -> Any:
        return jax.numpy.tile(x, 2)

    truth = jax.make_jaxpr(jax.vmap(f_closed, in_axes=dynamic_axes))(x)
    staged = ctx.one(BatchedJaxprStaged)
    assert staged.jaxpr.text == str(truth)
    assert staged.matches_jax_vmap and staged.interpreted_text_equal
    want = jax.vmap(f_closed, in_axes=dynamic_axes)(x)
    assert [o.shape for o in staged.outputs] == [list(want.shape)]
    np.testing.assert_array_equal(number(staged.outputs[0].preview), np.asarray(want))
    mapped = ctx.one(VmapInputsMapped)
    assert [(i.path, i.static) for i in mapped.inputs] == [("args[0]", False), ("args[1]", True)]
    axis = dynamic_axes if isinstance(dynamic_axes, int) else dynamic_axes[0]
    assert mapped.inputs[0].bdim == axis and mapped.axis_size == x.shape[axis]
    per_example = ctx.one(JaxprStaged).jaxpr
    assert [v.aval.shape for v in per_example.invars] == [
        list(np.take(np.asarray(x), 0, axis=axis).shape)
    ]


def test_static_argnums_in_the_middle_keep_their_place() -> None:
    source = (
        "import jax.numpy as jnp\n\n\ndef f(x, n, y):\n    return jnp.tile(x, n) * y\n\n\n"
        "args = (jnp.arange(6.0).reshape(2, 3), 2, jnp.arange(2.0))\nstatic_argnums = (1,)\n"
        "in_axes = (0, None, 0)\n"
    )
    ctx = run_probe("vmap", source)
    x, y = jax.numpy.arange(6.0).reshape(2, 3), jax.numpy.arange(2.0)

    def f_closed(x: Any, y: Any) -> Any:
        return jax.numpy.tile(x, 2) * y

    staged = ctx.one(BatchedJaxprStaged)
    assert staged.jaxpr.text == str(jax.make_jaxpr(jax.vmap(f_closed))(x, y))
    assert staged.matches_jax_vmap
    np.testing.assert_array_equal(
        number(staged.outputs[0].preview), np.asarray(jax.vmap(f_closed)(x, y))
    )
    assert [i.path for i in ctx.one(VmapInputsMapped).inputs] == ["args[0]", "args[1]", "args[2]"]


def test_cli_batched_jaxpr_with_static_and_default_in_axes(tmp_path: Path) -> None:
    path = tmp_path / "tile.py"
    path.write_text(TILE)
    f_closed = lambda x: jax.numpy.tile(x, 2)  # noqa: E731
    truth = jax.make_jaxpr(jax.vmap(f_closed))(jax.numpy.ones((4, 3)))
    assert _cli(path, "batched_jaxpr") == str(truth)


def _failed_run(source: str, options: RunOptions | None = None) -> tuple[FakeContext, Any]:
    snippet = load_snippet(source)
    ctx = FakeContext(snippet=snippet, options=options or RunOptions())
    from exhibits.vmap import probe

    with pytest.raises(Exception) as info:
        probe.run(ctx)
    return ctx, classify(info.value, "trace", snippet.f)


@pytest.mark.parametrize(
    ("options", "in_axes", "line"),
    [
        # the snippet's in_axes: the error points at the line that sets it
        (RunOptions(), "(0, 0, None)", "in_axes = (0, 0, None)"),
        # the view's in_axes box: no snippet line sets it, so f's def line (as before)
        (RunOptions(in_axes="(1, 0, 0)"), "(1, 0, 0)", "def f(a, b):"),
    ],
)
def test_rejected_in_axes_stay_shown_and_point_at_their_line(
    options: RunOptions, in_axes: str, line: str
) -> None:
    source = EXAMPLE_PATHS["in_axes_mismatch"].read_text()
    ctx, failed = _failed_run(source, options)
    (tried,) = ctx.of_type(VmapInputsMapped)
    assert (tried.in_axes, tried.out_axes) == (in_axes, "0")
    assert tried.axis_size is None and tried.inputs == []
    ns: dict[str, Any] = {}
    exec(source, ns)
    with pytest.raises(ValueError) as truth:  # plain jax.vmap with the same axes
        jax.vmap(ns["f"], in_axes=eval(in_axes))(*ns["args"])
    assert (failed.error_class, failed.message) == ("ValueError", str(truth.value))
    assert failed.source is not None
    assert source.splitlines()[failed.source.line - 1] == line


def test_failing_run_streams_the_steps_before_the_failing_eqn() -> None:
    """``no_batching_rule``: the ``sin`` and ``mul`` steps JAX batched are emitted as JAX's own
    batching made them (``observe_vmap`` on the real ``jax.vmap``, up to its error), then a
    ``failed`` step for the eqn whose primitive is not in JAX's batching rule table, then JAX's
    error."""
    path = EXAMPLE_PATHS["no_batching_rule"]
    ns = load(path)
    probe: Any = importlib.import_module("exhibits.vmap.probe")
    ctx = FakeContext(snippet=load_snippet(path.read_text()), options=RunOptions())
    ctx.exhibit = "vmap"
    with pytest.raises(NotImplementedError, match="Batching rule for 'twice' not implemented"):
        probe.run(ctx)
    steps = ctx.of_type(BatchRuleApplied)
    assert not ctx.of_type(BatchedJaxprStaged)
    *done, failed = steps
    observed = observe_vmap(ns["f"], 0, 0, tuple(ns["args"]), until_error=True)
    *observed_done, observed_failed = observed
    assert [(s.primitive, s.in_bdims, s.out_bdims) for s in done] == [
        (o.primitive, o.in_bdims, o.out_bdims) for o in observed_done
    ]
    assert [s.primitive for s in done] == ["sin", "mul"]
    assert all(s.mechanism == "rule" for s in done)
    example = ctx.of_type(JaxprStaged)[0].jaxpr
    assert failed.mechanism == "failed" and failed.primitive == observed_failed.primitive
    assert example.eqns[failed.index].text.split("= ")[1].startswith(failed.primitive)
    assert failed.index == len(done) == 2 and failed.out_bdims == [] and failed.in_bdims == [0]
    assert len(example.eqns) == 4  # the cos after it is never reached
    fancy = batching_rules()
    assert ns["twice_p"] not in fancy
    assert failed.primitive == ns["twice_p"].name
    assert {s.primitive for s in done} <= {p.name for p in fancy}
    assert failed.note and "no batching rule" in failed.note


# Longer than the step-by-step capture (batching_steps.MAX_STEPS = 2,000 eqns): two eqns an
# iteration, 2,200 in all.
LOOP = """
import jax.numpy as jnp

def f(x):
    for _ in range(1_100):
        x = jnp.sin(x) * 0.5
    return x

args = (jnp.ones((4, 3)),)
in_axes = 0
"""


def test_a_program_past_the_step_cap_says_how_many_eqns_have_no_step() -> None:
    from jaxscope.internals import batching_steps

    ctx = run_probe("vmap", LOOP)
    ns = load_snippet(LOOP)
    example = ns.args[0][0]
    n_eqns = len(jax.make_jaxpr(ns.f)(example).jaxpr.eqns)
    assert n_eqns == 2_200 > batching_steps.MAX_STEPS
    steps = ctx.of_type(BatchRuleApplied)
    staged = ctx.one(BatchedJaxprStaged)
    assert [s.index for s in steps] == list(range(batching_steps.MAX_STEPS))
    assert staged.steps_left_out == n_eqns - len(steps) == 200
    assert json.loads(staged.model_dump_json())["steps_left_out"] == 200
    small = run_probe("vmap", EXAMPLE_PATHS["broadcast_columns"].read_text())
    assert "steps_left_out" not in json.loads(small.one(BatchedJaxprStaged).model_dump_json())
