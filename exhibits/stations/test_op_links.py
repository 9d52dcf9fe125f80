"""Unit tests of the MLIR location parser and the op-line matching behind ``OpLink``
(``jaxscope.internals.lowering``), on hand-written debug texts in the form JAX prints."""

from __future__ import annotations

import pytest
from jaxscope.internals.lowering import (
    CallSiteLoc,
    FileLoc,
    FusedLoc,
    NameLoc,
    UnknownLoc,
    frames,
    name_stack,
    op_links,
    parse_loc,
    snippet_loc,
)

ALIASES = {
    "#loc": "unknown",
    "#loc3": '"/srv/runner.py":15:5 to :36',
    "#loc4": '"<snippet>":6:8 to :18',
    "#loc6": '"<snippet>":4:11 to 5:2',
    "#loc13": '"<module>"(#loc3)',
    "#loc14": '"f"(#loc4)',
    "#loc16": '"g"(#loc6)',
    "#loc24": "callsite(#loc14 at #loc13)",
    "#loc33": "callsite(#loc16 at #loc24)",
    "#loc31": '"jit(f)/sin"(#loc24)',
    "#loc40": '"tanh:"("jit(f)/tanh"(#loc33))',
}


def test_file_name_callsite_and_unknown_locations() -> None:
    assert parse_loc("#loc", ALIASES) == UnknownLoc()
    assert parse_loc("#loc4", ALIASES) == FileLoc("<snippet>", 6, 8, 6, 18)
    assert parse_loc("#loc6", ALIASES) == FileLoc("<snippet>", 4, 11, 5, 2)
    sin = parse_loc("#loc31", ALIASES)
    assert isinstance(sin, NameLoc) and isinstance(sin.child, CallSiteLoc)
    assert name_stack(sin) == "jit(f)/sin"
    src = snippet_loc(sin)
    assert src is not None and (src.line, src.column, src.end_column, src.function) == (
        6,
        8,
        18,
        "f",
    )


def test_innermost_snippet_frame_first_and_primitive_marker_skipped() -> None:
    tanh = parse_loc("#loc40", ALIASES)
    assert name_stack(tanh) == "jit(f)/tanh"  # the "tanh:" marker JAX may add is skipped
    assert [(fl.file, fl.line, fn) for fl, fn in frames(tanh)] == [
        ("<snippet>", 4, "g"),
        ("<snippet>", 6, "f"),
        ("/srv/runner.py", 15, "<module>"),
    ]
    src = snippet_loc(tanh)
    assert src is not None and (src.line, src.function) == (4, "g")


def test_fused_locations_and_inline_bodies() -> None:
    fused = parse_loc('fused<"meta">[#loc4, "x"]', ALIASES)
    assert isinstance(fused, FusedLoc) and len(fused.parts) == 2
    assert snippet_loc(fused) is not None
    assert parse_loc('"x"', {}) == NameLoc("x", UnknownLoc())
    with pytest.raises(ValueError):
        parse_loc("??", {})


def test_mismatched_texts_raise() -> None:
    plain = "module @m {\n  %0 = stablehlo.sine %arg0 : tensor<f32>\n}\n"
    debug = "module @m {\n  %0 = stablehlo.cosine %arg0 : tensor<f32> loc(#loc)\n} loc(#loc)\n"

    class _Jaxpr:
        eqns: tuple[object, ...] = ()

    class _NoEqns:  # mimics a ClosedJaxpr without eqns
        jaxpr = _Jaxpr()

    with pytest.raises(ValueError, match="differs from the debug text"):
        op_links(plain, debug + "#loc = loc(unknown)\n", _NoEqns())


LOOP = """
import jax.numpy as jnp

def f(a, b):
    for _ in range(200):
        a = jnp.tanh(a @ b)
    return a

args = (jnp.ones((4, 4)), jnp.ones((4, 4)) / 4)
"""


def test_a_python_loop_over_one_line_links_each_op_to_its_own_eqn() -> None:
    """200 dot_general + 200 tanh eqns on one line: each op gets exactly the eqn it was lowered
    from (in order), so op_links stay linear in size instead of listing all 400 for each op."""
    import jax
    from jaxscope.sandbox.snippet import load_snippet

    snippet = load_snippet(LOOP)
    lowered = jax.jit(snippet.f).trace(*snippet.args).lower()
    closed = jax.make_jaxpr(snippet.f)(*snippet.args)
    links = op_links(lowered.as_text(), lowered.as_text(debug_info=True), closed)
    ops = [link for link in links if link.op in ("stablehlo.dot_general", "stablehlo.tanh")]
    assert len(ops) == 400
    assert [link.eqn_indices for link in ops] == [[k] for k in range(400)]
    prims = [closed.jaxpr.eqns[link.eqn_indices[0]].primitive.name for link in ops]
    names = ["dot_general" if link.op.endswith("dot_general") else "tanh" for link in ops]
    assert prims == names


LONG_LOOP = """
import jax.numpy as jnp

def f(x):
    for i in range(2500):
        x = x * 1.0001 + 0.1
    return x

args = (jnp.ones(3),)
"""


def test_op_links_scale(monkeypatch: pytest.MonkeyPatch) -> None:
    """5,000 eqns on one line (15,000 ops): each multiply/add links to its own eqn, and the
    eqns are narrowed by name stack once per distinct (source, name stack), not once per op (it
    was every candidate eqn for every op: quadratic, 16 s here, a MemoryError at 10,000 eqns)."""
    import jax
    from jaxscope.internals import lowering
    from jaxscope.sandbox.snippet import load_snippet

    snippet = load_snippet(LONG_LOOP)
    lowered = jax.jit(snippet.f).trace(*snippet.args).lower()
    closed = jax.make_jaxpr(snippet.f)(*snippet.args)
    n_eqns = len(closed.jaxpr.eqns)
    assert n_eqns == 5000
    checks = 0
    compatible = lowering._compatible

    def counted(primitive: str, params_name: str | None, stack: str | None) -> bool:
        nonlocal checks
        checks += 1
        return bool(compatible(primitive, params_name, stack))

    monkeypatch.setattr(lowering, "_compatible", counted)
    links = op_links(lowered.as_text(), lowered.as_text(debug_info=True), closed)
    ops = [link for link in links if link.op in ("stablehlo.multiply", "stablehlo.add")]
    assert len(ops) == n_eqns
    assert [link.eqn_indices for link in ops] == [[k] for k in range(n_eqns)]
    prims = [closed.jaxpr.eqns[link.eqn_indices[0]].primitive.name for link in ops]
    assert prims == ["mul" if link.op.endswith("multiply") else "add" for link in ops]
    # Each eqn's broadcast of its constant precedes its op and links to the same eqn.
    broadcasts = [link for link in links if link.op == "stablehlo.broadcast_in_dim"]
    assert [link.eqn_indices for link in broadcasts] == [[k] for k in range(n_eqns)]
    assert {link.source.line for link in ops + broadcasts if link.source} == {6}
    assert checks <= 4 * n_eqns, checks
