"""Real code: a snippet with no ``in_specs`` whose ``f`` calls ``jax.shard_map`` itself. The
exhibit finds the call in ``f``'s jaxpr and checks it with the arrays ``f`` passed it.

Truths: JAX's own text of the call's eqn (``jax.make_jaxpr(f)``), the call's inputs computed
with numpy, the loss computed with numpy and by plain ``f``, and the snippet's line of the call
read from its text.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jax
import numpy as np
import pytest
from jaxscope.sandbox.snippet import InvalidSnippet

from exhibits.conftest import CASES, EXHIBITS, jaxscope_run, run_probe
from exhibits.shard_map.events import ShardMapBodyTraced, ShardMapChecked, ShardMapOutputsAssembled
from exhibits.shard_map.golden.regen import load

EXAMPLE = EXHIBITS / "shard_map" / "examples" / "found_in_jit.py"

HEADER = """import jax
import jax.numpy as jnp
from functools import partial
from jax.sharding import AxisType, PartitionSpec as P

mesh = jax.make_mesh((4,), ("x",), axis_types=(AxisType.Auto,))
"""


def line_of(text: str, piece: str) -> int:
    return next(i for i, t in enumerate(text.splitlines(), 1) if piece in t)


def test_the_call_inside_a_jitted_f_is_found_with_the_inputs_f_made() -> None:
    text = EXAMPLE.read_text()
    ctx = run_probe("shard_map", text)
    checked = ctx.one(ShardMapChecked)
    assert checked.ok and checked.found is not None
    (site,) = checked.found.sites
    assert site.line == line_of(text, "return jax.shard_map(")
    assert site.within == ["jit(f)"] and site.reachable and checked.found.shown == 0
    assert checked.mesh_axes == ["batch"] and checked.mesh_shape == [8]
    assert checked.in_specs == "(P(), P('batch',), P('batch',))"
    # the inputs are what f passed the call: x normalised row by row (numpy)
    ns = load(EXAMPLE)
    w, x, y = (np.asarray(a, np.float64) for a in ns["args"])
    xn = x / np.linalg.norm(x, axis=1, keepdims=True)
    body = ctx.one(ShardMapBodyTraced)
    assert [(v.name, v.spec, v.global_shape, v.aval.short) for v in body.inputs] == [
        ("args[0]", "P()", [4, 1], "f32[4,1]"),
        ("args[1]", "P('batch',)", [16, 4], "f32[2,4]{V:batch}"),
        ("args[2]", "P('batch',)", [16, 1], "f32[2,1]{V:batch}"),
    ]
    # the body is the one JAX staged for the call (JAX's own text of the eqn's jaxpr)
    closed = jax.make_jaxpr(ns["f"])(*ns["args"])
    inner = closed.jaxpr.eqns[0].params["jaxpr"]
    (smap,) = [e for e in inner.eqns if e.primitive.name == "shard_map"]
    assert body.jaxpr is not None
    # (a ClosedJaxpr prints as its jaxpr: ``str`` of the eqn's jaxpr is JAX's text)
    assert body.jaxpr.text == str(smap.params["jaxpr"])
    # the collectives keep the user's lines in the body function
    pmean = line_of(text, "jax.lax.pmean(")
    lines = [(c.primitive, c.source and c.source.line) for c in body.collectives]
    assert ("psum_invariant", pmean) in lines
    # the output: the mean squared error over the whole batch (numpy), as plain f computes it
    want = np.mean((np.tanh(xn @ w) - y) ** 2)
    (out,) = ctx.one(ShardMapOutputsAssembled).outputs
    got = float(out.preview)
    assert got == pytest.approx(want, rel=1e-5)
    assert got == pytest.approx(float(ns["f"](*ns["args"])), rel=1e-6)
    assert ctx.one(ShardMapOutputsAssembled).reference == "none"


def test_several_calls_are_listed_and_a_loop_body_is_not_evaluated_to() -> None:
    text = HEADER + (
        "@partial(jax.shard_map, mesh=mesh, in_specs=P('x'), out_specs=P())\n"
        "def total(a):\n"
        "    return jax.lax.psum(a.sum(), 'x')\n"
        "\n"
        "def f(x):\n"
        "    def step(c, _):\n"
        "        return c + total(x * c), None\n"
        "    c, _ = jax.lax.scan(step, 1.0, None, length=2)\n"
        "    return total(jnp.sin(x)) + c\n"
        "\n"
        "args = (jnp.arange(8.0),)\n"
    )
    ctx = run_probe("shard_map", text)
    checked = ctx.one(ShardMapChecked)
    assert checked.found is not None
    sites = [(s.line, s.within, s.reachable) for s in checked.found.sites]
    loop_line = line_of(text, "return c + total(")
    call_line = line_of(text, "return total(jnp.sin(x))")
    assert sites == [(loop_line, ["scan"], False), (call_line, [], True)]
    assert checked.found.shown == 1
    (out,) = ctx.one(ShardMapOutputsAssembled).outputs
    assert float(out.preview) == pytest.approx(float(np.sin(np.arange(8.0)).sum()), rel=1e-5)


def test_an_f_without_shard_map_says_what_the_exhibit_needs() -> None:
    with pytest.raises(InvalidSnippet, match="makes no shard_map call"):
        run_probe("shard_map", HEADER + "def f(x):\n    return x * 2\nargs = (jnp.ones(4),)\n")


def test_the_cli_prints_the_found_call() -> None:
    proc = jaxscope_run("shard_map", EXAMPLE, "--print", "verdict")
    assert proc.returncode == 0, proc.stderr
    verdict = json.loads(proc.stdout)
    line = line_of(EXAMPLE.read_text(), "return jax.shard_map(")
    assert verdict["ok"] and verdict["found"] == {
        "sites": [{"line": line, "within": ["jit(f)"], "reachable": True}],
        "shown": 0,
    }


UNCHECKED = HEADER + (
    "def f(x):\n"
    "    return jax.shard_map(\n"
    "        lambda a: a.sum(keepdims=True), mesh=mesh, in_specs=P('x'), out_specs=P(),\n"
    "        check_vma=False,\n"
    "    )(x)\n"
    "\n"
    "args = (jnp.arange(16.0),)\n"
)


def test_devices_that_disagree_on_a_replicated_output_are_a_finding(tmp_path: Path) -> None:
    # plain JAX: out_specs=P() claims every device holds the same sum; with check_vma=False JAX
    # trusts it, and each device holds the sum of its own block (numpy)
    ns: dict[str, Any] = {}
    exec(compile(UNCHECKED, "<snippet>", "exec"), ns)
    out = ns["f"](*ns["args"])
    blocks = np.arange(16.0).reshape(4, 4).sum(axis=1)
    shards = sorted(out.addressable_shards, key=lambda s: s.device.id)
    held = [float(np.asarray(s.data)[0]) for s in shards]
    assert held == list(blocks) and float(out[0]) == blocks[0]
    path = tmp_path / "unchecked.py"
    path.write_text(UNCHECKED)
    proc = jaxscope_run("shard_map", path, "--print", "verdict")
    assert proc.returncode == 3, proc.stderr  # a finding, at the call's line
    line = line_of(UNCHECKED, "return jax.shard_map(")
    assert f"ReplicasDiffer) at line {line}" in proc.stderr
    assert f"holds {blocks[0]:g}" in proc.stderr and f"holds {blocks[1]:g}" in proc.stderr
    verdict = json.loads(proc.stdout)
    assert not verdict["ok"] and verdict["replicas_differ"] == ["out[0]"]  # the call's outputs


def test_a_psum_makes_the_copies_agree(tmp_path: Path) -> None:
    fixed = UNCHECKED.replace("a.sum(keepdims=True)", "jax.lax.psum(a.sum(keepdims=True), 'x')")
    path = tmp_path / "fixed.py"
    path.write_text(fixed)
    proc = jaxscope_run("shard_map", path, "--print", "verdict")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["replicas_differ"] == []


def test_a_call_inside_a_cond_branch_has_the_conds_line() -> None:
    # JAX records the branch's eqns with no user frame: the cond's line stands in
    text = HEADER + (
        "sm = jax.shard_map(lambda a: a * 2, mesh=mesh, in_specs=P('x'), out_specs=P('x'))\n"
        "\n"
        "def f(x, p):\n"
        "    return jax.lax.cond(p, sm, lambda a: a, x)\n"
        "\n"
        "args = (jnp.arange(8.0), True)\n"
    )
    with pytest.raises(InvalidSnippet) as info:
        run_probe("shard_map", text)
    assert f"(lines {line_of(text, 'jax.lax.cond(')})" in str(info.value)


@pytest.mark.parametrize("case", ["SM01_unchecked_loss_in_jit", "SM02_grads_not_reduced"])
def test_real_cases_an_unreduced_value_is_found_and_the_fix_is_clean(case: str) -> None:
    broken = (CASES / f"{case}_broken.py").read_text()
    ns: dict[str, Any] = {}
    exec(compile(broken, "<snippet>", "exec"), ns)
    w, x, y = ns["args"]
    # plain JAX, truth: each device holds the result of its own quarter of the batch
    out = ns["f"](w, x, y)
    shards = sorted(out.addressable_shards, key=lambda s: s.device.id)
    held = [np.asarray(s.data) for s in shards]
    assert not all(np.allclose(held[0], h) for h in held[1:])
    quarter = (w, x[:2], y[:2])  # device 0's block of the batch
    if case.startswith("SM01"):
        want0 = np.mean((np.asarray(x[:2]) @ np.asarray(w) - np.asarray(y[:2])) ** 2)
    else:
        want0 = np.asarray(w) - 0.1 * np.asarray(jax.grad(ns["loss"])(*quarter))
    np.testing.assert_allclose(held[0], want0, rtol=1e-5)
    proc = jaxscope_run("shard_map", CASES / f"{case}_broken.py", "--print", "verdict")
    assert proc.returncode == 3, proc.stderr
    assert f"ReplicasDiffer) at line {line_of(broken, 'return jax.shard_map(')}" in proc.stderr
    fixed = jaxscope_run("shard_map", CASES / f"{case}_fixed.py", "--print", "verdict")
    assert fixed.returncode == 0, fixed.stderr
    assert json.loads(fixed.stdout)["ok"]
