"""The transpose exhibit against JAX itself: the walk's gradient is ``jax.grad``'s bit for bit,
finite differences agree in float64, every accumulation is the sum of its contributions, the
shared cases C20/C22 reproduce, the failure examples show JAX's real errors, and the CLI prints
the same gradient."""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jaxscope.internals.transpose_walk import linearize_vjp, seed_cotangents, walk
from jaxscope.internals.views import preview_value
from jaxscope.protocol import StageStarted
from jaxscope.sandbox.errors import classify
from jaxscope.sandbox.snippet import load_snippet

from exhibits.conftest import CASES, EXHIBITS, FakeContext, run_probe
from exhibits.registry import EXHIBITS as REGISTRY
from exhibits.transpose.events import (
    GradAttempted,
    GradientChecked,
    LinearJaxprStaged,
    TransposeCallOpened,
    TransposeStepped,
)
from exhibits.transpose.probe import nested
from testkit import run_cli

HERE = Path(__file__).resolve().parent
GOLDEN = HERE / "golden"
EXAMPLES = REGISTRY["transpose"].example_paths()
REPO = EXHIBITS.parent


def same_as_golden(got: Any, want: Any) -> None:
    """A gradient (nested lists, ``None`` for an argument not differentiated) equal to the golden
    file's up to float32 rounding: the golden was recorded on another CPU, and XLA's CPU code
    for it (its vector width) orders float32 sums differently (seen: the attention example
    differs in the last bits of 222 of 256 elements on an AMD EPYC). Equality with ``jax.grad``
    in the same process is checked exactly, elsewhere."""
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert (g is None) == (w is None)
        if g is None:
            continue
        ga = np.array(_flat(g), np.float64)
        wa = np.array(_flat(w), np.float64)
        assert ga.shape == wa.shape
        np.testing.assert_allclose(ga, wa, rtol=1e-5, atol=1e-6 * float(np.abs(wa).max()))


def _flat(x: Any) -> list[Any]:
    return [v for y in x for v in _flat(y)] if isinstance(x, list) else [x]


def run_file(path: Path) -> FakeContext:
    return run_probe("transpose", path.read_text())


def attempts(ctx: FakeContext) -> dict[str, GradAttempted]:
    return {a.mode: a for a in ctx.of_type(GradAttempted)}


@pytest.fixture(scope="module")
def shipped() -> dict[str, FakeContext]:
    return {name: run_file(EXAMPLES[name]) for name in ("mlp_loss", "attention", "rnn_loss")}


@pytest.mark.parametrize("name", ["mlp_loss", "attention", "rnn_loss"])
def test_shipped_gradient_is_jax_grad_exactly_and_fd_close(
    shipped: dict[str, FakeContext], name: str
) -> None:
    ctx = shipped[name]
    check = ctx.one(GradientChecked)
    snippet = load_snippet(EXAMPLES[name].read_text())
    args = snippet.args
    argnums = tuple(check.argnums)
    # independent truth: jax.grad of f (of sum(f) for attention's (4, 8) output)
    if name == "attention":
        assert check.seed.startswith("ones(f32[4,8])")
        loss = lambda p, x, n: jnp.sum(snippet.f(p, x, n))  # noqa: E731
    else:
        assert check.seed == "1.0"
        loss = snippet.f
    expected = jax.grad(loss, argnums=argnums)(*args)
    assert check.gradient == [
        nested(expected[argnums.index(i)]) if i in argnums else None for i in range(len(args))
    ]
    assert check.equal_to_jax
    assert check.jax_grad == check.gradient == check.jax_vjp
    assert check.max_rel_err is not None and check.max_rel_err < 1e-6
    assert check.max_abs_err is not None and check.max_abs_err < 1e-6
    golden = json.loads((GOLDEN / f"{name}.json").read_text())
    same_as_golden(check.gradient, golden["gradient"])
    # one step per linear eqn (eqns on residuals only are evaluated forward), last eqn first
    lin = ctx.one(LinearJaxprStaged)
    steps = ctx.of_type(TransposeStepped)
    indices = [s.eqn_index for s in steps]
    assert indices == sorted(indices, reverse=True) and len(set(indices)) == len(indices)
    assert indices[0] == len(lin.jaxpr.eqns) - 1
    assert [s.primitive for s in steps] == [lin.jaxpr.eqns[s.eqn_index].primitive for s in steps]
    assert all(s.rule is not None and s.rule.file and s.rule.line for s in steps)


def test_int_and_static_args_are_not_differentiated(shipped: dict[str, FakeContext]) -> None:
    assert shipped["mlp_loss"].one(GradientChecked).argnums == [0, 1]  # labels are int32
    assert shipped["mlp_loss"].one(GradientChecked).gradient[2] is None
    assert shipped["attention"].one(GradientChecked).argnums == [0, 1]  # num_heads is static


def test_sin_times_x() -> None:
    ctx = run_file(EXAMPLES["sin_times_x"])
    check = ctx.one(GradientChecked)
    assert check.gradient == [float(jax.grad(lambda x: jnp.sin(x) * x)(1.0))]
    assert check.max_abs_err is not None and check.max_abs_err < 1e-9
    with jax.enable_x64(True):
        lin = linearize_vjp(lambda x: jnp.sin(x) * x, (np.float64(1.0),))
        result = walk(lin, seed_cotangents(lin))
        assert float(result.cotangents[0]) == 1.3817732906760363
    # x is read twice: its cotangent is set once, then accumulated
    writes = [w for s in ctx.of_type(TransposeStepped) for w in s.writes]
    modes = [w.mode for w in writes if w.var == lin_input_name(ctx)]
    assert modes == ["set", "accumulate"]
    steps = ctx.of_type(TransposeStepped)
    assert {s.primal_primitive for s in steps} >= {"sin", "mul"}


def lin_input_name(ctx: FakeContext) -> str:
    (invar,) = ctx.one(LinearJaxprStaged).jaxpr.invars
    return invar.name


def _accumulations_sum(fun: Any, args: tuple[Any, ...]) -> int:
    """Check every write: set -> running == contribution; accumulate -> running == previous
    running + contribution (same dtype, numpy's add). Returns the number of accumulations."""
    lin = linearize_vjp(fun, args)
    result = walk(lin, seed_cotangents(lin))
    running: dict[int, Any] = {}
    accumulations = 0
    for step in result.steps:
        for w in step.writes:
            c, r = np.asarray(w.contribution), np.asarray(w.running)
            if w.mode == "set":
                assert id(w.var) not in running
                np.testing.assert_array_equal(r, c)
            else:
                accumulations += 1
                prev = running[id(w.var)]
                np.testing.assert_array_equal(r, (prev + c).astype(r.dtype))
            running[id(w.var)] = r
    grads = jax.grad(fun, argnums=tuple(range(len(args))))(*args)
    for g, e in zip(result.cotangents, jax.tree.leaves(grads), strict=True):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(e))
    return accumulations


