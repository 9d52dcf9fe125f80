"""The partial_eval exhibit against JAX itself: the split equals ``partial_eval_jaxpr_nounits``
called here on the same JVP jaxpr, the two halves evaluated one after the other reproduce
``jax.jvp``, the residuals agree with ``saved_residuals``, toggling known inputs changes the split
as JAX does, and every remat row agrees with ``saved_residuals``, the compiled memory analysis and
``jax.grad`` computed here."""

from __future__ import annotations

import contextlib
import io
import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jax
import jax.ad_checkpoint
import numpy as np
import pytest
from jaxscope.protocol import EqnView, RunOptions
from jaxscope.summaries import summarise_view

from exhibits.conftest import CASES, EXHIBITS, FakeContext, run_probe
from exhibits.partial_eval.artefacts import ARTEFACTS
from exhibits.partial_eval.events import JaxprSplit, RematPolicyMeasured, RematUnavailable
from exhibits.partial_eval.golden import regen
from testkit import run_cli

GOLDEN = EXHIBITS / "partial_eval" / "golden"
NAMES = sorted(regen.EXAMPLES)
REPO = EXHIBITS.parent


@pytest.fixture(scope="module")
def runs() -> dict[str, FakeContext]:
    return {name: run_probe("partial_eval", p.read_text()) for name, p in regen.EXAMPLES.items()}


def ns_of(name: str) -> dict[str, Any]:
    return regen.load(regen.EXAMPLES[name])


