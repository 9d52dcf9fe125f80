"""The stations' links in a Python loop of named scopes (the layers of a transformer written as
``for i in ...: with jax.named_scope(f"layer{i}"): x = block(x)``), through the probe.

Every layer runs the same lines, so the user frames of layer 0's eqns equal layer 2's; only the
name stack tells them apart (``EqnView.name_stack`` ``layer0``, the HLO ``op_name``
``jit(f)/layer0/reduce_sum``, ``jit(f)/transpose(jvp(layer0))/mul`` under ``jax.grad``). An eqn
of one layer must link to the StableHLO ops and optimized HLO instructions of that layer only,
and an op or instruction to the eqns of its own layer (a review of ``gpt_stack.py`` found eqn 3,
a ``reduce_sum`` of layer0, linked to 36 instructions of layer0..layer11)."""

from __future__ import annotations

import re

import pytest
from jaxscope.internals.lowering import _scope_prefixes
from jaxscope.protocol import JaxprStaged

from exhibits.conftest import run_probe
from exhibits.stations.events import ExecutableCompiled, ModuleLowered

SCOPED = """
import jax
import jax.numpy as jnp

def norm(x):
    return x - jnp.mean(x, axis=-1, keepdims=True)

def block(x):
    return jnp.tanh(norm(x)) * 2.0

def f(x):
    for i in range(3):
        with jax.named_scope(f"layer{i}"):
            x = block(x)
    return jnp.sum(x)

args = (jnp.ones((4, 8)),)
"""

# The same loop differentiated: forward eqns under jvp(layer<i>), backward ones under
# transpose(jvp(layer<i>)).
GRAD = SCOPED.replace("def f(x):", "def loss(x):") + "\nf = jax.grad(loss)\n"

_LAYER_RE = re.compile(r"layer(\d+)")


def _layers(name: str | None) -> set[str]:
    """The layers a name stack or op name (``a;b`` for a merged instruction) names."""
    return set(_LAYER_RE.findall(name or ""))


def _calls(line: str) -> list[str]:
    m = re.search(r"\bcalls=\{?((?:%[^\s,}]+(?:, )?)+)\}?", line)
    return re.findall(r"%([^\s,}]+)", m.group(1)) if m else []


@pytest.mark.parametrize("source", [SCOPED, GRAD], ids=["forward", "grad"])
def test_an_eqn_links_to_its_own_layer_only(source: str) -> None:
    ctx = run_probe("stations", source)
    eqns = ctx.one(JaxprStaged).jaxpr.eqns
    layer_of = {e.index: _layers(e.name_stack) for e in eqns}
    assert {frozenset(v) for v in layer_of.values()} >= {frozenset({str(i)}) for i in range(3)}
    lowered = ctx.one(ModuleLowered)
    compiled = ctx.one(ExecutableCompiled)
    text = compiled.compiled_text.splitlines()

    # Optimized HLO: an instruction links to eqns of the layer its op_name names, and to
    # unscoped eqns only when its op_name names no layer.
    by_computation: dict[str, list[set[str]]] = {}
    for link in compiled.hlo_links:
        by_computation.setdefault(link.computation, []).append(_layers(link.op_name))
    linked = 0
    for link in compiled.hlo_links:
        if not link.eqn_indices:
            continue
        allowed = _layers(link.op_name)
        if link.opcode == "fusion":
            # A fusion computes what it fuses: eqns of the layers its instructions name.
            for called in _calls(text[link.line]):
                allowed = allowed.union(*by_computation.get(called, []))
        for k in link.eqn_indices:
            assert layer_of[k] <= allowed, (link, k, layer_of[k])
            if not allowed:
                assert not layer_of[k], (link, k)
        linked += 1
    assert linked

    # StableHLO: the same, op by op.
    for op in lowered.op_links:
        for k in op.eqn_indices:
            assert layer_of[k] == _layers(op.name_stack), (op, k)

    # Eqn -> instructions (what the page highlights for a selected eqn): each layer's first
    # reduce_sum (the mean in norm) has instructions, all of its own layer, as many as the others.
    counts = []
    for layer in "012":
        k = next(
            e.index for e in eqns if e.primitive == "reduce_sum" and layer_of[e.index] == {layer}
        )
        hlo = [h for h in compiled.hlo_links if k in h.eqn_indices and h.opcode != "fusion"]
        ops = [op for op in lowered.op_links if k in op.eqn_indices]
        assert hlo and ops, (layer, k)
        assert all(f"layer{layer}" in (h.op_name or "") for h in hlo), hlo
        assert all(_layers(op.name_stack) == {layer} for op in ops), ops
        counts.append((len(hlo), len(ops)))
    assert len(set(counts)) == 1, counts


def test_scope_prefixes() -> None:
    """The scopes an op name may come from: without JAX's ``jit(f)``, longest first; ``/``
    inside a transform's parentheses does not split."""
    assert _scope_prefixes("jit(f)/layer0/attn/dot_general") == [
        "layer0/attn/dot_general",
        "layer0/attn",
        "layer0",
        "",
    ]
    assert _scope_prefixes("jit(f)/transpose(jvp(layer0/attn))/mul") == [
        "transpose(jvp(layer0/attn))/mul",
        "transpose(jvp(layer0/attn))",
        "",
    ]
    assert _scope_prefixes("jit(f)") == ["jit(f)", ""]
    assert _scope_prefixes("reduce_sum") == ["reduce_sum", ""]