def test_each_accumulation_is_the_sum_of_its_contributions() -> None:
    snippet = load_snippet(EXAMPLES["mlp_loss"].read_text())
    p, x, labels = snippet.args
    _accumulations_sum(lambda p, x: snippet.f(p, x, labels), (p, x))
    assert _accumulations_sum(lambda x: jnp.sum(jnp.sin(x) * x * jnp.cos(x)), (jnp.ones(3),)) > 0


def test_linear_jaxpr_is_jax_vjps() -> None:
    ctx = run_file(EXAMPLES["sin_times_x"])
    staged = ctx.one(LinearJaxprStaged)
    # the residual values are the primal quantities the linear eqns read: cos(1), sin(1), 1
    previews = sorted(r.preview or "" for r in staged.residuals)
    assert all(r.role == "residual" for r in staged.residuals)
    assert len(previews) == len(staged.jaxpr.constvars)
    # printed as numpy prints float32 (never float64 digits): 0.540302, 0.841471
    expected = {preview_value(np.float32(np.cos(1.0))), preview_value(np.float32(np.sin(1.0)))}
    assert expected == {"0.540302", "0.841471"}
    assert expected <= {p for p in previews} | {"1.0"}


# ---- cases -----------------------------------------------------------------------------------


def expect(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((CASES / f"{name}.expect.json").read_text())
    return data


@pytest.mark.parametrize("name", ["C22_where_sqrt_broken", "C22_where_sqrt_fixed"])
def test_c22(name: str) -> None:
    ctx = run_file(CASES / f"{name}.py")
    check = ctx.one(GradientChecked)
    exp = expect(name)
    assert check.gradient == [exp["grad"]]
    assert check.finite_difference[0][0] == exp["finite_difference"][0]
    assert check.finite_difference[0][1] is None  # the kink at 0
    if name.endswith("broken"):
        assert check.gradient[0][:2] == ["nan", "nan"]
        _fd_check_leaves_out_the_nans(check)
        # the NaN is made by the mul that sqrt's JVP rule emitted
        nan_steps = [
            s
            for s in ctx.of_type(TransposeStepped)
            if any(w.contribution.nonfinite for w in s.writes)
        ]
        assert nan_steps[0].primal_primitive == "sqrt"
        assert nan_steps[0].source is not None and nan_steps[0].source.line == 7
    else:
        assert check.max_abs_err is not None and check.max_abs_err < 1e-9


def _fd_check_leaves_out_the_nans(check: GradientChecked) -> None:
    """C22 broken: the gradient is [nan, nan, 0.25]. The error figures compare the one element
    where both are finite (index 2); the NaN where the finite difference is 0 (index 0) is a
    disagreement, the verdict's first; the NaN at the kink (index 1) is left out, against
    numpy."""
    x = np.array([-1.0, 0.0, 4.0])
    grad = np.asarray(
        jax.grad(load_snippet((CASES / "C22_where_sqrt_broken.py").read_text()).f)(
            jnp.asarray(x, jnp.float32)
        )
    )
    fd = check.finite_difference[0]
    # numpy's own central difference where sqrt is smooth (x = 4), and d/dx sqrt(x) = 0.25 there
    h = 1e-6
    fd_np = (np.sqrt(4.0 + h) - np.sqrt(4.0 - h)) / (2 * h)
    assert abs(fd[2] - fd_np) < 1e-8
    assert check.compared == 1
    assert check.max_abs_err is not None and check.max_abs_err < 1e-8
    assert check.max_abs_err == abs(0.25 - fd[2])
    assert check.max_rel_err == check.max_abs_err / abs(fd[2])
    bad = [int(i) for i in np.flatnonzero(~np.isfinite(grad))]
    assert bad == [0, 1]
    assert fd[:2] == [0.0, None]  # 0 left of the guard, a kink at 0
    # index 0: NaN where f is smooth (0 left of the guard): the verdict's first disagreement
    assert check.verdict == "disagree" and check.disagree_count == 1 and check.checked == 2
    (first,) = check.disagreements
    assert (first.path, first.index, first.gradient, first.finite_difference, first.kind) == (
        "args[0]",
        [0],
        "nan",
        0.0,
        "nonfinite",
    )
    assert "first at args[0][0]: the gradient is nan where the finite difference is 0.0" in (
        check.headline
    )
    # index 1: the kink, left out (never agreement), with the gradient there
    assert check.not_compared_count == 1
    assert [
        (n.path, n.index, n.gradient, n.gradient_f64, n.finite_difference, n.reason)
        for n in check.not_compared
    ] == [("args[0]", [1], "nan", "nan", None, "kink")]


def test_cli_fd_check_lists_what_it_did_not_compare(tmp_path: Path) -> None:
    proc = run_cli(
        "run", "transpose", str(CASES / "C22_where_sqrt_broken.py"), "--print", "fd_check", cwd=REPO
    )
    # No error JAX raised, but a finding: the gradient disagrees with the finite differences.
    assert proc.returncode == 3, proc.stderr
    assert "the exhibit found a problem (GradientMismatch)" in proc.stderr
    fd = json.loads(proc.stdout)
    assert fd["verdict"] == "disagree" and fd["headline"] in proc.stderr
    assert fd["compared"] == 1 and 0 < fd["max_abs_err"] < 1e-8
    assert [(d["index"], d["gradient"], d["finite_difference"]) for d in fd["disagreements"]] == [
        ([0], "nan", 0.0)
    ]
    assert fd["not_compared"] == [
        {
            "path": "args[0]",
            "index": [1],
            "gradient": "nan",
            "gradient_f64": "nan",
            "finite_difference": None,
            "why": "a kink: the one-sided differences disagree, no derivative to hold it to; "
            "the gradient is nan",
            "reason": "kink",
        },
    ]
    assert fd["not_compared_count"] == 1


def test_c20_int_arg_broken_eager_works_jit_fails() -> None:
    ctx = run_file(CASES / "C20_int_arg_broken.py")
    exp = expect("C20_int_arg_broken")
    by_mode = attempts(ctx)
    assert by_mode["eager"].ok
    jit = by_mode["jit"]
    assert not jit.ok and jit.error_class == exp["error_class"]
    assert jit.message is not None and jit.message.startswith(exp["error_first_line"])
    assert jit.source is not None and jit.source.line == exp["error_user_line"]
    assert jit.explanation and jit.fix
    check = ctx.one(GradientChecked)
    assert check.gradient == [exp["grad"]]
    assert check.equal_to_jax
    assert check.max_rel_err is not None and check.max_rel_err < 1e-6


def test_c20_nondiff_fixed() -> None:
    ctx = run_file(CASES / "C20_nondiff_fixed.py")
    assert all(a.ok for a in ctx.of_type(GradAttempted))
    assert ctx.one(GradientChecked).gradient == [expect("C20_nondiff_fixed")["grad"]]


def _failure(path: Path) -> tuple[FakeContext, Any]:
    snippet = load_snippet(path.read_text())
    ctx = FakeContext(snippet=snippet)
    from exhibits.transpose import probe

    with pytest.raises(Exception) as info:
        probe.run(ctx)
    return ctx, classify(info.value, "trace", snippet.f)


def test_c20_bwd_arity_both_fail_run_failed_at_user_line() -> None:
    exp = expect("C20_bwd_arity_broken")
    ctx, failed = _failure(CASES / "C20_bwd_arity_broken.py")
    assert failed.error_class == exp["error_class"]
    assert failed.message.splitlines()[0] == exp["error_first_line"]
    assert failed.source is not None and failed.source.line == exp["error_user_line"]
    assert failed.explanation and failed.fix
    by_mode = attempts(ctx)
    assert not by_mode["eager"].ok and not by_mode["jit"].ok
    jit_message = by_mode["jit"].message or ""
    assert jit_message.splitlines()[0] == exp["jit_grad_error"].split(": ", 1)[1]


# ---- what cannot work --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "error_class", "marker", "line"),
    [
        # the deepest snippet frame where JAX recorded the op: the JVP rule's bind (line 12)
        ("no_transpose_rule", "NotImplementedError", "Transpose rule", 12),
        ("while_loop_grad", "ValueError", "Reverse-mode differentiation does not work", None),
        ("int_input", "TypeError", "grad requires real- or complex-valued inputs", None),
    ],
)
def test_failures_show_jax_error_and_explanation(
    name: str, error_class: str, marker: str, line: int | None
) -> None:
    ctx, failed = _failure(EXAMPLES[name])
    golden = json.loads((GOLDEN / f"{name}.json").read_text())
    assert failed.error_class == error_class == golden["eager"]["error_class"]
    assert marker in failed.message
    assert failed.message.splitlines()[0] == golden["eager"]["error_first_line"]
    assert failed.explanation and failed.fix
    if line is not None:
        assert failed.source is not None and failed.source.line == line
        assert 16 in [frame.line for frame in failed.traceback]  # f's line that bound it
    for attempt in ctx.of_type(GradAttempted):
        assert not attempt.ok and attempt.explanation and marker in (attempt.message or "")


