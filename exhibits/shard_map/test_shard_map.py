"""Tests of the shard_map exhibit's probe: every artefact against JAX itself.

Truths: ``jax.jit(jax.shard_map(...))(*args)`` and ``jax.make_jaxpr(jax.shard_map(...))`` run
on a separately loaded copy of the snippet (their verdict, error class and message, body
jaxpr), ``NamedSharding(mesh, spec).shard_shape`` for per-device shapes, the mesh axes named in
each spec for the varying axes of the inputs, the snippet's ``reference`` and the golden files
(``golden/regen.py``, plain JAX).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jax
import numpy as np
import pytest
from jax.sharding import NamedSharding, PartitionSpec
from jaxscope.protocol import RunOptions

from exhibits.conftest import EXHIBITS, FakeContext, run_probe
from exhibits.shard_map.events import ShardMapBodyTraced, ShardMapChecked, ShardMapOutputsAssembled
from exhibits.shard_map.golden.regen import EXAMPLES, golden, load, normalised
from testkit import run_cli

GOLDEN = EXHIBITS / "shard_map" / "golden"
EXAMPLE_PATHS = {p.stem: p for p in EXAMPLES}
RUNNING = ["all_gather_cols", "ppermute_ring", "psum_rows"]
FAILING = {
    "indivisible_spec": "divisibility",
    "unknown_axis": "unknown_axis",
    "out_replication": "replication",
}

HEADER = """
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P

