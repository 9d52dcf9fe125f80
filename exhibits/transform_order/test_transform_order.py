"""Tests of the transform_order exhibit: every stack against the same transforms called directly.

Truths: the stacks written out as plain JAX calls (``golden/regen.py``'s :func:`direct`, its own
code), ``jax.make_jaxpr`` of them, numpy closed forms (per-example gradients of a linear model,
du/dx of case C06, the tanh Jacobians), ``cost_analysis`` of a separately compiled function,
``type(x)`` observed by our own function inside JAX's transforms, case C06's expect files, the
golden files, and the ``jaxscope`` CLI.
"""

from __future__ import annotations

import ast
import contextlib
import json
import subprocess
import traceback
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jaxscope.internals.views import preview_value
from jaxscope.protocol import RunOptions
from jaxscope.sandbox.snippet import load_snippet

from exhibits.conftest import CASES, EXHIBITS, FakeContext, run_probe
from exhibits.transform_order import artefacts, probe
from exhibits.transform_order.events import TransformStackEvaluated
from exhibits.transform_order.golden.regen import EXAMPLES, direct, golden, load
from testkit import run_cli, sample

HERE = EXHIBITS / "transform_order"
EXAMPLE = {p.stem: p for p in EXAMPLES}


def number(preview: str) -> np.ndarray:
    """A value preview (numpy's printout, not summarised) as a float64 array."""
    assert "..." not in preview
    return np.asarray(ast.literal_eval(preview), dtype=np.float64)


def user_event(name: str, stack: list[str] | None = None) -> TransformStackEvaluated:
    options = RunOptions(stack=stack) if stack is not None else None
    ctx = run_probe("transform_order", EXAMPLE[name].read_text(), options)
    events = ctx.of_type(TransformStackEvaluated)
    assert events[0].group == "user" and all(e.group != "user" for e in events[1:])
    return events[0]


def user_run(name: str, stack: list[str] | None = None) -> TransformStackEvaluated | Exception:
    """:func:`user_event`, or the exception the run failed with (an error in ``f`` itself: the
    plain transform, the stack's jit and vmap chips alone, fails at the user's line)."""
    try:
        return user_event(name, stack)
    except Exception as exc:
        return exc


def plain_chips(stack: list[str]) -> list[str]:
    """The stack's plain transform, written out here: its jit and vmap chips, in order."""
    return [name for name in stack if name in ("jit", "vmap")]


STACKS = {
    "per_example_grads": [
        ["vmap", "grad"],
        ["grad", "vmap"],
        ["jit", "vmap", "grad"],
        ["vmap", "jit", "grad"],
        ["vmap", "value_and_grad"],
        ["vmap", "jacrev"],
        ["vmap", "jvp"],
        ["vmap", "vjp"],
        ["vmap"],
        ["value_and_grad"],
    ],
    "tall_wide_jacobian": [
        ["jacfwd"],
        ["jacrev"],
        ["jit", "jacrev"],
        ["hessian"],
        ["jvp"],
        ["vjp"],
        ["jacfwd", "jvp"],
        ["vmap"],
        [],
    ],
}
CASES_STACKS = [(name, stack) for name, stacks in STACKS.items() for stack in stacks]


# `make test` checks the exhibit's pair (vmap,grad and grad,vmap, which JAX refuses), the stack
# whose run fails inside f (tall_wide_jacobian's vmap) and a fixed, seeded sample of 5 of the
# other 16 stacks (each its run and JAX's own composition, ~1 s); `make test-all` all 19
# (testkit.py, design 0076). The ids name the example and the stack (the example's name was
# spelt letter by letter: "p,e,r,_,e,x,...").
_ALWAYS_STACKS = [
    ("per_example_grads", ["vmap", "grad"]),
    ("per_example_grads", ["grad", "vmap"]),
    ("tall_wide_jacobian", ["vmap"]),
]
_SAMPLED_STACKS = sample(
    [c for c in CASES_STACKS if c not in _ALWAYS_STACKS],
    5,
    key="test_stack_equals_the_composed_transforms",
)