def test_fori_loop_traced_bound_jit_fails_eager_walks() -> None:
    ctx = run_file(EXAMPLES["fori_loop_bounds"])
    by_mode = attempts(ctx)
    assert by_mode["eager"].ok and not by_mode["jit"].ok
    assert by_mode["jit"].error_class == "ValueError" and by_mode["jit"].explanation
    check = ctx.one(GradientChecked)
    assert check.gradient == [float(jax.grad(lambda x: x**3)(2.0)), None]  # 12.0; n is int
    assert check.gradient[0] == 12.0
    assert any(s.primitive == "scan" for s in ctx.of_type(TransposeStepped))


def test_scan_static_trip_count_transposes() -> None:
    ctx = run_file(EXAMPLES["scan_power"])
    check = ctx.one(GradientChecked)
    assert check.gradient == [[0.75, 12.0]]
    assert check.equal_to_jax


def test_nonscalar_output_shows_grad_error_then_walks_vjp() -> None:
    ctx = run_file(EXAMPLES["nonscalar_output"])
    for attempt in ctx.of_type(GradAttempted):
        assert not attempt.ok and attempt.error_class == "TypeError"
        assert "scalar-output" in (attempt.message or "") and attempt.explanation
    check = ctx.one(GradientChecked)
    x = jnp.array([-1.0, 0.5, 2.0])
    out, f_vjp = jax.vjp(lambda x: jnp.tanh(x) * x, x)
    assert check.gradient == [nested(f_vjp(jnp.ones_like(out))[0])]
    assert check.equal_to_jax


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_every_example_matches_golden(name: str) -> None:
    golden = json.loads((GOLDEN / f"{name}.json").read_text())
    if "gradient" not in golden:
        return  # the failures are checked above
    ctx = run_file(EXAMPLES[name])
    same_as_golden(ctx.one(GradientChecked).gradient, golden["gradient"])
    by_mode = attempts(ctx)
    assert by_mode["eager"].ok == golden["eager"]["ok"]
    assert by_mode["jit"].ok == golden["jit"]["ok"]


# ---- headless -----------------------------------------------------------------------------------


def test_cli_prints_gradient_and_fd_check(tmp_path: Path) -> None:
    code = EXAMPLES["rnn_loss"].read_text()
    path = tmp_path / "rnn.py"
    path.write_text(code)
    outputs = {}
    for name in ("gradient", "fd_check", "linear_jaxpr"):
        proc = run_cli("run", "transpose", str(path), "--print", name, cwd=REPO)
        assert proc.returncode == 0, proc.stderr
        outputs[name] = proc.stdout
    snippet = load_snippet(code)
    expected = jax.grad(snippet.f, argnums=(0, 1, 2))(*snippet.args)
    printed = json.loads(outputs["gradient"])
    # float32 values in float32 digits (as numpy prints them): the same float32, no float64 tail
    assert jax.tree.map(np.float32, printed) == jax.tree.map(
        np.float32, [nested(g) for g in expected]
    )
    # each printed number is the float32's own shortest text (str of a numpy float32)
    assert all(
        repr(v) == str(np.float32(v)) or repr(v) == str(np.float32(v)) + "0" or "e" in repr(v)
        for v in jax.tree.leaves(printed)
        if isinstance(v, float) and np.isfinite(v)
    )
    fd = json.loads(outputs["fd_check"])
    assert fd["max_rel_err"] < 1e-6 and fd["not_compared"] == [] and fd["not_compared_count"] == 0
    assert fd["compared"] == sum(np.size(g) for g in jax.tree.leaves(expected))
    lin = linearize_vjp(snippet.f, snippet.args)
    assert outputs["linear_jaxpr"] == str(lin.closed()) + "\n"


# ---- argnums as jax.grad takes it (fix-review-34 item 1) ---------------------------------------