mesh = jax.make_mesh({mesh_shape}, ("x", "y"), axis_types=(AxisType.Auto,) * 2)
"""

# (body, in_specs, out_specs, args, extra lines) -> the check expected to fail (None: passes).
SPEC_TABLE: list[tuple[str, str, str, str, str, str | None]] = [
    ("a * 2", "(P('x', 'y'),)", "P('x', 'y')", "(jnp.ones((8, 4)),)", "", None),
    ("jax.lax.psum(a, 'y')", "(P('x', 'y'),)", "P('x', None)", "(jnp.ones((8, 4)),)", "", None),
    ("jax.lax.psum(a, ('x', 'y'))", "(P('x', 'y'),)", "P()", "(jnp.ones((8, 4)),)", "", None),
    ("a * 2", "(P(('x', 'y')),)", "P(('x', 'y'))", "(jnp.ones((16, 3)),)", "", None),
    ("a * 2", "(P('x', 'z'),)", "P('x', 'y')", "(jnp.ones((8, 4)),)", "", "unknown_axis"),
    ("a * 2", "(P('x', 'y'),)", "P('w')", "(jnp.ones((8, 4)),)", "", "unknown_axis"),
    ("a * 2", "(P('x'), P())", "P('x')", "(jnp.ones((8, 4)),)", "", "in_arity"),
    ("a * 2", "(P('x', 'y', None),)", "P('x', 'y')", "(jnp.ones((8, 4)),)", "", "spec_rank"),
    ("a * 2", "(P('x'),)", "P('x')", "(jnp.ones((6, 4)),)", "", "divisibility"),
    ("a * 2", "(P(None, ('x', 'y')),)", "P()", "(jnp.ones((8, 4)),)", "", "divisibility"),
    ("a * 2", "(P('x', 'y'),)", "(P('x', 'y'), P())", "(jnp.ones((8, 4)),)", "", "out_arity"),
    ("a * 2", "(P('x', 'y'),)", "P('x', 'y', None)", "(jnp.ones((8, 4)),)", "", "out_rank"),
    ("a.sum()", "(P('x', 'y'),)", "P('x')", "(jnp.ones((8, 4)),)", "", "out_rank"),
    ("a * 2", "(P('x', 'y'),)", "P('x', None)", "(jnp.ones((8, 4)),)", "", "replication"),
    ("a * 2", "(P('x', 'y'),)", "P()", "(jnp.ones((8, 4)),)", "", "replication"),
    ("a * 2", "(P('x', 'x'),)", "P('x')", "(jnp.ones((8, 8)),)", "", "duplicate_axis"),
    (
        "a * 2",
        "(P('x', 'y'),)",
        "P('x', None)",
        "(jnp.ones((8, 4)),)",
        "check_vma = False",
        None,
    ),
]


def _source(body: str, in_specs: str, out_specs: str, args: str, extra: str) -> str:
    return (
        HEADER.format(mesh_shape="(4, 2)")
        + f"\n\ndef f(a):\n    return {body}\n\n\nin_specs = {in_specs}\nout_specs = {out_specs}\n"
        + f"args = {args}\n{extra}\n"
    )


def _plain(ns: dict[str, Any]) -> tuple[Any, Exception | None]:
    """``jax.jit(jax.shard_map(...))(*args)`` of a plain namespace: (outputs, error)."""
    fun = jax.shard_map(
        ns["f"],
        mesh=ns["mesh"],
        in_specs=ns["in_specs"],
        out_specs=ns["out_specs"],
        check_vma=ns.get("check_vma", True),
    )
    try:
        return jax.jit(fun)(*ns["args"]), None
    except Exception as exc:
        return None, exc


def _exec(source: str) -> dict[str, Any]:
    ns: dict[str, Any] = {"__name__": "snippet"}
    exec(compile(source, "<snippet>", "exec"), ns)
    return ns


@pytest.mark.parametrize("row", SPEC_TABLE, ids=lambda r: f"{r[1]}->{r[2]}:{r[5]}")
def test_verdict_equals_jax_on_a_table_of_specs(
    row: tuple[str, str, str, str, str, str | None],
) -> None:
    *parts, expected = row
    source = _source(*parts)
    ctx = run_probe("shard_map", source)
    checked = ctx.one(ShardMapChecked)
    _, error = _plain(_exec(source))
    assert checked.ok == (error is None)
    assert checked.check == expected
    statuses = [c.status for c in checked.checks]
    if error is None:
        assert checked.error_class is None and checked.message is None
        assert set(statuses) <= {"passed", "off"}
        assert ("off" in statuses) == ("check_vma = False" in source)
        ctx.one(ShardMapOutputsAssembled)
    else:
        assert checked.error_class == type(error).__name__
        assert checked.message == str(error)
        failed = [c for c in checked.checks if c.status == "failed"]
        assert [c.name for c in failed] == [expected]
        # JAX's message, from JAX's own helper, for the failed check
        assert failed[0].message == str(error) and failed[0].error_class == type(error).__name__
        i = statuses.index("failed")
        assert set(statuses[:i]) == {"passed"} or i == 0
        assert set(statuses[i + 1 :]) <= {"not_reached"}
        assert failed[0].faults, "no spec entry at fault"
        assert not ctx.of_type(ShardMapOutputsAssembled)


def test_a_body_error_propagates_with_the_verdict() -> None:
    source = _source(
        "a @ jnp.ones((3, 3))", "(P('x', 'y'),)", "P('x', 'y')", "(jnp.ones((8, 4)),)", ""
    )
    with pytest.raises(TypeError) as info:
        run_probe("shard_map", source)
    _, error = _plain(_exec(source))
    assert type(error) is TypeError and str(error) == str(info.value)


@pytest.fixture(scope="module", params=sorted(EXAMPLE_PATHS))
def example(request: pytest.FixtureRequest) -> tuple[str, FakeContext]:
    name = request.param
    return name, run_probe("shard_map", EXAMPLE_PATHS[name].read_text())


def test_examples_verdicts_equal_the_golden_files(example: tuple[str, FakeContext]) -> None:
    name, ctx = example
    truth = golden(EXAMPLE_PATHS[name])
    assert json.loads((GOLDEN / f"{name}.json").read_text()) == normalised(truth)
    checked = ctx.one(ShardMapChecked)
    assert checked.ok == truth["ok"] == (name in RUNNING)
    if not truth["ok"]:
        assert checked.check == FAILING[name]
        assert (checked.error_class, checked.message) == (truth["error_class"], truth["message"])


def test_per_device_shapes_equal_named_sharding_shard_shape(
    example: tuple[str, FakeContext],
) -> None:
    name, ctx = example
    ns = load(EXAMPLE_PATHS[name])
    traced = ctx.of_type(ShardMapBodyTraced)
    if name in ("indivisible_spec", "unknown_axis"):
        assert not traced  # JAX stops before the body
        return
    (body,) = traced
    specs = jax.tree.leaves(
        jax.tree.broadcast(ns["in_specs"], tuple(ns["args"]), is_leaf=lambda x: x is None),
        is_leaf=lambda x: isinstance(x, PartitionSpec),
    )
    for view, spec, arg in zip(body.inputs, specs, jax.tree.leaves(ns["args"]), strict=True):
        want = NamedSharding(ns["mesh"], spec).shard_shape(np.shape(arg))
        assert view.aval.shape == list(want)
        assert view.global_shape == list(np.shape(arg))
        named = {n for e in spec if e is not None for n in (e if isinstance(e, tuple) else (e,))}
        assert set(view.vma) == named  # inputs vary over exactly the axes their spec names
        assert view.aval.short.endswith("}") == bool(named)


def test_body_jaxpr_and_collectives_equal_plain_make_jaxpr(
    example: tuple[str, FakeContext],
) -> None:
    name, ctx = example
    if name not in RUNNING:
        return
    ns = load(EXAMPLE_PATHS[name])
    fun = jax.shard_map(
        ns["f"], mesh=ns["mesh"], in_specs=ns["in_specs"], out_specs=ns["out_specs"]
    )
    closed = jax.make_jaxpr(fun)(*ns["args"])
    (eqn,) = [e for e in closed.eqns if e.primitive.name == "shard_map"]
    body = ctx.one(ShardMapBodyTraced)
    assert body.jaxpr is not None and body.jaxpr_note is None
    assert body.jaxpr.text == str(type(closed)(eqn.params["jaxpr"], ()))
    expected = {
        "psum_rows": [("psum_invariant", ["y"])],
        "all_gather_cols": [("all_gather", ["y"]), ("pvary", ["x", "y"])],  # pvary: the literal 2.0
        "ppermute_ring": [("ppermute", ["x"])],
    }[name]
    assert [(c.primitive, c.axes) for c in body.collectives] == expected
    prims = [e.primitive.name for e in eqn.params["jaxpr"].eqns]
    source = EXAMPLE_PATHS[name].read_text().splitlines()
    for c in body.collectives:
        assert prims[c.eqn_index] == c.primitive
        # the snippet's line the eqn came from (JAX's source_info), as the view quotes it
        assert c.source is not None
        # (the examples have no '#' inside strings: the comment starts at the first '#')
        assert c.source_text == source[c.source.line - 1].split("#")[0].strip()
    if name == "psum_rows":  # the body's psum_invariant is the snippet's lax.psum, at its line
        (c,) = body.collectives
        psum_line = next(i for i, t in enumerate(source, 1) if "jax.lax.psum(" in t)
        assert c.source is not None and c.source.line == psum_line
    # each value's varying axes as JAX prints them in the body jaxpr: name:f32[..]{V:...}
    for v in body.values:
        assert f"{v.name}:{v.aval.short}" in body.jaxpr.text
        vma = (
            ""
            if not v.vma
            else "{V:" + (v.vma[0] if len(v.vma) == 1 else "(" + ",".join(v.vma) + ")") + "}"
        )
        assert v.aval.short.endswith(vma) if vma else "{V:" not in v.aval.short


def test_outputs_equal_plain_shard_map_and_the_reference(
    example: tuple[str, FakeContext],
) -> None:
    name, ctx = example
    truth = golden(EXAMPLE_PATHS[name])
    if not truth["ok"]:
        return
    ns = load(EXAMPLE_PATHS[name])
    assembled = ctx.one(ShardMapOutputsAssembled)
    assert assembled.reference == "reference"
    refs = jax.tree.leaves(ns["reference"](*ns["args"]))
    for out, want, shape, blocks, ref in zip(
        assembled.outputs,
        truth["outputs"],
        truth["output_shapes"],
        truth["blocks"],
        refs,
        strict=True,
    ):
        assert out.shape == shape
        assert [[int(s.device.split(":")[-1]), s.index] for s in out.shards] == blocks
        for s in out.shards:
            assert s.shape == [b - a for a, b in s.index]
        np.testing.assert_allclose(np.asarray(want), np.asarray(ref), rtol=1e-6)
        assert out.matches_reference is True and out.max_abs_diff == pytest.approx(0.0, abs=1e-5)


def test_faults_name_the_spec_entry(example: tuple[str, FakeContext]) -> None:
    name, ctx = example
    checked = ctx.one(ShardMapChecked)
    failed = [c for c in checked.checks if c.status == "failed"]
    if name in RUNNING:
        assert not failed
        return
    (check,) = failed
    faults = [(f.specs, f.path, f.entries, f.axes) for f in check.faults]
    assert (
        faults
        == {
            "indivisible_spec": [("in_specs", "[0]", [0], ["x"])],
            "unknown_axis": [("in_specs", "[0]", [1], ["z"])],
            "out_replication": [("out_specs", "", [], ["y"])],
        }[name]
    )
    for f in check.faults:  # the fault points at a spec the view shows
        assert any(s.specs == f.specs and s.path == f.path for s in checked.specs)


def test_replication_failure_shows_the_outputs_varying_axes_and_a_jaxpr() -> None:
    ctx = run_probe("shard_map", EXAMPLE_PATHS["out_replication"].read_text())
    body = ctx.one(ShardMapBodyTraced)
    assert [o.vma for o in body.outputs] == [["x", "y"]]
    assert body.jaxpr is not None and body.jaxpr_note is not None


def test_f_on_global_arrays_is_the_reference_without_collectives() -> None:
    source = _source(
        "a * 2", "(P('x', 'y'),)", "P('x', 'y')", "(jnp.arange(32.).reshape(8, 4),)", ""
    )
    assembled = run_probe("shard_map", source).one(ShardMapOutputsAssembled)
    assert assembled.reference == "f"
    assert assembled.outputs[0].matches_reference is True
    blockwise_not = _source(
        "a.sum(axis=0, keepdims=True)",
        "(P('x', None),)",
        "P('x', None)",
        "(jnp.arange(32.).reshape(8, 4),)",
        "",
    )
    out = run_probe("shard_map", blockwise_not).one(ShardMapOutputsAssembled).outputs[0]
    assert out.shape == [4, 4] and out.matches_reference is False  # f(global) is (1, 4)
    with_psum = run_probe(
        "shard_map",
        _source(
            "jax.lax.psum(a, 'y')", "(P('x', 'y'),)", "P('x', None)", "(jnp.ones((8, 4)),)", ""
        ),
    )
    assembled = with_psum.one(ShardMapOutputsAssembled)
    assert assembled.reference == "none" and assembled.outputs[0].matches_reference is None


def test_options_spec_and_mesh_replace_the_snippets() -> None:
    source = EXAMPLE_PATHS["psum_rows"].read_text()
    ctx = run_probe("shard_map", source, RunOptions(spec="(P('x', 'z'),)"))
    assert ctx.one(ShardMapChecked).check == "unknown_axis"
    ctx = run_probe(
        "shard_map",
        source,
        RunOptions(mesh="jax.make_mesh((2, 4), ('x', 'y'), axis_types=(AxisType.Auto,) * 2)"),
    )
    checked = ctx.one(ShardMapChecked)
    assert checked.ok and checked.mesh_shape == [2, 4]
    assert ctx.one(ShardMapBodyTraced).inputs[0].aval.shape == [4, 1]


def _cli(path: Path, name: str, status: int = 0) -> str:
    out = run_cli("run", "shard_map", str(path), "--print", name)
    assert out.returncode == status, out.stderr
    return out.stdout.strip()


@pytest.mark.parametrize("name", ["psum_rows", "indivisible_spec"])
def test_cli_prints_the_verdict(name: str) -> None:
    """A failed check is the lesson (the run finishes) and exits 3: JAX rejected the code."""
    truth = golden(EXAMPLE_PATHS[name])
    got = json.loads(_cli(EXAMPLE_PATHS[name], "verdict", 0 if truth["ok"] else 3))
    want_check = None if truth["ok"] else FAILING[name]
    assert {k: got[k] for k in ("ok", "error_class", "check")} == {
        "ok": truth["ok"],
        "error_class": truth.get("error_class"),
        "check": want_check,
    }
    if truth["ok"]:
        assert got["message"] is None
    else:  # JAX's text verbatim (frozenset order follows each process's hash seed: normalised)
        assert normalised({"message": got["message"]}) == normalised({"message": truth["message"]})


def test_a_duplicate_spec_entry_is_a_failed_check_with_the_entries_at_fault() -> None:
    source = _source("a * 2", "(P('x', 'x'),)", "P('x')", "(jnp.ones((8, 8)),)", "")
    checked = run_probe("shard_map", source).one(ShardMapChecked)
    _, error = _plain(_exec(source))
    assert type(error).__name__ == "DuplicateSpecError"
    failed = next(c for c in checked.checks if c.status == "failed")
    assert (failed.name, failed.message, checked.check) == (
        "duplicate_axis",
        str(error),
        failed.name,
    )
    assert [(f.specs, f.path, f.entries, f.axes) for f in failed.faults] == [
        ("in_specs", "[0]", [0, 1], ["x"])
    ]


def test_a_collective_over_an_unknown_axis_keeps_jaxs_error_and_explains_it() -> None:
    source = _source("jax.lax.psum(a, 'z')", "(P('x', 'y'),)", "P()", "(jnp.ones((8, 4)),)", "")
    _, error = _plain(_exec(source))
    assert type(error) is AssertionError  # JAX 0.10.2: pvary's bare assert
    import importlib

    from jaxscope.sandbox.snippet import load_snippet

    ctx = FakeContext(snippet=load_snippet(source))
    with pytest.raises(AssertionError):
        importlib.import_module("exhibits.shard_map.probe").run(ctx)
    checked = ctx.one(ShardMapChecked)
    assert (checked.check, checked.error_class, checked.message) == (
        "body",
        "AssertionError",
        str(error),
    )
    assert checked.explanation is not None
    assert checked.explanation.startswith(
        "axis 'z' is not an axis of the mesh ('x', 'y'): inside shard_map psum"
    )
    # The error panel (run_failed) says it too, with JAX's class and message, at the psum line.
    from jaxscope.sandbox.errors import classify

    with pytest.raises(AssertionError) as info:
        run_probe("shard_map", source)
    failed = classify(info.value, "run", load_snippet(source).f)
    assert (failed.error_class, failed.message) == (
        "AssertionError",
        str(error) or "AssertionError",
    )
    assert failed.explanation == checked.explanation
    lines = source.split("\n")
    assert failed.source is not None and "jax.lax.psum(a, 'z')" in lines[failed.source.line - 1]


EXPLICIT_PSUM_ROWS = _source(
    "jax.lax.psum(a.sum(axis=1, keepdims=True), 'y')",
    "(P('x', 'y'),)",
    "P('x', None)",
    "(jnp.arange(32.0).reshape(8, 4),)",
    "",
).replace(", axis_types=(AxisType.Auto,) * 2", "")


def test_explicit_axes_and_an_unplaced_input_get_a_hint_beside_jaxs_error() -> None:
    """``jax.make_mesh``'s default Explicit axes: JAX compares in_specs with the input's own
    sharding (P(None, None)); the hint's two fixes each run in plain JAX."""
    import importlib

    from jaxscope.sandbox.errors import classify
    from jaxscope.sandbox.snippet import load_snippet

    source = EXPLICIT_PSUM_ROWS
    assert "axis_types" not in source
    _, error = _plain(_exec(source))
    assert type(error) is ValueError and "does not match the specs of the input" in str(error)
    ctx = FakeContext(snippet=load_snippet(source))
    with pytest.raises(ValueError) as info:
        importlib.import_module("exhibits.shard_map.probe").run(ctx)
    checked = ctx.one(ShardMapChecked)
    assert (checked.ok, checked.check, checked.error_class, checked.message) == (
        False,
        None,  # shard_map's own check of the inputs, not the body
        "ValueError",
        str(error),
    )
    hint = checked.explanation
    assert hint is not None
    assert "The mesh's axes are (Explicit, Explicit)" in hint
    assert "this input is P(None, None), not P('x', 'y')" in hint
    assert "axis_types=(AxisType.Auto,) * 2" in hint
    assert "jax.device_put(x, NamedSharding(mesh, P('x', 'y')))" in hint
    failed = classify(info.value, "run", load_snippet(source).f)
    assert (failed.message, failed.explanation) == (str(error), hint)
    lines = source.split("\n")
    assert failed.source is not None and lines[failed.source.line - 1].startswith("in_specs =")
    # Both fixes the hint names run in plain JAX.
    auto = _exec(source.replace('("x", "y"))', '("x", "y"), axis_types=(AxisType.Auto,) * 2)'))
    assert _plain(auto)[1] is None
    place = "args = (jax.device_put(args[0], jax.sharding.NamedSharding(mesh, P('x', 'y'))),)"
    assert _plain(_exec(source + place + "\n"))[1] is None


