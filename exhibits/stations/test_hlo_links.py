"""Tests of the optimized-HLO links (``jaxscope.internals.compiled.hlo_links``) on real snippets,
against the text of ``jax.jit(f).lower(...).compile().as_text()`` computed in each test and the
eqns of ``jax.make_jaxpr``."""

from __future__ import annotations

from typing import Any

import jax
from jaxscope.internals.compiled import HloLinkRecord, hlo_links, stack_frame_index
from jaxscope.protocol import SourceLoc
from jaxscope.sandbox.snippet import load_snippet

HELPERS = """
import jax.numpy as jnp

def g(x):
    return jnp.sin(x) * 3.0

def h(x):
    return g(x) + 1.0

def f(x, y):
    z = jnp.sin(x) * 2.0
    w = h(z) + y
    return jnp.sum(w)

args = (jnp.ones(3), 1.0)
"""

SCAN = """
import jax
import jax.numpy as jnp

def f(x):
    y = jnp.cos(x)
    return jax.lax.scan(lambda c, a: (c + jnp.exp(a), c), 0.0, y)

args = (jnp.arange(4.0),)
"""


def _compiled(source: str) -> tuple[str, Any]:
    """JAX's optimized HLO text of the snippet's ``f`` and its staged jaxpr."""
    s = load_snippet(source)
    text = jax.jit(s.f).lower(*s.args).compile().as_text()
    return str(text), jax.make_jaxpr(s.f)(*s.args)


def _source(link: HloLinkRecord) -> SourceLoc:
    """``link.source``, which every instruction tested here has (a snippet line)."""
    assert link.source is not None, link
    return link.source


def test_a_helper_called_from_a_helper_links_to_its_own_eqn() -> None:
    """Two ``jnp.sin`` eqns: one on f's line 11, one in g (line 5, called from h's line 8,
    called from f's line 12). Each sine instruction links to its own eqn, found through its
    whole chain of stack frames (which needs the parent frames read right)."""
    text, closed = _compiled(HELPERS)
    lines = text.splitlines()
    sins = [k for k, e in enumerate(closed.jaxpr.eqns) if e.primitive.name == "sin"]
    assert len(sins) == 2
    links = {link.line: link for link in hlo_links(text, closed)}
    sine_lines = [i for i, line in enumerate(lines) if " sine(" in line]
    assert len(sine_lines) == 2
    got = sorted(
        (_source(links[i]).line, _source(links[i]).function, links[i].eqn_indices)
        for i in sine_lines
    )
    assert got == [(5, "g", [sins[1]]), (11, "f", [sins[0]])]
    # The stack frame of g's sine, innermost first: g, then h, then f (then the harness).
    g_line = next(i for i in sine_lines if _source(links[i]).line == 5)
    frame_id = int(lines[g_line].split("stack_frame_id=")[1].split("}")[0].split()[0])
    chain = stack_frame_index(lines).chain(frame_id)
    snippet = [(fr.function, fr.line) for fr in chain if fr.file == "<snippet>"]
    assert snippet == [("g", 5), ("h", 8), ("f", 12)]


def test_instructions_from_a_scan_body_link_to_the_scan_eqn() -> None:
    """``jnp.exp`` inside the scan body is no top-level eqn: its instructions (in the while
    loop XLA made of the scan) count for the scan eqn; ``jnp.cos`` links to the cos eqn."""
    text, closed = _compiled(SCAN)
    lines = text.splitlines()
    prims = [e.primitive.name for e in closed.jaxpr.eqns]
    scan, cos = prims.index("scan"), prims.index("cos")
    links = {link.line: link for link in hlo_links(text, closed)}
    exps = [i for i, line in enumerate(lines) if " exponential(" in line]
    coss = [i for i, line in enumerate(lines) if " cosine(" in line]
    assert exps and coss
    for i in exps:
        assert links[i].eqn_indices == [scan]
        assert _source(links[i]).line == 7
    for i in coss:
        assert links[i].eqn_indices == [cos]
    # The while loop and every fusion holding an exponential count for the scan eqn too.
    whiles = [link for link in links.values() if link.opcode == "while"]
    assert whiles and all(scan in link.eqn_indices for link in whiles)


HAND = """HloModule m, entry_computation_layout={(f32[3]{0})->(f32[3]{0}, s32[])}

FileNames
1 "<snippet>"
2 "/srv/runner.py"

FunctionNames
1 "f"
2 "<module>"

FileLocations
1 {file_name_id=2 function_name_id=2 line=9 end_line=9 column=0 end_column=5}
2 {file_name_id=1 function_name_id=1 line=4 end_line=4 column=8 end_column=18}

StackFrames
1 {file_location_id=1 parent_frame_id=1}
2 {file_location_id=2 parent_frame_id=2}


%fused (p: f32[3]) -> f32[3] {
  %p = f32[3]{0} parameter(0)
  ROOT %sin.0 = f32[3]{0} sine(%p), metadata={op_name="jit(f)/sin" stack_frame_id=2}
}

ENTRY %main (x: f32[3]) -> (f32[3]{0}, s32[]) {
  %x = f32[3]{0} parameter(0), metadata={op_name="x[\\'a\\']"}
  %f = f32[3]{0} fusion(%x), kind=kLoop, calls=%fused
  %c = s32[] constant(1), metadata={op_name="jit(f)/c" source_file="<snippet>" source_line=6}
  ROOT %t = (f32[3]{0}, s32[]) tuple(%f, %c)
}
"""


class _NoEqns:
    """A staged jaxpr without eqns: only names, opcodes and sources are linked."""

    class jaxpr:  # mimics ClosedJaxpr.jaxpr
        eqns: tuple[Any, ...] = ()


def test_the_text_forms_xla_prints() -> None:
    """Tables, a fused instruction, a tuple shape, C escapes and metadata that names its source
    file directly (no stack frame id)."""
    links = {link.instruction: link for link in hlo_links(HAND, _NoEqns())}
    # %p, %f and %t carry no metadata and fuse nothing linked: they are not linked.
    assert set(links) == {"sin.0", "x", "c"}
    sin = links["sin.0"]
    assert (sin.opcode, sin.computation, sin.op_name) == ("sine", "fused", "jit(f)/sin")
    assert sin.source is not None and (sin.source.line, sin.source.column) == (4, 8)
    assert sin.source.function == "f" and sin.eqn_indices == []
    assert links["x"].op_name == "x['a']" and links["x"].source is None
    assert links["x"].computation == "main"
    c = links["c"]
    assert c.source is not None and (c.source.line, c.opcode) == (6, "constant")
    assert [link.line for link in links.values()] == [
        i for i, line in enumerate(HAND.splitlines()) if "metadata=" in line
    ]