ARGNUMS_SNIPPET = """
import jax.numpy as jnp


def f(x, y):
    return jnp.sum(jnp.sin(x) * y)


args = (jnp.array([0.5, 1.0]), jnp.float32(3.0))
argnums = {argnums}
"""


@pytest.mark.parametrize(("argnums", "position"), [(-1, 1), ((-2,), 0), ((0, -1), None)])
def test_negative_argnums_as_jax_grad(argnums: Any, position: int | None) -> None:
    ctx = run_probe("transpose", ARGNUMS_SNIPPET.format(argnums=repr(argnums)))
    check = ctx.one(GradientChecked)
    x, y = jnp.array([0.5, 1.0]), jnp.float32(3.0)
    f = lambda x, y: jnp.sum(jnp.sin(x) * y)  # noqa: E731
    want = jax.grad(f, argnums=argnums)(x, y)  # JAX's own reading of the negative index
    if position is not None:
        assert check.argnums == [position]
        expected: list[Any] = [None, None]
        expected[position] = nested(want[0] if isinstance(argnums, tuple) else want)
    else:
        assert check.argnums == [0, 1]
        expected = [nested(want[0]), nested(want[1])]
    assert check.gradient == expected
    assert check.equal_to_jax


def _invalid(exhibit: str, source: str) -> Any:
    snippet = load_snippet(source)
    probe: Any = importlib.import_module(f"exhibits.{exhibit}.probe")
    ctx = FakeContext(snippet=snippet)
    with pytest.raises(Exception) as info:
        probe.run(ctx)
    failed = classify(info.value, "trace", snippet.f)
    return ctx, failed


@pytest.mark.parametrize("exhibit", ["transpose", "nan_finder"])
@pytest.mark.parametrize(
    ("argnums", "jax_words"),
    [
        ("5", "requires at least 6 positional arguments"),
        ("'x'", "cannot be interpreted as an integer"),
        ("(0.5,)", "cannot be interpreted as an integer"),
        ("[[0]]", "cannot be interpreted as an integer"),
        ("-3", "-len(args)"),
    ],
)
def test_bad_argnums_is_invalid_snippet_with_jax_words(
    exhibit: str, argnums: str, jax_words: str
) -> None:
    source = ARGNUMS_SNIPPET.format(argnums=argnums)
    # JAX's own error for the same argnums, from jax.grad itself
    ns: dict[str, Any] = {}
    exec(source, ns)
    with pytest.raises((TypeError, ValueError)) as jax_info:
        jax.grad(ns["f"], argnums=ns["argnums"])(*ns["args"])
    assert jax_words in str(jax_info.value)
    ctx, failed = _invalid(exhibit, source)
    assert failed.kind == "invalid_snippet"
    assert failed.message.startswith(f"`argnums = {argnums}`")
    assert str(jax_info.value) in failed.message
    assert not ctx.events  # refused before anything is traced or walked


@pytest.mark.parametrize("exhibit", ["transpose", "nan_finder"])
def test_empty_argnums_is_invalid_snippet(exhibit: str) -> None:
    source = ARGNUMS_SNIPPET.format(argnums="()")
    ctx, failed = _invalid(exhibit, source)
    assert failed.kind == "invalid_snippet"
    assert "selects no argument" in failed.message and "argnums" in failed.message
    assert not ctx.events  # nothing walked, no "no NaN" answer


NO_FLOAT = """
import jax.numpy as jnp


def f({params}):
    return {body}


args = {args}
"""


@pytest.mark.parametrize("exhibit", ["transpose", "nan_finder"])
@pytest.mark.parametrize(
    ("params", "body", "args", "jax_call_args"),
    [("n", "n * 2.0", "(3,)", (3,)), ("", "1.0", "()", ())],
)
def test_no_floating_argument_says_so_with_jax_grads_error(
    exhibit: str, params: str, body: str, args: str, jax_call_args: tuple[Any, ...]
) -> None:
    source = NO_FLOAT.format(params=params, body=body, args=args)
    ns: dict[str, Any] = {}
    exec(source, ns)
    with pytest.raises(TypeError) as jax_info:
        jax.grad(ns["f"])(*jax_call_args)
    ctx, failed = _invalid(exhibit, source)
    assert failed.kind == "invalid_snippet"
    assert failed.message.startswith("f has no floating-point argument to differentiate")
    assert str(jax_info.value) in failed.message  # what jax.grad(f) says for the same args
    assert not ctx.events


@pytest.mark.parametrize("exhibit", ["transpose", "nan_finder"])
@pytest.mark.parametrize("argnums", ["None", "0"])
def test_complex_argument_is_refused_real_gradients_only(exhibit: str, argnums: str) -> None:
    source = (
        "import jax.numpy as jnp\n\n\ndef f(z):\n    return jnp.sum(jnp.abs(z) ** 2)\n\n\n"
        f"args = (jnp.array([1 + 1j, 2 - 1j], jnp.complex64),)\nargnums = {argnums}\n"
    )
    _, failed = _invalid(exhibit, source)
    assert failed.kind == "invalid_snippet"
    assert "complex" in failed.message and "real gradients only" in failed.message


# ---- one row per leaf (the view's table) and --print gradient for pytree arguments -------------


def test_gradient_has_one_leaf_per_row_with_key_path_and_values(
    shipped: dict[str, FakeContext],
) -> None:
    check = shipped["mlp_loss"].one(GradientChecked)
    snippet = load_snippet(EXAMPLES["mlp_loss"].read_text())
    params, x, _ = snippet.args
    g_params, g_x = jax.grad(snippet.f, argnums=(0, 1))(*snippet.args)
    assert [leaf.path for leaf in check.leaves] == [
        "args[0]['b1']",
        "args[0]['b2']",
        "args[0]['w1']",
        "args[0]['w2']",
        "args[1]",
    ]
    assert [leaf.arg for leaf in check.leaves] == [0, 0, 0, 0, 1]
    expected = [g_params[k] for k in ("b1", "b2", "w1", "w2")] + [g_x]
    primals = [params[k] for k in ("b1", "b2", "w1", "w2")] + [x]
    for leaf, g, p in zip(check.leaves, expected, primals, strict=True):
        assert leaf.aval.shape == list(np.shape(p)) and leaf.aval.short.startswith("f32[")
        truth = np.asarray(g).tolist()  # independent of the probe's formatting
        assert leaf.gradient == leaf.jax_grad == leaf.jax_vjp == truth
        fd = np.array(leaf.finite_difference, dtype=float)  # no kinks here: no None
        assert np.max(np.abs(fd - np.asarray(g, np.float64))) < 1e-6
    # the per-argument lists are the same leaves, in jax.tree.leaves order
    assert check.gradient[0] == [leaf.gradient for leaf in check.leaves[:4]]
    assert check.gradient[1] == check.leaves[4].gradient and check.gradient[2] is None