def test_the_explicit_axes_hint_only_for_that_message() -> None:
    import importlib

    from jaxscope.sandbox.snippet import load_snippet

    probe: Any = importlib.import_module("exhibits.shard_map.probe")
    mesh = jax.make_mesh((4, 2), ("x", "y"))
    assert probe._input_spec_hint(ValueError("something else"), mesh) is None
    source = _source("a * 2", "(P('x', 'y'),)", "P('x', 'y')", "(jnp.ones((6, 4)),)", "")
    ctx = FakeContext(snippet=load_snippet(source))
    probe.run(ctx)  # indivisible: a failed check, JAX's error, no hint
    checked = ctx.one(ShardMapChecked)
    assert checked.check == "divisibility" and checked.explanation is None


@pytest.mark.parametrize(
    ("extra", "options", "words", "setting"),
    [
        ("mesh = 'x'", None, "`mesh` must be a jax.sharding.Mesh", "mesh"),
        ("mesh = 3", None, "`mesh` must be a jax.sharding.Mesh", "mesh"),
        (
            "mesh = jax.sharding.AbstractMesh((4, 2), ('x', 'y'))",
            None,
            "AbstractMesh",
            "mesh",
        ),
        (
            "import numpy as np\nfrom jax.sharding import Mesh\n"
            "mesh = Mesh(np.array(jax.devices()[:4]).reshape(2, 2), ('x', 'x'))",
            None,
            "names mesh axis 'x' more than once",
            "mesh",
        ),
        ("check_vma = 'no'", None, "`check_vma` must be True or False", "check_vma"),
        ("in_specs = 3", None, "`in_specs` must be a PartitionSpec", "in_specs"),
        ("", RunOptions(mesh="jax.make_mesh((9,), ('x',))"), "options.mesh", None),
        ("", RunOptions(mesh="jax.make_mesh((4, 2"), "SyntaxError", None),
        ("", RunOptions(spec="3"), "`options.spec` must be a PartitionSpec", None),
        ("", RunOptions(mesh="'abc'"), "`options.mesh` must be a jax.sharding.Mesh", None),
    ],
)
def test_bad_settings_and_options_are_invalid_snippet_at_their_line(
    extra: str, options: RunOptions | None, words: str, setting: str | None
) -> None:
    from jaxscope.sandbox.errors import classify
    from jaxscope.sandbox.snippet import InvalidSnippet, load_snippet

    source = _source("a * 2", "(P('x', 'y'),)", "P('x', 'y')", "(jnp.ones((8, 4)),)", extra)
    with pytest.raises(InvalidSnippet) as info:
        run_probe("shard_map", source, options)
    failed = classify(info.value, "trace", load_snippet(source).f)
    assert failed.kind == "invalid_snippet" and words in failed.message, failed.message
    lines = source.split("\n")
    want = (
        max(i + 1 for i, t in enumerate(lines) if t.startswith(setting + " =")) if setting else None
    )
    assert (failed.source.line if failed.source else None) == want
    assert "JAX raised this" not in (failed.explanation or "")