@pytest.mark.parametrize(
    ("name", "stack"),
    [
        pytest.param(
            name,
            stack,
            id=f"{name}-{','.join(stack) or 'none'}",
            marks=() if (name, stack) in _ALWAYS_STACKS + _SAMPLED_STACKS else pytest.mark.full,
        )
        for name, stack in CASES_STACKS
    ],
)
def test_stack_equals_the_composed_transforms(name: str, stack: list[str]) -> None:
    """Result, jaxpr and error of each stack equal the same transforms called directly; a stack
    whose plain transform (its jit and vmap chips) fails inside ``f`` fails the run with it."""
    event = user_run(name, stack)
    ns = load(EXAMPLE[name])
    args = tuple(ns["args"])
    in_axes = ns.get("in_axes", 0)
    g = direct(stack, ns["f"], in_axes)
    if isinstance(event, Exception):
        with pytest.raises(Exception) as plain:
            direct(plain_chips(stack), ns["f"], in_axes)(*args)
        assert type(event) is type(plain.value) and str(event) == str(plain.value)
        with pytest.raises(type(event)):
            g(*args)
        return
    assert event.stack == stack
    try:
        text = str(jax.make_jaxpr(g)(*args))
        want = g(*args)
    except Exception as exc:
        assert not event.ok
        assert event.error_class == type(exc).__name__
        assert event.message == str(exc)
        assert event.jaxpr is None and event.result == []
        return
    assert event.ok, event.message
    assert event.jaxpr is not None and event.jaxpr.text == text
    leaves = jax.tree.leaves(want)
    assert [r.preview for r in event.result] == [preview_value(leaf) for leaf in leaves]
    assert [r.shape for r in event.result] == [list(np.shape(leaf)) for leaf in leaves]
    # and the raw values, bit for bit, from the probe's own composition
    _, got = probe.evaluate(ns["f"], args, stack, in_axes, label="", group="user", code="")
    for a, b in zip(jax.tree.leaves(got), leaves, strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_per_example_gradients_equal_the_closed_form() -> None:
    """vmap(grad(loss), in_axes=(None, 0, 0)) on the linear model = 2(x·w − y)·x (numpy)."""
    ns = load(EXAMPLE["per_example_grads"])
    w, x, y = (np.asarray(a, np.float64) for a in ns["args"])
    closed = 2 * (x @ w - y)[:, None] * x
    event = user_event("per_example_grads")
    assert event.stack == ["vmap", "grad"] and event.in_axes == "(None, 0, 0)"
    np.testing.assert_allclose(number(event.result[0].preview), closed, rtol=1e-5, atol=1e-5)


def test_default_in_axes_maps_the_params_and_fails_as_jax_does() -> None:
    source = EXAMPLE["per_example_grads"].read_text().replace("in_axes = (None, 0, 0)", "")
    ctx = run_probe("transform_order", source)
    event = ctx.of_type(TransformStackEvaluated)[0]
    ns = load(EXAMPLE["per_example_grads"])
    with pytest.raises(ValueError) as info:
        jax.vmap(jax.grad(ns["f"]))(*ns["args"])
    assert not event.ok and event.error_class == "ValueError"
    assert event.message == str(info.value)
    assert "inconsistent sizes" in event.message and event.explanation


@pytest.mark.parametrize("variant", ["broken", "fixed"])
def test_case_c06(variant: str) -> None:
    """C06 (vmap of a function that calls grad) as the case expects, from the case file itself
    with the stack ``vmap`` (and from the exhibit's copy, whose ``stack`` says so)."""
    expect = json.loads((CASES / f"C06_vmap_grad_{variant}.expect.json").read_text())
    source = (CASES / f"C06_vmap_grad_{variant}.py").read_text()
    if variant == "broken":
        # The stack is vmap alone, the plain transform: grad's error is raised inside f (line
        # 11), so it is f's own error, and the run fails there (issue 33, class 7).
        for run in (
            lambda: run_probe("transform_order", source, RunOptions(stack=["vmap"])),
            lambda: user_event(f"C06_vmap_grad_{variant}"),
        ):
            with pytest.raises(TypeError) as info:
                run()
            assert str(info.value) == expect["error_message"]
            frames = traceback.extract_tb(info.value.__traceback__)
            assert [fr.lineno for fr in frames if fr.filename == "<snippet>"][-1] == expect[
                "error_user_line"
            ]
        return
    for event in (
        run_probe("transform_order", source, RunOptions(stack=["vmap"])).of_type(
            TransformStackEvaluated
        )[0],
        user_event(f"C06_vmap_grad_{variant}"),
    ):
        assert event.ok
        assert event.result[0].shape == expect["vmap_out_shape"]
        np.testing.assert_allclose(number(event.result[0].preview), expect["vmap_out"], 1e-6)
        assert event.jaxpr is not None and event.jaxpr.text == expect["jaxpr"]


@pytest.mark.parametrize("name", sorted(EXAMPLE))
def test_examples_match_golden(name: str) -> None:
    want = json.loads((HERE / "golden" / f"{name}.json").read_text())
    assert golden(load(EXAMPLE[name])) == want, "golden out of date: run golden/regen.py"
    event = user_run(name)
    if isinstance(event, Exception):  # f's own error (the plain transform fails inside f)
        assert f"{type(event).__name__}: {event}" == want["error"]
        return
    assert event.stack == want["stack"]
    if "error" in want:
        assert f"{event.error_class}: {event.message}" == want["error"]
        return
    assert event.jaxpr is not None and event.jaxpr.text == want["jaxpr"]
    for got, value in zip(event.result, want["result"], strict=True):
        if "..." not in got.preview:
            np.testing.assert_allclose(number(got.preview), value, rtol=1e-5, atol=1e-6)


# ---- the tracers that reached f ------------------------------------------------------------


def seen_types(stack: list[str], f: Any, args: tuple[Any, ...], in_axes: Any = 0) -> list[str]:
    """``type(a).__name__`` of each argument inside f, observed by our own f."""
    seen: list[str] = []

    def spy(*a: Any) -> Any:
        if not seen:
            seen.extend(type(v).__name__ for v in a)
        return f(*a)

    with contextlib.suppress(TypeError):  # grad(vmap(u)) fails after f has seen its tracers
        direct(stack, spy, in_axes)(*args)
    return seen


@pytest.mark.parametrize(
    ("stack", "nest"),
    [
        (["vmap", "grad"], ["LinearizeTracer", "BatchTracer", "ArrayImpl", "DynamicJaxprTracer"]),
        (["grad", "vmap"], ["BatchTracer", "LinearizeTracer", "ArrayImpl", "DynamicJaxprTracer"]),
        (["jit", "vmap"], ["BatchTracer", "DynamicJaxprTracer"]),
        (["vmap", "jit"], ["DynamicJaxprTracer"]),
        (["jacfwd"], ["JVPTracer", "ArrayImpl", "BatchTracer", "ArrayImpl"]),
        (["jacrev"], ["LinearizeTracer", "ArrayImpl", "DynamicJaxprTracer"]),
        ([], ["ArrayImpl"]),
    ],
    ids=lambda v: ",".join(v),
)
def test_trace_nest_observed_inside_f(stack: list[str], nest: list[str]) -> None:
    """The nest recorded for ``u(x) = sum(sin(x))`` on a (4, 3) batch (per example f32[3]): the
    outermost transform's tracer is innermost in the nest; ``type(x)`` inside f agrees."""

    def u(x: Any) -> Any:
        return jnp.sum(jnp.sin(x))

    x = jnp.ones((4, 3)) if "vmap" in stack else jnp.ones(3)
    event, _ = probe.evaluate(u, (x,), stack, 0, label="", group="user", code="")
    nodes = event.traces[0].nodes
    assert [n.tracer for n in nodes] == nest
    assert nodes[0].tracer == seen_types(stack, u, (x,))[0]
    assert nodes[0].aval == "f32[3]"
    for n in nodes:
        if n.tracer == "BatchTracer":
            assert n.batch_dim == 0
        if n.role == "val" and "vmap" in stack and n.tracer == "ArrayImpl":
            assert n.aval == "f32[4,3]"  # vmap's trace carries the whole batch


def test_unmapped_params_are_not_batch_tracers() -> None:
    """vmap(grad(loss), in_axes=(None, 0, 0)): w meets only grad's trace, x and y only vmap's."""
    event = user_event("per_example_grads")
    ns = load(EXAMPLE["per_example_grads"])
    assert [a.nodes[0].tracer for a in event.traces] == seen_types(
        ["vmap", "grad"], ns["f"], tuple(ns["args"]), (None, 0, 0)
    )
    w, x, y = event.traces
    assert [n.tracer for n in w.nodes] == ["LinearizeTracer", "ArrayImpl", "DynamicJaxprTracer"]
    assert [(n.tracer, n.aval) for n in x.nodes] == [
        ("BatchTracer", "f32[3]"),
        ("ArrayImpl", "f32[8,3]"),
    ]
    assert [(n.tracer, n.aval) for n in y.nodes] == [
        ("BatchTracer", "f32[]"),
        ("ArrayImpl", "f32[8]"),
    ]


# ---- the built-in comparisons --------------------------------------------------------------


@pytest.fixture(scope="module")
def builtins() -> list[TransformStackEvaluated]:
    ctx: FakeContext = run_probe("transform_order", EXAMPLE["per_example_grads"].read_text())
    return ctx.of_type(TransformStackEvaluated)[1:]


def by_code(events: list[TransformStackEvaluated], code: str) -> TransformStackEvaluated:
    (found,) = [e for e in events if e.code == code]
    return found


def test_vmap_grad_against_grad_vmap_against_summed(
    builtins: list[TransformStackEvaluated],
) -> None:
    xs = jnp.linspace(0.0, 1.0, 4)
    du = 3 * np.asarray(xs, np.float64) ** 2 + np.cos(np.asarray(xs, np.float64))
    per = by_code(builtins, "vmap(grad(u))(xs)")
    np.testing.assert_allclose(number(per.result[0].preview), du, rtol=1e-5)
    assert per.check_ok is True
    bad = by_code(builtins, "grad(vmap(u))(xs)")
    with pytest.raises(TypeError) as info:
        jax.grad(jax.vmap(probe.u))(xs)
    assert not bad.ok and bad.message == str(info.value)
    assert bad.explanation is not None and "vmap(grad(f))" in bad.explanation
    summed = by_code(builtins, "grad(lambda x: vmap(u)(x).sum())(xs)")
    np.testing.assert_allclose(number(summed.result[0].preview), du, rtol=1e-5)


def test_jacfwd_against_jacrev(builtins: list[TransformStackEvaluated]) -> None:
    jac = [e for e in builtins if e.group == "jacobian"]
    assert [e.code for e in jac] == [
        "jit(jacfwd(tall))(x)",
        "jit(jacrev(tall))(x)",
        "jit(jacfwd(wide))(x)",
        "jit(jacrev(wide))(x)",
    ]
    for e in jac:
        name = "tall" if "tall" in e.code else "wide"
        fn = getattr(probe, name)
        chip = getattr(jax, "jacfwd" if "jacfwd" in e.code else "jacrev")
        n_in = probe.A_TALL.shape[1] if name == "tall" else probe.A_WIDE.shape[1]
        x = jnp.linspace(-1.0, 1.0, n_in, dtype=jnp.float32)
        assert e.ok and e.check_ok is True
        assert e.jaxpr is not None and e.jaxpr.text == str(jax.make_jaxpr(chip(fn))(x))
        assert e.eqn_count is not None and e.eqn_count >= len(e.jaxpr.eqns)
        cost: Any = jax.jit(chip(fn)).lower(x).compile().cost_analysis()
        cost = cost[0] if isinstance(cost, list) else cost
        assert e.flops == float(cost["flops"])
        assert e.time_ms is not None and e.time_ms > 0
    # forward mode is cheaper for the tall Jacobian, reverse mode for the wide one
    assert jac[0].flops is not None and jac[1].flops is not None and jac[0].flops < jac[1].flops
    assert jac[2].flops is not None and jac[3].flops is not None and jac[3].flops < jac[2].flops
    # same values: each checked against the numpy Jacobian in the probe, and the previews agree
    assert jac[0].result[0].shape == jac[1].result[0].shape == [200, 4]
    assert all(e.check == "numpy: (1 − tanh²(A·x))·A" for e in jac)


def test_model_comparisons(builtins: list[TransformStackEvaluated]) -> None:
    model = [e for e in builtins if e.group == "model"]
    w, x, y = (probe.W, probe.X, probe.Y)
    closed = 2 * (x.astype(np.float64) @ w - y)[:, None] * x
    per, default, summed = model
    assert per.in_axes == "(None, 0, 0)" and per.check_ok is True
    np.testing.assert_allclose(number(per.result[0].preview), closed, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError) as info:
        jax.vmap(jax.grad(probe.loss))(w, x, y)
    assert not default.ok and default.message == str(info.value)
    np.testing.assert_allclose(number(summed.result[0].preview), closed.sum(0), rtol=1e-5)


# ---- the CLI -------------------------------------------------------------------------------


def jaxscope(*argv: str) -> subprocess.CompletedProcess[str]:
    # in the test process (testkit.run_cli): main's code path, a fork of the warm template
    return run_cli(*argv, cwd=EXHIBITS.parent)


def test_cli_stack() -> None:
    path = EXAMPLE["per_example_grads"]
    ns = load(path)
    args = tuple(ns["args"])
    ok = direct(["jit", "vmap", "grad"], ns["f"], ns["in_axes"])
    out = jaxscope(
        "run", "transform_order", str(path), "--stack", "jit,vmap,grad", "--print", "jaxpr"
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout == str(jax.make_jaxpr(ok)(*args)) + "\n"
    out = jaxscope("run", "transform_order", str(path), "--stack", "vmap,grad", "--print", "result")
    assert out.returncode == 0, out.stderr
    want = jax.vmap(jax.grad(ns["f"]), in_axes=(None, 0, 0))(*args)
    assert out.stdout == f"output: float32{list(want.shape)}\n{preview_value(want)}\n"
    out = jaxscope("run", "transform_order", str(path), "--stack", "grad,vmap", "--print", "error")
    with pytest.raises(TypeError) as info:
        jax.grad(jax.vmap(ns["f"], in_axes=(None, 0, 0)))(*args)
    # JAX's rejection is the artefact (the run finishes) and exits 3: JAX rejected the stack.
    assert out.returncode == 3 and out.stdout == f"TypeError: {info.value}\n"
    assert "the run finished; JAX raised TypeError" in out.stderr
    out = jaxscope("run", "transform_order", str(path), "--stack", "vmap,nope")
    assert out.returncode == 2 and "unknown transform nope" in out.stderr


# ---- the snippet's stack is capped like RunOptions.stack (fix-review-34 item 4) ----------------

STACK_SNIPPET = """
import jax.numpy as jnp


def f(x):
    return jnp.sin(x) * 2.0


args = (jnp.float32(0.5),)
stack = {stack}
"""


@pytest.mark.parametrize(
    ("stack", "words"),
    [
        (repr(["grad"] * 30), "`stack` has 30 transforms; at most 8"),
        (repr(",".join(["jit"] * 9)), "`stack` has 9 transforms; at most 8"),
        ("['grad', 'nope']", "`stack` must be a list of transform names"),
        ("[1, 2]", "`stack` must be a list of transform names"),
        ("'grad'.join(['x'] * 1000)", "`stack` must be a list of transform names"),
    ],
    ids=["30_grads", "9_jits_text", "unknown_name", "not_names", "long_garbage"],
)
def test_snippet_stack_is_capped_and_checked(stack: str, words: str) -> None:
    with pytest.raises(Exception) as info:
        run_probe("transform_order", STACK_SNIPPET.format(stack=stack))
    assert type(info.value).__name__ == "InvalidSnippet"
    assert words in str(info.value) and len(str(info.value)) < 600


def test_the_cap_is_run_options_cap_and_a_full_stack_runs() -> None:
    with pytest.raises(ValueError):
        RunOptions(stack=["jit"] * (probe.MAX_STACK + 1))
    stack = ["jit"] * probe.MAX_STACK
    ctx = run_probe("transform_order", STACK_SNIPPET.format(stack=repr(stack)))
    event = next(e for e in ctx.of_type(TransformStackEvaluated) if e.group == "user")
    assert event.ok and event.stack == stack
    g = direct(stack, lambda x: jnp.sin(x) * 2.0, 0)
    want = g(jnp.float32(0.5))
    assert [r.preview for r in event.result] == [preview_value(want)]


# ---- train steps: a grad chip differentiates a pytree output's first leaf -----------------------


def _train_step(which: str) -> str:
    from exhibits.train_steps import TRAIN_STEP, scan_rnn_step

    return TRAIN_STEP if which == "mlp_sgd_step" else scan_rnn_step()


@pytest.mark.parametrize("which", ["mlp_sgd_step", "scan_rnn_step"])
@pytest.mark.parametrize("stack", [["grad"], ["vmap", "grad"]], ids=",".join)
def test_grad_chip_on_a_train_step_takes_the_first_leaf(which: str, stack: list[str]) -> None:
    from exhibits.train_steps import FIRST_LEAF_PATH

    source = _train_step(which)
    ctx = run_probe("transform_order", source, RunOptions(stack=stack))
    event = ctx.of_type(TransformStackEvaluated)[0]
    assert event.group == "user" and event.ok, event.message
    # The truth, computed here: grad of the first output (the loss), w.r.t. the first argument.
    snippet = load_snippet(source)
    f, args, in_axes = snippet.f, tuple(snippet.args), snippet.namespace["in_axes"]
    loss_grad = jax.grad(lambda *a: f(*a)[0])
    want = jax.vmap(loss_grad, in_axes=in_axes)(*args) if stack[0] == "vmap" else loss_grad(*args)
    leaves = jax.tree.leaves(want)
    assert [r.preview for r in event.result] == [preview_value(leaf) for leaf in leaves]
    _, got = probe.evaluate(f, args, stack, in_axes, label="", group="user", code="")
    for a, b in zip(jax.tree.leaves(got), leaves, strict=True):
        assert np.array_equal(np.asarray(a), np.asarray(b))
    # Said in the event: which chip, the leaf's key path, the note the view shows.
    (note,) = event.output_leaf
    assert note.chip == stack.index("grad") and note.path == FIRST_LEAF_PATH
    assert note.aval == "f32[]" and f"output path {FIRST_LEAF_PATH}" in note.note
    # The CLI's notes (``NOTES``, printed on stderr) name the chip and say the same.
    assert artefacts.NOTES(ctx.events) == [f"{stack[note.chip]}: {note.note}"]


def test_value_and_grad_chip_returns_the_loss_and_its_gradient() -> None:
    from exhibits.train_steps import TRAIN_STEP

    ctx = run_probe("transform_order", TRAIN_STEP, RunOptions(stack=["value_and_grad"]))
    event = ctx.of_type(TransformStackEvaluated)[0]
    snippet = load_snippet(TRAIN_STEP)
    f, args = snippet.f, tuple(snippet.args)
    want = jax.value_and_grad(lambda *a: f(*a)[0])(*args)
    assert event.ok and [r.preview for r in event.result] == [
        preview_value(leaf) for leaf in jax.tree.leaves(want)
    ]
    assert [n.chip for n in event.output_leaf] == [0]


def test_grad_outside_vmap_of_a_train_step_is_still_refused_shortly() -> None:
    """grad(vmap(step)): vmap(step)'s first leaf is the batch of losses, not a scalar: JAX's
    error, cut to the output's structure, with the order explanation."""
    from exhibits.train_steps import TRAIN_STEP

    ctx = run_probe("transform_order", TRAIN_STEP, RunOptions(stack=["grad", "vmap"]))
    event = ctx.of_type(TransformStackEvaluated)[0]
    assert not event.ok and event.error_class == "TypeError" and event.output_leaf == []
    message = event.message or ""
    assert len(message) < 1000 and "Tracer" not in message
    assert "a tuple of 5 leaves: (f32[5], {'b1': f32[5,4]" in message
    assert event.explanation is not None and "grad is outside vmap" in event.explanation


def test_a_pytree_output_whose_first_leaf_is_not_a_scalar_fails_short() -> None:
    from exhibits.train_steps import PARAMS_STEP

    event = run_probe("transform_order", PARAMS_STEP).of_type(TransformStackEvaluated)[0]
    assert not event.ok and event.error_class == "TypeError"
    message = event.message or ""
    assert len(message) < 1000 and "a dict of 4 leaves" in message
    assert "output['b1'], is f32[4]" in message


def test_vmaps_inconsistent_sizes_are_at_the_args_line_as_in_the_vmap_exhibit() -> None:
    from jaxscope.sandbox.probe_api import BLAME_ATTR

    text = (
        "import jax.numpy as jnp\n\n"
        "def f(x, w):\n"
        "    return jnp.sum(jnp.tanh(x @ w))\n\n"
        "args = (jnp.ones((4, 3)), jnp.ones((3, 2)))\n"
    )
    args_line = text.splitlines().index("args = (jnp.ones((4, 3)), jnp.ones((3, 2)))") + 1
    ctx = run_probe("transform_order", text, RunOptions(stack=["vmap", "grad"]))
    (event,) = [e for e in ctx.of_type(TransformStackEvaluated) if e.group == "user"]
    assert not event.ok and event.message is not None
    assert event.message.startswith("vmap got inconsistent sizes")
    assert event.source is not None and event.source.line == args_line
    with pytest.raises(ValueError) as info:
        run_probe("vmap", text)
    assert getattr(info.value, BLAME_ATTR)[0] == args_line


def test_a_jitted_f_says_its_traces_are_those_of_its_jit_call() -> None:
    """``f = jax.jit(u)``: the tracers recorded are those reaching the jit call; inside, JAX
    traces ``u``'s body with DynamicJaxprTracers only (observed by a spy in ``u`` itself)."""
    inside: list[str] = []

    def u(x: Any) -> Any:
        inside.append(type(x).__name__)
        return jnp.sum(jnp.sin(x))

    jitted = jax.jit(u)
    x = jnp.ones((4, 3))
    event, _ = probe.evaluate(jitted, (x,), ["vmap", "grad"], 0, label="", group="user", code="")
    assert event.ok and event.traces_at_jit
    assert [n.tracer for n in event.traces[0].nodes][:2] == ["LinearizeTracer", "BatchTracer"]
    assert inside and set(inside) == {"DynamicJaxprTracer"}
    plain, _ = probe.evaluate(u, (x,), ["vmap", "grad"], 0, label="", group="user", code="")
    assert not plain.traces_at_jit
    assert "traces_at_jit" not in plain.model_dump_json()  # off the wire when False


def test_argument_leaves_past_the_drawn_ones_are_counted() -> None:
    """A model's parameters (27 leaves here, as a dict of layers): ``traces`` draws the first
    leaves and ``traces_left_out`` counts the rest, so that together they are
    ``jax.tree.leaves(args)`` and the composed jaxpr's invars; a small f leaves it off the wire."""
    params = {f"layer{i}": {"w": jnp.ones((3, 3)), "b": jnp.zeros(3)} for i in range(13)}
    args = (params, jnp.ones((4, 3)))

    def loss(p: Any, x: Any) -> Any:
        for i in range(13):
            x = jnp.tanh(x @ p[f"layer{i}"]["w"] + p[f"layer{i}"]["b"])
        return jnp.sum(x)

    event, _ = probe.evaluate(loss, args, ["grad"], 0, label="", group="user", code="")
    leaves = jax.tree.leaves(args)
    assert event.ok and event.jaxpr is not None and len(leaves) == 27
    assert len(event.traces) + event.traces_left_out == len(leaves) == len(event.jaxpr.invars)
    assert len(event.traces) < len(leaves)
    assert json.loads(event.model_dump_json())["traces_left_out"] == len(leaves) - len(event.traces)
    small, _ = probe.evaluate(jnp.sum, (jnp.ones(3),), ["grad"], 0, label="", group="user", code="")
    assert small.ok and len(small.traces) == 1
    assert "traces_left_out" not in small.model_dump_json()