ORDERED = """import collections
import jax.numpy as jnp
import numpy as np


def f(p, s):
    return jnp.sum(p["z"] * p["a"]["w"] ** 2) + p["a"]["b"] * s


p = collections.OrderedDict(
    z=np.array([1.0, 2.0], np.float32),
    a={"w": np.array([3.0, -1.0], np.float32), "b": np.float32(0.5)},
)
args = (p, 2.0)
"""


def test_pytree_argument_is_its_leaves_in_tree_leaves_order() -> None:
    """An OrderedDict keeps its insertion order in ``jax.tree.leaves`` (not sorted keys), and a
    nested dict is flattened: ``gradient`` per argument is the list of its leaves, each row of
    ``leaves`` one of them with its key path."""
    check = run_probe("transpose", ORDERED).one(GradientChecked)
    snippet = load_snippet(ORDERED)
    grads = jax.grad(snippet.f, argnums=(0, 1))(*snippet.args)
    paths = [
        jax.tree_util.keystr(path) for path, _ in jax.tree_util.tree_flatten_with_path(grads[0])[0]
    ]
    assert paths == ["['z']", "['a']['b']", "['a']['w']"]
    assert [leaf.path for leaf in check.leaves] == [f"args[0]{p}" for p in paths] + ["args[1]"]
    assert check.gradient == [
        [np.asarray(g).tolist() for g in jax.tree.leaves(grads[0])],
        float(grads[1]),
    ]
    assert check.equal_to_jax