# ---- review s11c: every way JAX says "that axis is not the mesh's", and the out_specs line ------


@pytest.mark.parametrize(
    ("body", "error_class", "axis", "prim"),
    [
        ("jax.lax.psum(a, ('x', 'nope'))", ValueError, "nope", "psum"),
        ("jax.lax.all_gather(a, 'nope')", NameError, "nope", None),
        ("a + jax.lax.axis_index('q')", NameError, "q", "axis_index"),
    ],
)
def test_other_collectives_over_an_unknown_axis_are_explained(
    body: str, error_class: type[Exception], axis: str, prim: str | None
) -> None:
    """JAX raises each of these its own way (plain JAX below); the verdict keeps JAX's error and
    adds the same sentence as for ``psum(a, 'nope')``, and the error panel says it too."""
    import importlib

    from jaxscope.sandbox.errors import classify
    from jaxscope.sandbox.snippet import load_snippet

    source = _source(body, "(P('x', 'y'),)", "P('x', 'y')", "(jnp.ones((8, 4)),)", "")
    _, error = _plain(_exec(source))
    assert type(error) is error_class
    ctx = FakeContext(snippet=load_snippet(source))
    with pytest.raises(error_class) as info:
        importlib.import_module("exhibits.shard_map.probe").run(ctx)
    checked = ctx.one(ShardMapChecked)
    assert (checked.check, checked.error_class, checked.message) == (
        "body",
        error_class.__name__,
        str(error),
    )
    want = f"axis '{axis}' is not an axis of the mesh ('x', 'y'): inside shard_map"
    assert checked.explanation is not None and checked.explanation.startswith(want)
    if prim is not None:
        assert f"shard_map {prim} (" in checked.explanation
    failed = classify(info.value, "run", load_snippet(source).f)
    assert failed.explanation == checked.explanation
    assert failed.source is not None
    assert body in source.split("\n")[failed.source.line - 1]


