"""Contract tests: the private JAX names ``jaxscope.internals.rule_tables`` and
``ad_rules.lowering_rule_view`` read for the rules exhibit.

They fail loudly when a JAX upgrade renames or reshapes the lowering tables
(``mlir._lowerings``, ``mlir._platform_specific_lowerings``, ``LoweringRuleEntry``), the batching
table, ``register_lowering``'s signature or its platform aliases, or ``mlir.lower_fun``'s wrapper.
"""

from __future__ import annotations

import collections
import functools
import inspect
import linecache
from pathlib import Path

import jax
import jax.extend
import jax.numpy as jnp
from jax._src import xla_bridge
from jax._src.interpreters import ad, batching, mlir
from jax._src.lax import lax
from jax._src.lax.control_flow import loops
from jaxscope.internals import rule_tables
from jaxscope.internals.ad_rules import lowering_rule_view

SITE = Path(jax.__file__).resolve().parent.parent


def _line(file: str | None, line: int | None) -> str:
    assert file is not None and line is not None
    return linecache.getline(str(SITE / file), line)


def test_lowering_tables_shape() -> None:
    assert isinstance(mlir._lowerings, dict)
    assert isinstance(mlir._platform_specific_lowerings, collections.defaultdict)
    entry = mlir._lowerings[lax.sin_p]
    assert isinstance(entry, mlir.LoweringRuleEntry)
    assert callable(entry.rule) and isinstance(entry.inline, bool)
    for platform, table in mlir._platform_specific_lowerings.items():
        assert isinstance(platform, str) and isinstance(table, dict)
        assert all(isinstance(p, jax.extend.core.Primitive) for p in table)
        assert all(isinstance(e, mlir.LoweringRuleEntry) for e in table.values())
    # JAX 0.10.2 registers CPU rules for dot_general (platform-specific first, then generic:
    # mlir._get_lowering_rules).
    assert lax.dot_general_p in mlir._platform_specific_lowerings["cpu"]
    assert "_platform_specific_lowerings" in inspect.getsource(mlir._get_lowering_rules)


def test_register_lowering_signature_and_aliases() -> None:
    params = list(inspect.signature(mlir.register_lowering).parameters)
    assert params[:3] == ["prim", "rule", "platform"]
    assert {"cuda", "rocm"} <= set(xla_bridge.expand_platform_alias("gpu"))
    assert xla_bridge.expand_platform_alias("cpu") == ["cpu"]
    assert xla_bridge.is_known_platform("tpu") and not xla_bridge.is_known_platform("cu")


def test_batching_table_is_the_fancy_dict() -> None:
    assert isinstance(batching.fancy_primitive_batchers, dict)
    assert lax.sin_p in batching.fancy_primitive_batchers
    # The old name is a proxy writing into the fancy dict (not a table of its own).
    assert not isinstance(batching.primitive_batchers, dict)


def test_lower_fun_wraps_the_impl_in_a_closure() -> None:
    rule = mlir._lowerings[loops.scan_p].rule
    assert rule.__qualname__.startswith("lower_fun.<locals>")
    cells = [c.cell_contents for c in rule.__closure__ or ()]
    assert loops._scan_impl in cells
    view = lowering_rule_view(loops.scan_p)
    assert view is not None and view.name == "_scan_impl"
    assert "register_lowering(scan_p" in _line(view.file, view.line)


def test_lowering_views_link_registrations() -> None:
    sin = lowering_rule_view(lax.sin_p)
    assert sin is not None and sin.table == "_lowerings" and sin.name == "_sin_lowering"
    assert "register_lowering(sin_p, _sin_lowering)" in _line(sin.file, sin.line)
    add = lowering_rule_view(lax.add_p)
    assert add is not None and add.name == "_nary_lower_hlo"
    assert "add_p" in _line(add.file, add.line)
    cpu = lowering_rule_view(lax.dot_general_p, "cpu")
    assert cpu is not None and cpu.table == "_platform_specific_lowerings['cpu']"
    assert "register_lowering(dot_general_p" in _line(cpu.file, cpu.line)
    assert lowering_rule_view(lax.sin_p, "tpu") is None


def test_rule_tables_partials_and_globals() -> None:
    # Rules are stored as functools.partial wrappers; primitives live in module globals.
    assert isinstance(mlir._lowerings[lax.add_p].rule, functools.partial)
    rule_tables.import_modules()
    known = rule_tables.known_primitives()
    assert lax.sin_p in known
    # Names are unique but where Pallas's kernel primitives reuse a core name (gather, swap,
    # load, bitcast...): outside jax._src.pallas each name is one primitive.
    outside = [p.name for p in known if "/pallas/" not in (rule_tables.definition(p).file or "")]
    assert len(set(outside)) == len(outside)
    closed = jax.make_jaxpr(lambda x: jax.lax.scan(lambda c, y: (c + jnp.sin(y), c), x, x))(
        jnp.ones(3)
    )
    assert {"scan", "sin", "add"} <= set(rule_tables.primitives_in(closed))
    view = rule_tables.rule_view(lax.sin_p, "jvp")
    assert view is not None and view.table == "ad.primitive_jvps"
    assert isinstance(ad.primitive_jvps, dict)


def test_every_table_primitive_is_a_module_global() -> None:
    """``known_primitives`` lists a table key only when a loaded module holds it as a global or
    it is the current snippet's (earlier runs' snippet primitives stay in JAX's process-wide
    tables): that needs every primitive JAX and the imported libraries register to be a module
    global. Checked in a fresh process, where no snippet has registered anything."""
    import subprocess
    import sys

    code = (
        "from jax._src import core\n"
        "from jaxscope.internals import rule_tables as rt\n"
        "rt.import_modules()\n"
        "ids = rt.loaded_primitive_ids()\n"
        "stray = sorted({(k.name, t) for t, table in rt._tables().items() for k in table\n"
        "                if isinstance(k, core.Primitive) and id(k) not in ids})\n"
        "print(stray, len(ids) > 0)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert out.stdout.strip() == "[] True"
    # flax.nnx's variable primitives are listed (a library's, not a snippet's).
    rule_tables.import_modules()
    names = {p.name for p in rule_tables.known_primitives()}
    assert {"get_variable", "new_variable", "set_variable"} <= names


def test_an_earlier_runs_snippet_primitive_is_not_listed() -> None:
    old = jax.extend.core.Primitive("jaxscope_earlier_run")
    ad.primitive_jvps[old] = lambda primals, tangents: (primals[0], tangents[0])
    try:
        assert old not in rule_tables.known_primitives()
        mine = jax.extend.core.Primitive("jaxscope_earlier_run")
        listed = rule_tables.known_primitives([mine])
        assert mine in listed and old not in listed
    finally:
        del ad.primitive_jvps[old]
