"""``EqnView.name_stack`` is JAX's name stack of each eqn (``jax.named_scope``, nested, and the
transforms JAX wraps around it), checked against ``eqn.source_info.name_stack`` and against the
op names JAX writes into the lowered StableHLO (``loc("jit(f)/layer0/inner/sin")``) and HLO
(``op_name="jit(f)/transpose(jvp(layer1))/inner/mul"``): the name the graph groups an eqn by is
the one a profile or an HLO dump shows for it."""

from __future__ import annotations

import re
from typing import Any

import jax
import jax.numpy as jnp
import pytest
from jaxscope.internals.views import jaxpr_view

# Primitives each of which lowers to ops named after it, so that every eqn of them has its op.
LOWERED_AS_ITSELF = {"sin", "cos", "mul", "add"}


def g(x: Any) -> Any:
    with jax.named_scope("inner"):
        return jnp.sin(x) * 2.0


def f(x: Any) -> Any:
    for i in range(2):
        with jax.named_scope(f"layer{i}"):
            x = g(x) + 1.0
    return x.sum()


def _op_names(text: str) -> set[str]:
    # StableHLO: `loc("jit(f)/layer0/add"(#loc3))`; HLO: `op_name="jit(f)/layer0/add"`.
    return set(re.findall(r'loc\("([^"]*)"', text)) | set(re.findall(r'op_name="([^"]*)"', text))


@pytest.mark.parametrize("transform", ["none", "grad"])
def test_name_stack_is_jaxs_and_names_the_lowered_ops(transform: str) -> None:
    fun = f if transform == "none" else jax.grad(f)
    x = jnp.ones(3)
    closed = jax.make_jaxpr(fun)(x)
    view = jaxpr_view(closed)
    stacks = [e.name_stack for e in view.eqns]
    assert stacks == [
        str(e.source_info.name_stack) if e.source_info.name_stack.stack else ""
        for e in closed.jaxpr.eqns
    ]
    # Nested scopes, in the order entered, and (under grad) the transforms around them.
    if transform == "none":
        assert stacks[:3] == ["layer0/inner", "layer0/inner", "layer0"]
        assert stacks[-1] == ""
    else:
        assert "jvp(layer1)/inner" in stacks
        assert "transpose(jvp(layer0))/inner" in stacks
    lowered = jax.jit(fun).lower(x)
    names = _op_names(lowered.as_text(debug_info=True))
    names |= _op_names(lowered.as_text(dialect="hlo", debug_info=True))
    # Each eqn's op name as JAX writes it; ops JAX named after these primitives (before `;`,
    # where MLIR fused two locations).
    expected = {
        (f"jit(f)/{e.name_stack}/" if e.name_stack else "jit(f)/") + e.primitive
        for e in view.eqns
        if e.primitive in LOWERED_AS_ITSELF
    }
    lowered_ops = {
        n.split(";")[0] for n in names if n.split(";")[0].rsplit("/", 1)[-1] in LOWERED_AS_ITSELF
    }
    assert lowered_ops <= expected
    if transform == "none":
        assert lowered_ops == expected
    else:
        # jit drops the forward eqns the gradient does not need (the last layer's sin).
        assert len(lowered_ops) >= 6


def test_an_empty_name_stack_is_left_off_the_wire() -> None:
    view = jaxpr_view(jax.make_jaxpr(f)(jnp.ones(3)))
    wire = view.model_dump(mode="json")
    assert wire["eqns"][0]["name_stack"] == "layer0/inner"
    assert "name_stack" not in wire["eqns"][-1]