def test_a_collective_over_mesh_axes_is_not_explained_as_unknown() -> None:
    """A psum over ('x', 'y') is fine: no explanation, no error."""
    source = _source(
        "jax.lax.psum(a, ('x', 'y'))", "(P('x', 'y'),)", "P()", "(jnp.ones((8, 4)),)", ""
    )
    checked = run_probe("shard_map", source).one(ShardMapChecked)
    _, error = _plain(_exec(source))
    assert error is None and checked.ok and checked.explanation is None


def test_an_out_specs_axis_the_mesh_lacks_names_the_out_specs_line(tmp_path: Path) -> None:
    source = _source("a * 2", "(P('x', 'y'),)", "P('x', 'w')", "(jnp.ones((8, 4)),)", "")
    _, error = _plain(_exec(source))
    assert type(error) is ValueError and "'w'" in str(error)
    checked = run_probe("shard_map", source).one(ShardMapChecked)
    out_line = next(i for i, t in enumerate(source.split("\n"), 1) if t.startswith("out_specs ="))
    assert (checked.check, checked.line) == ("unknown_axis", out_line)
    path = tmp_path / "s.py"
    path.write_text(source)
    proc = run_cli("run", "shard_map", str(path), "--print", "verdict")
    assert proc.returncode == 3, proc.stderr
    assert json.loads(proc.stdout)["line"] == out_line
    assert f"at line {out_line}" in proc.stderr