@pytest.mark.parametrize("name", NAMES)
def test_split_equals_partial_eval_jaxpr_nounits(runs: dict[str, FakeContext], name: str) -> None:
    event = runs[name].one(JaxprSplit)
    ns = ns_of(name)
    jvp = regen.jvp_jaxpr(ns)
    known, unknown, out_uk, res = regen.split(ns)
    assert event.jvp.text == str(jvp)
    assert event.known.text == str(known)
    assert event.unknown.text == str(unknown)
    assert event.out_unknowns == list(out_uk)
    assert [r.aval.short for r in event.residuals] == [a.str_short(short_dtypes=True) for a in res]
    n = len(jvp.jaxpr.invars)
    assert event.known_inputs == [i < n // 2 for i in range(n)]
    assert event.n_primals == n // 2
    assert len(event.input_labels) == n
    assert all(lab.startswith("primal ") for lab in event.input_labels[: n // 2])
    assert all(lab.startswith("tangent ") for lab in event.input_labels[n // 2 :])


@pytest.mark.parametrize("name", NAMES)
def test_examples_match_golden(runs: dict[str, FakeContext], name: str) -> None:
    golden = json.loads((GOLDEN / f"{name}.json").read_text())
    event = runs[name].one(JaxprSplit)
    assert event.known.text == golden["known_jaxpr"]
    assert event.unknown.text == golden["unknown_jaxpr"]
    assert [r.aval.short for r in event.residuals] == golden["residual_avals"]
    rows = {r.policy: r for r in runs[name].of_type(RematPolicyMeasured)}
    for policy, count in golden["saved_counts"].items():
        assert len(rows[policy].saved) == count
    # The primal inputs among the saved residuals (the view's "+ N inputs", savedParts in
    # view-model.ts, reads JAX's "from the argument" text): as many as the vjp jaxpr's residual
    # outputs that are its inputs (regen.saved_inputs); nothing_saveable saves nothing else.
    for policy, inputs in golden["saved_inputs"].items():
        described = [r.description.startswith("from the argument") for r in rows[policy].saved]
        assert sum(described) == inputs, policy
    assert all(
        r.description.startswith("from the argument") for r in rows["nothing_saveable"].saved
    )
    # the CLI's `--print remat` says the same
    printed = json.loads(ARTEFACTS["remat"](runs[name].events) or "{}")
    by_policy = {r["policy"]: r for r in printed["rows"]}
    for policy, inputs in golden["saved_inputs"].items():
        assert by_policy[policy]["saved_inputs"] == inputs, policy


def test_the_saved_column_does_not_say_the_inputs_are_kept_alike_by_every_policy() -> None:
    """The "+ N inputs" of the remat table's saved cell depend on the policy: plain
    ``sum(sin(x))`` keeps ``cos(x)`` (computed, no input), ``nothing_saveable`` keeps ``x`` (an
    input) and recomputes ``cos``. The column's title must not say that every row keeps them."""
    import jax.numpy as jnp

    def f(x: Any) -> Any:
        return jnp.sum(jnp.sin(x))

    def printed(fn: Any) -> list[str]:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            jax.ad_checkpoint.print_saved_residuals(fn, jnp.ones(3))  # type: ignore[no-untyped-call]
        return out.getvalue().splitlines()

    plain = printed(f)
    recomputing = printed(jax.checkpoint(f, policy=jax.checkpoint_policies.nothing_saveable))
    assert len(plain) == 1 and "output of cos" in plain[0]
    assert len(recomputing) == 1 and "from the argument" in recomputing[0]
    for words in ("RematTable.svelte", "View.svelte"):  # the column's title, the section's note
        assert "in every row" not in (EXHIBITS / "partial_eval" / words).read_text(), words


@pytest.mark.parametrize("name", NAMES)
def test_known_then_unknown_reproduces_jax_jvp(runs: dict[str, FakeContext], name: str) -> None:
    ns = ns_of(name)
    g, dyn, kw = regen.call_of(ns)
    rng = np.random.default_rng(1)
    primals = (dyn, kw)
    tangents = jax.tree.map(lambda x: regen.tangent_like(x, rng), primals)
    want_out, want_tan = jax.jvp(g, primals, tangents)
    known, unknown, out_uk, res = regen.split(ns)
    # the probe's split is this split (checked above); evaluate its two halves one after the other
    assert runs[name].one(JaxprSplit).known.text == str(known)
    p_leaves, t_leaves = jax.tree.leaves(primals), jax.tree.leaves(tangents)
    outs = jax.core.eval_jaxpr(known.jaxpr, known.consts, *p_leaves)
    n_res = len(res)
    known_outs, residuals = outs[: len(outs) - n_res], outs[len(outs) - n_res :]
    unknown_outs = jax.core.eval_jaxpr(unknown.jaxpr, unknown.consts, *residuals, *t_leaves)
    assert out_uk == [False] * (len(out_uk) // 2) + [True] * (len(out_uk) // 2)
    for got, want in zip(known_outs, jax.tree.leaves(want_out), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    for got, want in zip(unknown_outs, jax.tree.leaves(want_tan), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_sin_times_x_has_the_four_residuals_of_the_hooks_doc(runs: dict[str, FakeContext]) -> None:
    """``f(x) = sum((sin(x) * x) ** 2)``: 4 residuals of f32[3], the same JAX's
    ``saved_residuals`` and ``jax.vjp`` report (x itself, sin x, cos x, sin(x) * x)."""
    event = runs["sin_times_x"].one(JaxprSplit)
    ns = ns_of("sin_times_x")
    assert [r.aval.short for r in event.residuals] == ["f32[3]"] * 4
    _, f_vjp = jax.vjp(ns["f"], *ns["args"])
    assert len(jax.tree.leaves(f_vjp)) == 4
    saved = regen.saved(ns, None, checkpointed=False)
    kinds = Counter(
        "argument" if d.startswith("from the argument") else d.split(" from ")[0] for _, d in saved
    )
    mine = Counter(
        "argument" if r.description.startswith("the argument") else r.description
        for r in event.residuals
    )
    assert (
        kinds
        == mine
        == Counter({"argument": 1, "output of sin": 1, "output of cos": 1, "output of mul": 1})
    )
    lines = {r.description: r.source.line if r.source else None for r in event.residuals}
    assert lines == {
        "the argument primal args[0]": None,
        "output of sin": 9,
        "output of cos": 9,
        "output of mul": 10,
    }
    assert all(r.bytes == 12 for r in event.residuals)
    # each residual is produced by the known eqn it names
    for r in event.residuals:
        if r.known_eqn is not None:
            assert r.description == f"output of {event.known.eqns[r.known_eqn].primitive}"


@pytest.mark.parametrize(
    "known",
    [
        [True, True],  # everything known: nothing left for the linear jaxpr
        [False, True],  # the primal unknown: everything unknown
        [True, False],  # the default
    ],
)
def test_toggling_known_inputs_splits_as_jax_does(known: list[bool]) -> None:
    source = regen.EXAMPLES["sin_times_x"].read_text()
    event = run_probe("partial_eval", source, RunOptions(known=known)).one(JaxprSplit)
    k, u, out_uk, res = regen.split(ns_of("sin_times_x"), known)
    assert event.known_inputs == known
    assert (event.known.text, event.unknown.text) == (str(k), str(u))
    assert event.out_unknowns == list(out_uk)
    assert len(event.residuals) == len(res)


def test_toggling_one_mlp_weight_moves_its_work_to_the_unknown_side(
    runs: dict[str, FakeContext],
) -> None:
    default = runs["mlp_loss"].one(JaxprSplit)
    labels = default.input_labels
    known = list(default.known_inputs)
    known[labels.index("primal args[0]['w2']")] = False
    source = regen.EXAMPLES["mlp_loss"].read_text()
    event = run_probe("partial_eval", source, RunOptions(known=known)).one(JaxprSplit)
    k, u, out_uk, _ = regen.split(ns_of("mlp_loss"), known)
    assert (event.known.text, event.unknown.text) == (str(k), str(u))
    assert event.known.text != default.known.text
    assert event.out_unknowns == list(out_uk) == [True, True]  # the loss needs w2 now
    assert len(event.known.invars) == len(default.known.invars) - 1


def _rederived_counts(jvp: Any, known_inputs: list[bool]) -> tuple[int, int, int]:
    """(known, unknown, dead unknown) eqns of a JVP jaxpr without call eqns, derived here from
    the jaxpr alone: an eqn is unknown when any input is; an unknown eqn is live when one of its
    outputs is a jaxpr output or read by a live unknown eqn (JAX stages only those)."""
    jaxpr = jvp.jaxpr
    unknown_vars = {v for v, k in zip(jaxpr.invars, known_inputs, strict=True) if not k}
    flags = []
    for eqn in jaxpr.eqns:
        uk = any(not hasattr(v, "val") and v in unknown_vars for v in eqn.invars)
        flags.append(uk)
        if uk:
            unknown_vars.update(eqn.outvars)
    needed = {v for v in jaxpr.outvars if not hasattr(v, "val")}
    live = 0
    for eqn, uk in zip(reversed(jaxpr.eqns), reversed(flags), strict=True):
        if uk and any(v in needed for v in eqn.outvars):
            live += 1
            needed.update(v for v in eqn.invars if not hasattr(v, "val"))
    n_unknown = sum(flags)
    return len(flags) - n_unknown, live, n_unknown - live


@pytest.mark.parametrize("name", ["sin_times_x", "attention", "remat_layers"])
def test_eqn_counts_add_up_rederived(runs: dict[str, FakeContext], name: str) -> None:
    """Without call eqns nothing is split; the eqns in neither jaxpr are the dead unknown ones."""
    event = runs[name].one(JaxprSplit)
    jvp = regen.jvp_jaxpr(ns_of(name))
    assert not any(e.primitive.name in ("jit", "scan", "cond", "while") for e in jvp.jaxpr.eqns)
    n_known, n_live, n_dead = _rederived_counts(jvp, event.known_inputs)
    assert (len(event.known.eqns), len(event.unknown.eqns)) == (n_known, n_live)
    assert event.split_calls == []
    assert event.dropped == n_dead == {"attention": 5}.get(name, 0)


@pytest.mark.parametrize(
    ("name", "calls"),
    [
        ("mlp_loss", [("jit", "log_softmax"), ("jit", "take_along_axis")]),
        ("rnn_loss", [("scan", None)]),
    ],
)
def test_split_calls_have_a_part_on_each_side(
    runs: dict[str, FakeContext], name: str, calls: list[tuple[str, str | None]]
) -> None:
    event = runs[name].one(JaxprSplit)
    known, unknown, _, _ = regen.split(ns_of(name))
    jvp = regen.jvp_jaxpr(ns_of(name))
    found = [
        (jvp.jaxpr.eqns[i].primitive.name, jvp.jaxpr.eqns[i].params.get("name"))
        for i in event.split_calls
    ]
    assert found == calls
    for prim, call in calls:  # one eqn of this call in each jaxpr, each with a non-empty part
        for side in (known, unknown):
            parts = [
                e
                for e in side.jaxpr.eqns
                if e.primitive.name == prim and e.params.get("name") == call
            ]
            assert len(parts) == 1
            inner = parts[0].params["jaxpr"]
            assert len(inner.jaxpr.eqns) > 0
    n = len(jvp.jaxpr.eqns) + len(calls)
    assert (len(known.jaxpr.eqns), len(unknown.jaxpr.eqns), event.dropped) == (
        len(event.known.eqns),
        len(event.unknown.eqns),
        0,
    )
    assert len(known.jaxpr.eqns) + len(unknown.jaxpr.eqns) == n


def test_a_float0_tangent_is_never_read_so_its_flag_only_moves_an_unused_input(
    runs: dict[str, FakeContext],
) -> None:
    """mlp_loss's ``labels`` (int32): its tangent is float0, which ``jax.jvp`` makes a symbolic
    zero, so no eqn reads it; known or unknown, the eqns of both jaxprs and the residuals are the
    same (the view disables that flag and says so)."""
    default = runs["mlp_loss"].one(JaxprSplit)
    i = default.input_labels.index("tangent args[2]")
    assert default.input_avals[i].short == "float0[5]"
    jvp = regen.jvp_jaxpr(ns_of("mlp_loss"))
    var = jvp.jaxpr.invars[i]
    assert not any(var in e.invars for e in jvp.jaxpr.eqns) and var not in jvp.jaxpr.outvars
    known = list(default.known_inputs)
    known[i] = True
    k, u, out_uk, res = regen.split(ns_of("mlp_loss"), known)
    d_k, d_u, d_out, d_res = regen.split(ns_of("mlp_loss"))
    assert [str(e) for e in k.jaxpr.eqns] == [str(e) for e in d_k.jaxpr.eqns]
    assert [str(e) for e in u.jaxpr.eqns] == [str(e) for e in d_u.jaxpr.eqns]
    assert (out_uk, len(res)) == (d_out, len(d_res))
    assert (len(k.jaxpr.invars), len(u.jaxpr.invars)) == (
        len(d_k.jaxpr.invars) + 1,
        len(d_u.jaxpr.invars) - 1,
    )


def test_wrong_number_of_known_flags_is_a_clear_error() -> None:
    source = regen.EXAMPLES["sin_times_x"].read_text()
    with pytest.raises(ValueError, match=r"options.known has 3 flag\(s\).*2 inputs"):
        run_probe("partial_eval", source, RunOptions(known=[True, False, True]))


@pytest.mark.parametrize("name", NAMES)
def test_remat_rows_agree_with_saved_residuals_and_jax_grad(
    runs: dict[str, FakeContext], name: str
) -> None:
    ns = ns_of(name)
    rows = runs[name].of_type(RematPolicyMeasured)
    assert [r.index for r in rows] == list(range(len(rows)))
    assert rows[0].policy == "no checkpoint"
    leaves, loss = regen.float_leaves(ns)
    g, _, _ = regen.call_of(ns)
    want_grad = jax.grad(loss(g))(leaves)
    names = _names(rows)
    for row in rows:
        policy, checkpointed = _policy(row.policy, names)
        fn = jax.checkpoint(g, policy=policy) if checkpointed else g
        assert [(r.aval.short, r.description) for r in row.saved] == regen.saved(
            ns, policy, checkpointed
        ), row.policy
        assert row.residual_bytes == sum(r.bytes for r in row.saved)
        compiled = jax.jit(jax.grad(loss(fn))).lower(leaves).compile()
        stats = compiled.memory_analysis()
        assert stats is not None
        assert row.temp_bytes == stats.temp_size_in_bytes
        # eager jax.grad of the checkpointed variant is jax.grad(f), bit for bit
        got = jax.grad(loss(fn))(leaves)
        for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(want_grad), strict=True):
            np.testing.assert_array_equal(a, b)
        # the probe's compiled gradient against the un-checkpointed compiled one (XLA may fuse
        # differently, so the last float32 bits may differ)
        assert row.grad_max_abs_diff is not None and row.grad_max_abs_diff < 1e-5
        assert row.step_ms is not None and row.step_ms > 0 and row.repeats >= 3
        assert row.not_measured is None
        assert row.grad_of == ("f" if name != "attention" else "sum of f's outputs")


def _names(rows: list[RematPolicyMeasured]) -> list[str]:
    for row in rows:
        if row.policy.startswith("save_only_these_names("):
            return [s.strip().strip("'") for s in row.policy[22:-1].split(",")]
    return []


def _policy(label: str, names: list[str]) -> tuple[Any, bool]:
    if label == "no checkpoint":
        return None, False
    if label.startswith("save_only_these_names("):
        return jax.checkpoint_policies.save_only_these_names(*names), True
    if label.startswith("save_any_names_but_these("):
        return jax.checkpoint_policies.save_any_names_but_these(label[26:-2]), True
    return getattr(jax.checkpoint_policies, label), True


def test_remat_policies_are_the_argument_free_ones_plus_named(runs: dict[str, FakeContext]) -> None:
    plain = [r.policy for r in runs["mlp_loss"].of_type(RematPolicyMeasured)]
    assert plain == [
        "no checkpoint",
        "everything_saveable",
        "nothing_saveable",
        "dots_saveable",
        "dots_with_no_batch_dims_saveable",
    ]
    rows = runs["remat_layers"].of_type(RematPolicyMeasured)
    named = [r.policy for r in rows][5:]
    assert named == [
        "save_only_these_names('pre', 'act')",
        "save_any_names_but_these('pre')",
        "save_any_names_but_these('act')",
    ]
    by = {r.policy: r for r in rows}
    assert by["dots_saveable"].aliases == ["checkpoint_dots"]
    # the memory/compute trade is visible: saving nothing keeps fewer bytes than saving all
    assert by["nothing_saveable"].residual_bytes < by["everything_saveable"].residual_bytes
    # the named activations are what save_only_these_names keeps (besides the arguments)
    descs = [r.description for r in by["save_only_these_names('pre', 'act')"].saved]
    assert sum("named 'act'" in d for d in descs) == 3
    assert sum("named 'pre'" in d for d in descs) == 3
    lines = {r.source.line for r in by["save_any_names_but_these('pre')"].saved if r.source}
    assert lines == {14}


def test_a_non_scalar_f_still_splits_and_the_table_differentiates_the_sum(
    runs: dict[str, FakeContext],
) -> None:
    rows = runs["attention"].of_type(RematPolicyMeasured)
    assert rows and all(r.grad_of == "sum of f's outputs" for r in rows)
    assert runs["attention"].one(JaxprSplit).out_unknowns == [False, True]


def test_user_exception_propagates() -> None:
    source = "import jax.numpy as jnp\ndef f(x):\n    raise KeyError('boom')\nargs = (1.0,)\n"
    with pytest.raises(KeyError, match="boom"):
        run_probe("partial_eval", source)


TRACER_BOOL = """import jax.numpy as jnp
def f(x, n, w):
    if x[0] > w['a']:
        return jnp.sum(x) * n
    return w['a']
args = (jnp.ones(3), 2, {'a': 0.5})
static_argnums = 1
"""


def test_a_tracer_error_names_f_and_its_arguments_not_jaxscopes_wrapper() -> None:
    # Before: "tracing the function jvp_fun at .../jaxscope/internals/split.py:124" and
    # "argument p[0][0]". Now JAX's own words for f, as jax.jit(f) says them.
    import jax
    from jaxscope.sandbox.snippet import load_snippet

    snippet = load_snippet(TRACER_BOOL)
    with pytest.raises(jax.errors.TracerBoolConversionError) as info:
        run_probe("partial_eval", TRACER_BOOL)
    with pytest.raises(jax.errors.TracerBoolConversionError) as truth:
        jax.jit(snippet.f, static_argnums=1)(*snippet.args)
    assert str(info.value) == str(truth.value)
    assert "tracing the function f at <snippet>:2 for jit" in str(info.value)
    assert "the arguments x and w['a']" in str(info.value)
    assert "jvp_fun" not in str(info.value) and "split.py" not in str(info.value)


@pytest.mark.parametrize("artefact", ["known_jaxpr", "unknown_jaxpr", "residuals"])
def test_cli_print(tmp_path: Path, artefact: str) -> None:
    path = regen.EXAMPLES["sin_times_x"]
    snippet = tmp_path / "snippet.py"
    snippet.write_text(path.read_text())
    proc = run_cli("run", "partial_eval", str(snippet), "--print", artefact, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    known, unknown, _, res = regen.split(ns_of("sin_times_x"))
    if artefact == "known_jaxpr":
        assert proc.stdout == str(known) + "\n"
    elif artefact == "unknown_jaxpr":
        assert proc.stdout == str(unknown) + "\n"
    else:
        got = json.loads(proc.stdout)
        # the residuals in JAX's order (partial_eval_jaxpr_nounits), each named as the two
        # jaxprs print it: outvar n_known_out + i of the known jaxpr, invar i of the unknown one
        assert [r["aval"] for r in got] == [a.str_short(short_dtypes=True) for a in res]
        assert [r["index"] for r in got] == list(range(len(res)))
        n_known_out = len(known.jaxpr.outvars) - len(res)
        known_out_names = _printed_outvars(str(known))
        unknown_in_names = _printed_invars(str(unknown))
        assert [r["known_var"] for r in got] == known_out_names[n_known_out:]
        assert [r["unknown_var"] for r in got] == unknown_in_names[: len(res)]
        for i, r in enumerate(got):
            assert r["bytes"] == 12
            var = known.jaxpr.outvars[n_known_out + i]
            if r["known_eqn"] is None:  # x itself: an input of the known jaxpr, no producer
                assert r["what"] == "the argument primal args[0]" and r["primitive"] is None
                assert any(var is v for v in known.jaxpr.invars) and r["line"] is None
            else:
                eqn = known.jaxpr.eqns[r["known_eqn"]]
                assert any(var is v for v in eqn.outvars)  # this eqn produced the residual
                assert r["primitive"] == eqn.primitive.name
                assert r["what"] == f"output of {eqn.primitive.name}"
            # every unknown eqn that reads it, and only those
            uvar = unknown.jaxpr.invars[i]
            readers = [
                k for k, e in enumerate(unknown.jaxpr.eqns) if any(uvar is v for v in e.invars)
            ]
            assert [x["eqn"] for x in r["read_by"]] == readers
            assert [x["primitive"] for x in r["read_by"]] == [
                unknown.jaxpr.eqns[k].primitive.name for k in readers
            ]
        assert sorted((r["primitive"], r["line"]) for r in got if r["primitive"]) == [
            ("cos", 9),
            ("mul", 10),
            ("sin", 9),
        ]


def _printed_outvars(text: str) -> list[str]:
    """The outvar names of a jaxpr as JAX prints it: ``... in (a, b) }``."""
    inner = text.rsplit(" in ", 1)[1].strip().removesuffix("}").strip()
    return [n.strip() for n in inner.strip("()").split(",") if n.strip()]


def _printed_invars(text: str) -> list[str]:
    """The invar names of a jaxpr as JAX prints it: ``{ lambda consts ; a:f32[3] b:f32[3]. let``."""
    binders = text.split(";", 1)[1].split(". let", 1)[0]
    return [b.split(":")[0] for b in binders.split()]


def test_python_scalar_and_kwargs_and_static_argnames() -> None:
    source = (
        "import jax.numpy as jnp\n"
        "def f(x, s, *, w, scale):\n"
        "    return jnp.sum(jnp.tanh(x * w) * s) * scale\n"
        "args = (jnp.ones(3), 2.0)\n"
        "kwargs = {'w': jnp.arange(3.0), 'scale': 3}\n"
        "static_argnames = ('scale',)\n"
    )
    ctx = run_probe("partial_eval", source)
    event = ctx.one(JaxprSplit)
    assert event.input_labels == [
        "primal args[0]",
        "primal args[1]",
        "primal kwargs['w']",
        "tangent args[0]",
        "tangent args[1]",
        "tangent kwargs['w']",
    ]
    rows = ctx.of_type(RematPolicyMeasured)
    assert rows and all(r.grad_of == "f" for r in rows)
    assert all(r.grad_max_abs_diff is not None and r.grad_max_abs_diff < 1e-6 for r in rows)
    # the static scale=3 is closed over: it is a literal of the jaxpr, not an input
    assert "3.0" in event.known.text


def test_a_nan_gradient_keeps_the_remat_table() -> None:
    """C22's gradient has NaNs: every remat row still arrives, the NaNs count as equal."""
    ctx = run_probe("partial_eval", (CASES / "C22_where_sqrt_broken.py").read_text())
    rows = ctx.of_type(RematPolicyMeasured)
    assert len(rows) >= 4
    assert all(r.grad_max_abs_diff == 0.0 for r in rows)


# ---- remat unavailable: jax.grad refuses, the split stays (fix-review-34 item 2) ---------------

WHILE_LOOP = EXHIBITS / "partial_eval" / "fixtures" / "while_loop_bound.py"


def test_remat_unavailable_keeps_the_split_and_shows_jaxs_error() -> None:
    ns = regen.load(WHILE_LOOP)
    # the truth: JAX's own jax.grad refuses this f (reverse mode through a traced-bound loop)
    with pytest.raises(ValueError) as info:
        jax.grad(ns["f"])(*ns["args"])
    ctx = run_probe("partial_eval", WHILE_LOOP.read_text())
    event = ctx.one(JaxprSplit)
    known, unknown, _, _ = regen.split(ns)
    assert event.known.text == str(known) and event.unknown.text == str(unknown)
    assert not ctx.of_type(RematPolicyMeasured)
    unavailable = ctx.one(RematUnavailable)
    assert ctx.events[-1] is unavailable  # in the table's place, and the run ends normally
    assert unavailable.error_class == type(info.value).__name__ == "ValueError"
    assert unavailable.message == str(info.value)
    assert "reverse mode" in unavailable.explanation and "while_loop" in unavailable.explanation


def test_cli_known_jaxpr_of_a_snippet_without_remat_table(tmp_path: Path) -> None:
    snippet = tmp_path / "snippet.py"
    snippet.write_text(WHILE_LOOP.read_text())
    proc = run_cli("run", "partial_eval", str(snippet), "--print", "known_jaxpr", cwd=REPO)
    # the split is printed; jax.grad's refusal (the remat table's place) exits 3
    assert proc.returncode == 3, proc.stderr
    known, _, _, _ = regen.split(regen.load(WHILE_LOOP))
    assert proc.stdout == str(known) + "\n"
    assert "while" in proc.stdout
    ns = regen.load(WHILE_LOOP)
    with pytest.raises(ValueError) as info:
        jax.grad(ns["f"])(*ns["args"])
    first = str(info.value).splitlines()[0]
    assert "the run finished; JAX raised ValueError in jax.grad(f)" in proc.stderr
    assert f"  ValueError: {first}" in proc.stderr and "--print remat" in proc.stderr
    proc = run_cli("run", "partial_eval", str(snippet), "--print", "remat", cwd=REPO)
    assert proc.returncode == 3, proc.stderr
    remat = json.loads(proc.stdout)
    assert remat["rows"] == []
    assert remat["unavailable"]["error_class"] == "ValueError"
    assert remat["unavailable"]["message"] == str(info.value)


def test_a_function_too_large_for_the_remat_table_gets_the_split_and_a_reason(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from exhibits.partial_eval import probe as pe_probe

    monkeypatch.setattr(pe_probe, "MAX_REMAT_EQNS", 5)
    source = (
        "import jax.numpy as jnp\n\n\n"
        "def f(x):\n"
        "    return jnp.sum(jnp.sin(x) * x)\n\n\n"
        "args = (jnp.ones(3),)\n"
    )
    ctx = run_probe("partial_eval", source)
    split = ctx.one(JaxprSplit)
    unavailable = ctx.one(RematUnavailable)
    assert unavailable.reason == "too_large"
    assert f"has {len(split.jvp.eqns):,} eqns" in unavailable.message
    assert ctx.of_type(RematPolicyMeasured) == []


# ---- a program too large to compile once per row: residuals only (issue 14, class B) ----------

GPT_STACK = REPO / "examples" / "real" / "gpt_stack.py"
BACKEND_COMPILE = "/jax/core/compile/backend_compile_duration"  # jax._src.dispatch


def _vjp_residuals(fn: Any, dyn: Any, kw: Any) -> list[Any]:
    """The residuals ``jax.vjp`` keeps for ``fn``: the leaves of its pullback (a pytree that
    closes over them), abstractly evaluated (no compile, no FLOP)."""
    return jax.tree.leaves(jax.eval_shape(lambda d, k: jax.vjp(fn, d, k)[1], dyn, kw))


def _printed_residuals(fn: Any, dyn: Any, kw: Any) -> list[str]:
    """What ``jax.ad_checkpoint.print_saved_residuals`` prints, one line per residual."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        jax.ad_checkpoint.print_saved_residuals(fn, dyn, kw)  # type: ignore[no-untyped-call]
    return out.getvalue().splitlines()


@pytest.fixture(scope="module")
def gpt_stack() -> tuple[FakeContext, list[float]]:
    """The 12-layer GPT stack of examples/real through the probe in-process (~10 s on 2 cores),
    and the XLA backend compiles JAX reported while it ran (``jax.monitoring``)."""
    compiles: list[float] = []

    def on_event(event: str, duration_secs: float, **_: str | int) -> None:
        if event == BACKEND_COMPILE:
            compiles.append(duration_secs)

    jax.monitoring.register_event_duration_secs_listener(on_event)
    try:
        ctx = run_probe("partial_eval", GPT_STACK.read_text())
    finally:
        jax.monitoring.unregister_event_duration_listener(on_event)
    return ctx, compiles


def _all_eqns(eqns: Sequence[EqnView]) -> int:
    """Eqns of a view, those of its inner jaxprs (its calls' bodies) included."""
    return sum(1 + sum(_all_eqns(inner.eqns) for inner in e.inner_jaxprs) for e in eqns)


def test_a_jitted_f_is_counted_with_the_eqns_inside_its_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``f = jax.jit(f)``: the JVP jaxpr is one call eqn; the compile limit counts what it
    holds (a reviewer's jitted GPT stack timed out compiling five rows it thought 1 eqn)."""
    from exhibits.partial_eval import probe as pe_probe

    source = regen.EXAMPLES["remat_layers"].read_text() + "\nf = jax.jit(f)\n"
    monkeypatch.setattr(pe_probe, "MAX_COMPILED_EQNS", 30)
    ctx = run_probe("partial_eval", source)
    jvp = ctx.one(JaxprSplit).jvp
    whole = _all_eqns(jvp.eqns)
    assert [e.primitive for e in jvp.eqns] == ["jit"] and whole > 30
    rows = ctx.of_type(RematPolicyMeasured)
    assert rows and all(r.not_measured == pe_probe.not_compiled(whole) for r in rows)
    assert all(r.step_ms is None for r in rows)


def test_gpt_stack_remat_table_is_residuals_only_and_says_what_it_did_not_measure(
    gpt_stack: tuple[FakeContext, list[float]],
) -> None:
    from exhibits.partial_eval import probe as pe_probe

    ctx, compiles = gpt_stack
    n_eqns = len(ctx.one(JaxprSplit).jvp.eqns)
    assert n_eqns == len(regen.jvp_jaxpr(regen.load(GPT_STACK)).jaxpr.eqns) == 2448
    assert pe_probe.MAX_COMPILED_EQNS < n_eqns <= pe_probe.MAX_REMAT_EQNS
    assert not ctx.of_type(RematUnavailable)
    rows = ctx.of_type(RematPolicyMeasured)
    assert [r.policy for r in rows] == [
        "no checkpoint",
        "everything_saveable",
        "nothing_saveable",
        "dots_saveable",
        "dots_with_no_batch_dims_saveable",
    ]
    assert compiles == []  # nothing was compiled: not the 5 gradients, not anything else
    # the limit counts the eqns inside the JVP's calls too (jnp helpers' jit eqns here)
    whole = _all_eqns(ctx.one(JaxprSplit).jvp.eqns)
    assert whole == 2638
    for row in rows:
        assert row.not_measured is not None
        assert row.not_measured.startswith(
            "Not measured for a program this size: the JVP jaxpr has 2,638 eqns (those inside "
            "its calls included), and the table compiles its rows only up to 500."
        )
        assert "run a part of the program" in row.not_measured
        # what was not measured is empty, never a made-up number
        assert (row.temp_bytes, row.step_ms, row.grad_max_abs_diff, row.repeats) == (
            None,
            None,
            None,
            0,
        )


def test_gpt_stack_residual_columns_match_jax_vjp_and_print_saved_residuals(
    gpt_stack: tuple[FakeContext, list[float]],
) -> None:
    ctx, _ = gpt_stack
    rows = ctx.of_type(RematPolicyMeasured)
    ns = regen.load(GPT_STACK)
    g, dyn, kw = regen.call_of(ns)
    counts = {}
    for row in rows:
        policy, checkpointed = _policy(row.policy, [])
        fn = jax.checkpoint(g, policy=policy) if checkpointed else g
        # JAX's public printout of the saved residuals, line for line
        printed = _printed_residuals(fn, dyn, kw)
        assert [f"{r.aval.short} {r.description}" for r in row.saved] == printed, row.policy
        # and the residuals jax.vjp's pullback closes over: as many, as large, the same shapes
        leaves = _vjp_residuals(fn, dyn, kw)
        assert len(row.saved) == len(leaves), row.policy
        assert row.residual_bytes == sum(x.size * x.dtype.itemsize for x in leaves)
        assert row.residual_bytes == sum(r.bytes for r in row.saved)
        assert Counter(tuple(r.aval.shape) for r in row.saved) == Counter(x.shape for x in leaves)
        counts[row.policy] = len(row.saved)
    # the trade the table shows: saving nothing keeps a third of the residuals
    assert counts == {
        "no checkpoint": 468,
        "everything_saveable": 444,
        "nothing_saveable": 150,
        "dots_saveable": 247,
        "dots_with_no_batch_dims_saveable": 223,
    }


def test_below_the_compile_limit_every_row_is_compiled_and_above_it_keeps_its_residuals(
    runs: dict[str, FakeContext], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The limit is on the JVP's eqns, inclusive; past it each row keeps exactly the residuals
    the compiled run shows, and nothing else."""
    from exhibits.partial_eval import probe as pe_probe

    source = regen.EXAMPLES["remat_layers"].read_text()
    compiled = runs["remat_layers"].of_type(RematPolicyMeasured)
    n_eqns = len(runs["remat_layers"].one(JaxprSplit).jvp.eqns)
    assert n_eqns <= pe_probe.MAX_COMPILED_EQNS and all(r.not_measured is None for r in compiled)
    monkeypatch.setattr(pe_probe, "MAX_COMPILED_EQNS", n_eqns)
    at_limit = run_probe("partial_eval", source).of_type(RematPolicyMeasured)
    assert all(r.not_measured is None and r.step_ms is not None for r in at_limit)
    monkeypatch.setattr(pe_probe, "MAX_COMPILED_EQNS", n_eqns - 1)
    past = run_probe("partial_eval", source).of_type(RematPolicyMeasured)
    assert [r.policy for r in past] == [r.policy for r in compiled]
    for a, b in zip(past, compiled, strict=True):
        assert a.saved == b.saved and a.residual_bytes == b.residual_bytes
        assert a.not_measured == pe_probe.not_compiled(n_eqns)
        assert f"the JVP jaxpr has {n_eqns:,} eqns" in (a.not_measured or "")
        assert (a.temp_bytes, a.step_ms, a.grad_max_abs_diff, a.repeats) == (None, None, None, 0)


def test_cli_remat_of_gpt_stack_finishes_with_the_residual_columns() -> None:
    """The run that timed out (issue 14, class B: 5 compiles of ~16 s against a 59 s limit)."""
    proc = run_cli("run", "partial_eval", str(GPT_STACK), "--print", "remat", cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    remat = json.loads(proc.stdout)
    assert remat["unavailable"] is None
    assert [len(r["saved"]) for r in remat["rows"]] == [468, 444, 150, 247, 223]
    for r in remat["rows"]:
        assert (r["temp_bytes"], r["step_ms"], r["grad_max_abs_diff"]) == (None, None, None)
        assert r["not_measured"].startswith("Not measured for a program this size")


def test_residuals_of_a_summarised_split_say_what_is_unknown(runs: dict[str, FakeContext]) -> None:
    """A program too large for one event (the 20,000-eqn loop) has its known and unknown jaxprs
    as summaries of their first eqns (``jaxscope.summaries``). The residual table then names a
    producer only when the summary holds it, and ``read_by`` is null (a reader may be among the
    eqns left out), never a shorter list; the CLI used to fail there with an IndexError."""
    event = runs["sin_times_x"].one(JaxprSplit)
    extract = ARTEFACTS["residuals"]
    whole = json.loads(extract([event]) or "")
    keep = 1
    summary = event.model_copy(
        update={
            "known": summarise_view(event.known, keep),
            "unknown": summarise_view(event.unknown, keep),
        }
    )
    assert summary.known.total_eqns == len(event.known.eqns) > keep
    cut = json.loads(extract([summary]) or "")
    assert len(cut) == len(whole)
    for full, row in zip(whole, cut, strict=True):
        assert row["read_by"] is None
        held = full["known_eqn"] is not None and full["known_eqn"] < keep
        assert row["primitive"] == (full["primitive"] if held else None)
        same = ("index", "known_var", "unknown_var", "aval", "bytes", "what", "known_eqn", "line")
        assert {k: row[k] for k in same} == {k: full[k] for k in same}
    # the whole split still names every producer and reader (test_cli_print checks them)
    assert all(r["read_by"] is not None for r in whole)
    assert any(r["known_eqn"] is not None and r["known_eqn"] >= keep for r in whole)


PRNG_KEY_ARG = """\
import jax
import jax.numpy as jnp


def f(key, x):
    noise = jax.random.normal(key, x.shape)
    return jnp.sum((x + noise) ** 2)


args = (jax.random.key(0), jnp.ones(5))
"""


def test_a_typed_prng_key_argument_is_measured_in_every_row() -> None:
    """A typed key (``key<fry>``, no numpy dtype) saved as a residual: the remat table sized it
    with ``np.dtype`` and stopped after two rows with "Cannot interpret 'key<fry>' as a data
    type", told as JAX's refusal of reverse mode (a break-it review). Every row is measured
    now; a saved key counts the bytes ``jax.Array.nbytes`` gives it."""
    ctx = run_probe("partial_eval", PRNG_KEY_ARG)
    rows = [e for e in ctx.events if isinstance(e, RematPolicyMeasured)]
    assert not [e for e in ctx.events if isinstance(e, RematUnavailable)]
    assert len(rows) == 5 and all(r.temp_bytes is not None for r in rows)
    key_bytes = jax.random.key(0).nbytes
    assert key_bytes == 8
    for row in rows:
        keys = [r for r in row.saved if r.aval.dtype.startswith("key<")]
        assert all(r.bytes == key_bytes for r in keys)
        assert row.residual_bytes == sum(r.bytes for r in row.saved)
    assert any(r.aval.dtype.startswith("key<") for row in rows for r in row.saved)
    # the gradient each row compiled is the un-checkpointed one
    assert all(r.grad_max_abs_diff == 0.0 for r in rows)


def test_a_table_stopped_after_some_rows_says_they_stand() -> None:
    from exhibits.partial_eval.probe import WHY_UNAVAILABLE, why_stopped

    assert "no policy can be measured" in WHY_UNAVAILABLE
    said = why_stopped(2)
    assert said.startswith("The 2 rows above were measured") and "no policy" not in said
    assert why_stopped(1).startswith("The row above was measured;")