def test_cli_prints_a_dict_argument_as_its_leaves(tmp_path: Path) -> None:
    path = tmp_path / "mlp.py"
    path.write_text(EXAMPLES["mlp_loss"].read_text())
    proc = run_cli("run", "transpose", str(path), "--print", "gradient", cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    snippet = load_snippet(path.read_text())
    g_params, g_x = jax.grad(snippet.f, argnums=(0, 1))(*snippet.args)
    printed = json.loads(proc.stdout)
    want = [
        [np.asarray(g).tolist() for g in jax.tree.leaves(g_params)],  # b1, b2, w1, w2
        np.asarray(g_x).tolist(),
        None,  # labels: int32, not differentiated
    ]
    # the same float32 values, printed in float32 digits
    assert jax.tree.map(np.float32, printed) == jax.tree.map(np.float32, want)
    assert printed[2] is None


# ---- inside call steps ------------------------------------------------------------------------


def test_a_scan_step_opens_its_iterations_last_first() -> None:
    source = EXAMPLES["scan_power"].read_text()
    ctx = run_probe("transpose", source)
    steps = ctx.of_type(TransposeStepped)
    (opened,) = ctx.of_type(TransposeCallOpened)
    assert steps[opened.step].primitive == "scan" and opened.primitive == "scan"
    # length=3: scan's transpose walks iterations 2, 1, 0 (all shown: at most 3).
    assert [w.iteration for w in opened.walks] == [2, 1, 0] and opened.more_iterations == 0
    body_line = next(i for i, t in enumerate(source.splitlines(), 1) if "return c * x" in t)
    for w in opened.walks:
        assert w.steps and all(s.source is not None for s in w.steps)
        assert {s.source.line for s in w.steps if s.source} == {body_line}
        assert any(s.primal_primitive == "mul" for s in w.steps)
    # The events come in walk order: the opened call right after its step.
    order = [e for e in ctx.events if isinstance(e, (TransposeStepped, TransposeCallOpened))]
    i = order.index(opened)
    assert isinstance(order[i - 1], TransposeStepped) and order[i - 1].step == opened.step


def test_a_jit_and_a_cond_step_open_their_body() -> None:
    source = (
        "import jax\nimport jax.numpy as jnp\n\n\n"
        "@jax.jit\n"
        "def norm(v):\n"
        "    return jnp.sqrt(jnp.sum(v * v))\n\n\n"
        "def f(x):\n"
        "    y = jax.lax.cond(x[0] > 0, lambda v: jnp.sin(v), lambda v: v * 2.0, x)\n"
        "    return norm(y)\n\n\n"
        "args = (jnp.array([0.5, 2.0]),)\n"
    )
    ctx = run_probe("transpose", source)
    opened = {o.primitive: o for o in ctx.of_type(TransposeCallOpened)}
    assert set(opened) == {"jit", "cond"}
    jit_walk, cond_walk = opened["jit"], opened["cond"]
    assert jit_walk.name == "norm" and len(jit_walk.walks) == 1
    assert {s.primal_primitive for s in jit_walk.walks[0].steps} >= {"sqrt", "mul"}
    assert all(s.source is not None and s.source.line == 7 for s in jit_walk.walks[0].steps)
    # x[0] = 0.5 > 0: cond ran branches[1] (the true branch, sin), whose transpose is a mul by cos.
    assert cond_walk.name == "branch 1"
    assert [s.primal_primitive for s in cond_walk.walks[0].steps] == ["sin"]


# ---- a backward pass that raises: the walk up to the failing eqn ------------------------------


def _jax_transpose_order(path: Path) -> tuple[list[str], Exception]:
    """JAX's own backward pass, observed: the primitive of each transpose rule ``jax.grad(f)``
    calls, in order (every entry of ``ad.primitive_transposes``/``ad.fancy_transposes``
    wrapped for the call), and the error it raises."""
    from jax._src.interpreters import ad  # the registries jax.grad reads

    ns: dict[str, Any] = {"__name__": "snippet"}
    exec(compile(path.read_text(), str(path), "exec"), ns)
    called: list[str] = []
    tables = (ad.primitive_transposes, ad.fancy_transposes)
    saved = [dict(t) for t in tables]

    def recorder(p: Any, rule: Any) -> Any:
        def wrapped(*a: Any, **k: Any) -> Any:
            called.append(p.name)
            return rule(*a, **k)

        return wrapped

    try:
        for table in tables:
            for p, rule in list(table.items()):
                table[p] = recorder(p, rule)
        with pytest.raises(Exception) as info:
            jax.grad(ns["f"])(*ns["args"])
    finally:
        for table, original in zip(tables, saved, strict=True):
            table.clear()
            table.update(original)
    return called, info.value


@pytest.mark.parametrize(
    ("path", "primitive", "has_rule"),
    [
        (EXAMPLES["no_transpose_rule"], "double", False),
        (EXAMPLES["while_loop_grad"], "while", True),  # its rule raises on purpose
        (CASES / "C20_bwd_arity_broken.py", "custom_lin", True),  # custom_vjp's bwd raises
    ],
    ids=["no_transpose_rule", "while_loop_grad", "C20_bwd_arity_broken"],
)
def test_backward_pass_failure_walks_up_to_the_eqn_that_raises(
    path: Path, primitive: str, has_rule: bool
) -> None:
    from jax._src.interpreters import ad  # the registries jax.grad reads

    ctx, failed = _failure(path)
    called, jax_error = _jax_transpose_order(path)
    steps = ctx.of_type(TransposeStepped)
    # The linear jaxpr is shown (linearizing works), then the steps, the failing one last.
    types = [type(e).__name__ for e in ctx.events]
    assert types.index("LinearJaxprStaged") < types.index("TransposeStepped")
    *ran, last = steps
    # JAX's order, up to the failing eqn (whose rule JAX called too, when it has one)
    assert [s.primitive for s in ran] + ([last.primitive] if has_rule else []) == called
    assert all(s.error_class is None for s in ran)
    assert last.primitive == primitive and last.writes == []
    assert (last.error_class, last.error) == (type(jax_error).__name__, str(jax_error))
    # the registry: the rule is missing from both tables exactly when the step says so
    names = {p.name for t in (ad.primitive_transposes, ad.fancy_transposes) for p in t}
    assert (primitive in names) == has_rule == (last.rule is not None)
    lin = ctx.one(LinearJaxprStaged).jaxpr
    assert lin.eqns[last.eqn_index].primitive == primitive
    assert [s.eqn_index for s in steps] == sorted((s.eqn_index for s in steps), reverse=True)
    # The run fails with jax.grad's own error, saying where.
    assert (failed.error_class, failed.message) == (type(jax_error).__name__, str(jax_error))
    assert failed.during == f"while transposing {primitive} (the backward pass of jax.grad)"
    assert not ctx.of_type(GradientChecked)
    # Live (docs/design/0083): the steps as walked, then both attempts, with jax.grad's error.
    assert types[-2:] == ["GradAttempted", "GradAttempted"]
    assert types.index("GradAttempted") > len(types) - 1 - types[::-1].index("TransposeStepped")
    for attempt in ctx.of_type(GradAttempted):
        assert not attempt.ok and attempt.error_class == type(jax_error).__name__


# A custom_vjp bwd that raises another message at each call: the walk's error (its first call) is
# not the eager jax.grad's (its third: the walk, the jit trace, then jax.grad).
BWD_COUNTS = """
import itertools
import jax
import jax.numpy as jnp

calls = itertools.count()

@jax.custom_vjp
def g(x):
    return jnp.sin(x)

def g_fwd(x):
    return jnp.sin(x), x

def g_bwd(r, ct):
    raise ValueError(f"bwd call {next(calls)}")

g.defvjp(g_fwd, g_bwd)

def f(x):
    return OUT

args = (jnp.ones(3),)
"""


def test_a_walk_error_other_than_jax_grads_ends_with_jax_grads_in_stage_trace() -> None:
    """The walk streams live and raises at custom_lin; the eager jax.grad then raises another
    message: the run ends with jax.grad's error, in stage trace and not marked as a transpose
    (as when the attempts came first; docs/design/0083)."""
    from exhibits.conftest import FakeContext
    from exhibits.transpose import probe

    ctx = FakeContext(snippet=load_snippet(BWD_COUNTS.replace("OUT", "g(x).sum()")))
    with pytest.raises(ValueError, match="bwd call 2") as info:
        probe.run(ctx)
    *_, last = ctx.of_type(TransposeStepped)
    assert last.primitive == "custom_lin" and last.error == "bwd call 0"
    assert [a.message for a in ctx.of_type(GradAttempted)] == ["bwd call 1", "bwd call 2"]
    assert getattr(info.value, "_jaxscope_during", None) is None
    assert ctx.events[-1] == StageStarted(stage="trace", call_index=None)
    # jax.grad's own error, in a fresh namespace
    ns: dict[str, Any] = {"__name__": "snippet"}
    exec(BWD_COUNTS.replace("OUT", "g(x).sum()"), ns)
    with pytest.raises(ValueError, match="bwd call 0"):
        jax.grad(ns["f"])(*ns["args"])


def test_a_nonscalar_output_whose_walk_raises_ends_with_the_walks_error() -> None:
    """f returns a vector (jax.grad refuses it; the walk goes on from ones) and its custom_vjp
    bwd raises: the attempts come after the failing step and the run ends with jax.vjp's error,
    marked at custom_lin."""
    from exhibits.conftest import FakeContext
    from exhibits.transpose import probe

    source = BWD_COUNTS.replace("OUT", "g(x) * 2.0")
    ctx = FakeContext(snippet=load_snippet(source))
    with pytest.raises(ValueError) as info:
        probe.run(ctx)
    types = [type(e).__name__ for e in ctx.events]
    assert types[-3:] == ["TransposeStepped", "GradAttempted", "GradAttempted"]
    assert all(a.error_class == "TypeError" for a in ctx.of_type(GradAttempted))
    ns: dict[str, Any] = {"__name__": "snippet"}
    exec(source, ns)
    out, f_vjp = jax.vjp(ns["f"], *ns["args"])
    with pytest.raises(ValueError) as vjp_error:
        f_vjp(jnp.ones_like(out))
    assert str(info.value) == "bwd call 0" and str(vjp_error.value) == "bwd call 0"
    assert info.value._jaxscope_during == (  # type: ignore[attr-defined]
        "while transposing custom_lin (the backward pass of jax.grad)"
    )


def test_a_failure_before_the_backward_pass_walks_nothing() -> None:
    """jax.grad refuses an int input before linearizing: no linear jaxpr, no steps."""
    ctx, failed = _failure(EXAMPLES["int_input"])
    assert failed.error_class == "TypeError" and failed.during is None
    assert not ctx.of_type(LinearJaxprStaged) and not ctx.of_type(TransposeStepped)


# ---- review s11c: float32 digits in --print, NaN finite differences listed with a reason --------


def test_cli_gradient_prints_float32_digits_as_jax(tmp_path: Path) -> None:
    """``--print gradient`` writes a float32 gradient in the digits numpy/JAX print it with
    (``0.33166808``), not the float64 it widens to (``0.33166807889938354``)."""
    path = tmp_path / "f.py"
    path.write_text(
        "import jax.numpy as jnp\n"
        "def f(x):\n    return jnp.sum(jnp.tanh(x) ** 2)\n"
        "args = (jnp.array([0.3, -1.2, 0.7]),)\n"
    )
    proc = run_cli("run", "transpose", str(path), "--print", "gradient", cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    g = jax.grad(lambda x: jnp.sum(jnp.tanh(x) ** 2))(jnp.array([0.3, -1.2, 0.7]))
    want = "[[" + ", ".join(repr(v.item()) for v in np.asarray(g)) + "]]"
    # repr of a numpy float32 scalar: the shortest digits that round back in float32
    assert proc.stdout.strip() == "[[" + ", ".join(str(np.float32(v)) for v in np.asarray(g)) + "]]"
    assert proc.stdout.strip() != want  # not the float64 digits


def test_fd_check_lists_nan_finite_differences_with_why() -> None:
    """NaN inputs: f = sum(2x) has gradient 2 everywhere but f is NaN around the point, so the
    finite difference is NaN (not a kink): both entries are listed, each with its reason."""
    code = (
        "import jax.numpy as jnp\n"
        "def f(x):\n    return jnp.sum(2 * x)\n"
        "args = (jnp.array([jnp.nan, jnp.nan]),)\n"
    )
    check = run_probe("transpose", code).one(GradientChecked)
    truth = np.asarray(jax.grad(lambda x: jnp.sum(2 * x))(jnp.array([jnp.nan, jnp.nan])))
    assert truth.tolist() == [2.0, 2.0]
    assert check.compared == 0 and check.max_abs_err is None
    assert check.not_compared_count == 2
    assert [
        (n.index, n.gradient, n.finite_difference, n.why, n.reason) for n in check.not_compared
    ] == [
        ([i], 2.0, "nan", "the finite difference is nan (f is not finite near here)", "nonfinite")
        for i in (0, 1)
    ]
    assert check.leaves[0].finite_difference == ["nan", "nan"]
    # nothing held to a finite difference: never agreement
    assert check.verdict == "incomplete" and check.checked == 0
    assert check.headline.startswith(
        "Not fully checked: 2 elements were left out, first args[0][0]"
    )


def test_a_kink_with_a_finite_gradient_is_left_out_and_said() -> None:
    """abs at 0: a kink (the one-sided differences disagree: -1 and 1), finite gradient: not
    compared, listed with its reason, and the verdict is incomplete, not agreement (issue 15:
    elements left out never make the headline look like agreement)."""
    code = (
        "import jax.numpy as jnp\ndef f(x):\n    return jnp.sum(jnp.abs(x))\n"
        "args = (jnp.array([0.0, 2.0]),)\n"
    )
    check = run_probe("transpose", code).one(GradientChecked)
    h = 1e-6  # numpy's one-sided differences at 0 and the derivative at 2
    assert (0.0 - abs(-h)) / h == -1.0 and (abs(h) - 0.0) / h == 1.0
    assert (abs(2.0 + h) - abs(2.0 - h)) / (2 * h) == pytest.approx(1.0)
    assert check.compared == 1 and check.checked == 1 and check.not_compared_count == 1
    assert [(n.index, n.reason) for n in check.not_compared] == [([0], "kink")]
    assert check.leaves[0].finite_difference[0] is None
    assert check.verdict == "incomplete"
    assert check.headline == (
        "Not fully checked: 1 element was left out, first args[0][0]: a kink: the one-sided "
        "differences disagree, no derivative to hold it to; the 1 other checked element agrees "
        "at float32 precision."
    )


# ---- train steps: a pytree output's first leaf (jaxscope.grad_output) ---------------------------


def _walk_gradient(monkeypatch: pytest.MonkeyPatch, source: str) -> tuple[FakeContext, Any]:
    """Run the probe on ``source`` and keep the gradient its walk handed to ``check_gradient``
    (the event carries only a summary of a leaf over 4,096 elements)."""
    from exhibits.transpose import probe

    seen: list[Any] = []
    real = probe.check_gradient

    def keep(plan: Any, args: Any, argnums: Any, gradient: Any, *rest: Any, **kw: Any) -> Any:
        seen.append(gradient)
        return real(plan, args, argnums, gradient, *rest, **kw)

    monkeypatch.setattr(probe, "check_gradient", keep)
    ctx = run_probe("transpose", source)
    assert len(seen) == 1
    return ctx, seen[0]


def _assert_bit_identical(got: Any, want: Any) -> None:
    got_leaves, want_leaves = jax.tree.leaves(got), jax.tree.leaves(want)
    assert len(got_leaves) == len(want_leaves)
    for g, w in zip(got_leaves, want_leaves, strict=True):
        assert np.asarray(g).dtype == np.asarray(w).dtype
        assert np.array_equal(np.asarray(g), np.asarray(w))


# The scan RNN's 50 time steps in `make test-all`; 10 in `make test` (the same scan and step,
# ~4 s less).
@pytest.mark.parametrize(
    "which",
    [
        "mlp_sgd_step",
        "scan_rnn_step_10",
        pytest.param("scan_rnn_step", marks=pytest.mark.full),
    ],
)
def test_train_step_walks_the_gradient_of_its_first_leaf(
    monkeypatch: pytest.MonkeyPatch, which: str
) -> None:
    from exhibits.train_steps import FIRST_LEAF_PATH, TRAIN_STEP, loss_grad, scan_rnn_step

    source = TRAIN_STEP if which == "mlp_sgd_step" else scan_rnn_step()
    if which == "scan_rnn_step_10":
        assert "STEPS = 50\n" in source
        source = source.replace("STEPS = 50\n", "STEPS = 10\n")
    ctx, gradient = _walk_gradient(monkeypatch, source)
    check = ctx.one(GradientChecked)
    assert check.argnums == [0, 1, 2] and check.seed == "1.0"
    want = loss_grad(source, tuple(check.argnums))
    _assert_bit_identical(gradient, want)
    assert check.equal_to_jax and all(leaf.equal_to_jax for leaf in check.leaves)
    # The leaves small enough to send carry the values: those of jax.grad of the loss.
    for leaf, w in zip(check.leaves, jax.tree.leaves(want), strict=True):
        assert leaf.gradient == (nested(w) if leaf.sent else None)
    assert check.max_rel_err is not None and check.max_rel_err < 1e-6
    # Said where the view shows it first: the linear jaxpr's note, with the leaf's key path.
    note = ctx.one(LinearJaxprStaged).output_leaf
    assert note is not None and note.path == FIRST_LEAF_PATH and note.aval == "f32[]"
    n_params = len(jax.tree.leaves(load_snippet(source).args[0]))
    assert note.kind == "tuple" and note.leaves == 1 + n_params  # (loss, new_params)
    assert f"output path {FIRST_LEAF_PATH}" in note.note and "first leaf" in note.note
    # Both attempts worked: they took the gradient of the same first leaf.
    assert all(a.ok for a in ctx.of_type(GradAttempted))


def test_a_pytree_output_whose_first_leaf_is_not_a_scalar_fails_short() -> None:
    from exhibits.train_steps import PARAMS_STEP

    with pytest.raises(TypeError) as raised:
        run_probe("transpose", PARAMS_STEP)
    message = str(raised.value)
    assert len(message) < 1000
    assert message.startswith("Gradient only defined for scalar-output functions.")
    # The output's structure, briefly, and why the rule did not apply.
    assert "a dict of 4 leaves: {'b1': f32[4], 'b2': f32[2], 'w1': f32[3,4], 'w2': f32[4,2]}" in (
        message
    )
    assert "output['b1'], is f32[4]" in message and "Array(" not in message


def test_a_pytree_output_error_is_short_in_the_attempts_too() -> None:
    """The attempts (shown by a finished run of the rule's other branch) carry the short text:
    a non-scalar first leaf fails both, and the run fails with the same text."""
    from exhibits.train_steps import PARAMS_STEP

    ctx = FakeContext(snippet=load_snippet(PARAMS_STEP))
    from exhibits.transpose import probe

    with pytest.raises(TypeError):
        probe.run(ctx)
    attempts_ = ctx.of_type(GradAttempted)
    assert [a.ok for a in attempts_] == [False, False]
    assert all(
        len(a.message or "") < 1000 and "dict of 4 leaves" in (a.message or "") for a in attempts_
    )


@pytest.mark.parametrize(
    "layers", [3, pytest.param(12, marks=pytest.mark.full)], ids=["3_layers", "12_layers"]
)
def test_gpt_stack_gradient_is_jax_grad_bit_for_bit(
    monkeypatch: pytest.MonkeyPatch, layers: int
) -> None:
    """The 12-layer transformer of examples/real (928 eqns, 9.6 M parameters; issue 14): the
    walk finishes, its gradient is jax.grad's bit for bit (every leaf, np.array_equal), the
    event summarises the leaves too large to send, and the float64 walk is skipped and said.
    `make test` walks the same stack with 3 layers (2.5 M parameters, past the float64 walk's
    eqns and the sent values' bound all the same: 6 s against 15 s), `make test-all` all 12."""
    from exhibits.train_steps import REAL

    source = (REAL / "gpt_stack.py").read_text()
    assert "N_LAYERS = 12\n" in source
    source = source.replace("N_LAYERS = 12\n", f"N_LAYERS = {layers}\n")
    ctx, gradient = _walk_gradient(monkeypatch, source)
    check = ctx.one(GradientChecked)
    assert check.argnums == [0]  # tokens and targets are int32
    snippet = load_snippet(source)
    want = jax.grad(snippet.f)(*snippet.args)
    _assert_bit_identical(gradient[0], want)
    assert check.equal_to_jax and all(leaf.equal_to_jax for leaf in check.leaves)
    elements = sum(np.size(x) for x in jax.tree.leaves(want))
    assert check.elements == elements == {3: 2_505_984, 12: 9_604_608}[layers]
    assert check.leaves_not_sent == sum(not leaf.sent for leaf in check.leaves) > 0
    for leaf, w in zip(check.leaves, jax.tree.leaves(want), strict=True):
        assert leaf.size == np.size(w)
        assert leaf.gradient == (nested(w) if leaf.sent else None)
        assert leaf.max_abs == pytest.approx(float(np.max(np.abs(np.asarray(w)))))
    assert not check.float64_walk and check.program_eqns is not None and check.program_eqns > 200
    # finite differences at 16 elements (finite_diff.MIN_SAMPLES); with 3 layers, at the 39 that
    # MAX_WORK allows (2e8 elements read / 2 evaluations / 2,506,112 elements of the arguments)
    sampled = {3: 39, 12: 16}[layers]
    assert check.fd_sampled == check.compared == sampled
    assert check.verdict == "agree"
    assert f"the {sampled} sampled elements (of {elements:,}" in check.headline
    assert check.max_rel_err is not None and check.max_rel_err < 1e-4
    assert ctx.one(LinearJaxprStaged).output_leaf is None  # f returns the scalar loss


def test_cli_lists_and_prints_the_first_leaf_note(tmp_path: Path) -> None:
    from exhibits.train_steps import TRAIN_STEP

    path = tmp_path / "step.py"
    path.write_text(TRAIN_STEP)
    proc = run_cli("run", "transpose", str(path), "--print", "output_leaf", cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    note, structure = proc.stdout.strip().split("\n")
    assert note.startswith("f returns a pytree of 5 leaves (tuple); differentiating its first leaf")
    # stderr says it too, as a note (``NOTES``), without --print: what was differentiated.
    assert f"jaxscope: note: {note}\n" in proc.stderr
    assert "output path [0]" in note
    assert (
        structure == "output: (f32[], {'b1': f32[4], 'b2': f32[2], 'w1': f32[3,4], 'w2': f32[4,2]})"
    )


# A loop of 20 iterations: its linear jaxpr has two eqns per iteration (the ``cos`` residual's
# ``mul`` and the ``* 0.5``), each one step of the walk.
CHAIN = """
import jax.numpy as jnp

def f(x):
    for _ in range(20):
        x = jnp.sin(x) * 0.5
    return jnp.sum(x)

args = (jnp.ones(3),)
"""


def test_a_walk_past_the_step_cap_says_how_many_steps_were_not_sent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import exhibits.transpose.probe as probe

    ns = load_snippet(CHAIN)
    # JAX's own linear jaxpr (jax.linearize's linear function, traced): one step per eqn
    _, f_lin = jax.linearize(ns.f, *ns.args)
    n_eqns = len(jax.make_jaxpr(f_lin)(*ns.args).jaxpr.eqns)
    assert n_eqns > 12
    monkeypatch.setattr(probe, "MAX_STEP_EVENTS", 12)
    ctx = run_probe("transpose", CHAIN)
    steps = ctx.of_type(TransposeStepped)
    checked = ctx.one(GradientChecked)
    assert [s.step for s in steps] == list(range(12))
    assert checked.steps_left_out == n_eqns - 12
    assert json.loads(checked.model_dump_json())["steps_left_out"] == n_eqns - 12
    # the gradient is still the whole walk's
    assert checked.equal_to_jax
    # under the cap the field is left off the wire (the goldens do not change)
    monkeypatch.setattr(probe, "MAX_STEP_EVENTS", 2000)
    whole = run_probe("transpose", CHAIN)
    assert len(whole.of_type(TransposeStepped)) == n_eqns
    small = whole.one(GradientChecked)
    assert small.steps_left_out == 0
    assert "steps_left_out" not in json.loads(small.model_dump_json())
