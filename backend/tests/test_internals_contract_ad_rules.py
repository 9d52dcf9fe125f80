"""Contract tests: JAX's AD rule tables as ``jaxscope.internals.ad_rules`` reads them.

These fail loudly when a JAX upgrade renames the tables, changes how ``defjvp``/``deflinear2``/
``defbilinear`` wrap rules, or moves the registrations the explorer links to.
"""

from __future__ import annotations

import functools
import linecache
from pathlib import Path

import jax
import jax.extend
from jax._src.interpreters import ad
from jax._src.lax import lax
from jaxscope.internals.ad_rules import jvp_rule_view, transpose_rule_view

SITE = Path(jax.__file__).resolve().parent.parent


def _line(file: str | None, line: int | None) -> str:
    assert file is not None and line is not None
    return linecache.getline(str(SITE / file), line)


def test_tables_are_dicts_keyed_by_primitives() -> None:
    for table in (ad.primitive_jvps, ad.primitive_transposes, ad.fancy_transposes):
        assert isinstance(table, dict)
        assert all(isinstance(p, jax.extend.core.Primitive) for p in table)
    assert lax.sin_p in ad.primitive_jvps
    assert lax.reduce_sum_p in ad.primitive_transposes
    # backward_pass consults fancy_transposes first: mul and dot_general live there.
    assert lax.mul_p in ad.fancy_transposes and lax.dot_general_p in ad.fancy_transposes


def test_defjvp_wraps_a_lambda_in_standard_jvp() -> None:
    rule = ad.primitive_jvps[lax.sin_p]
    assert isinstance(rule, functools.partial) and rule.func is ad.standard_jvp
    view = jvp_rule_view(lax.sin_p)
    assert view is not None and view.table == "primitive_jvps"
    assert view.name == "standard_jvp(<lambda>)"
    assert view.file == "jax/_src/lax/lax.py"
    assert "defjvp(sin_p" in _line(view.file, view.line)


def test_registration_lines_name_the_primitive() -> None:
    cases = {
        (lax.reduce_sum_p, "T"): "deflinear2(reduce_sum_p",
        (lax.reduce_sum_p, "J"): "deflinear2(reduce_sum_p",
        (lax.mul_p, "T"): "defbilinear(mul_p",
        (lax.dot_general_p, "T"): "defbilinear(dot_general_p",
        (lax.add_p, "J"): "_add_jvp",
        (lax.broadcast_in_dim_p, "T"): "_broadcast_in_dim_transpose_rule",
    }
    for (prim, kind), text in cases.items():
        view = jvp_rule_view(prim) if kind == "J" else transpose_rule_view(prim)
        assert view is not None, prim
        assert text in _line(view.file, view.line), (prim, kind, view)


def test_fancy_table_is_preferred_and_missing_rules_are_none() -> None:
    view = transpose_rule_view(lax.mul_p)
    assert view is not None and view.table == "fancy_transposes"
    assert view.name == "fancy_bilinear_transpose(_mul_transpose_left, _mul_transpose_right)"
    assert transpose_rule_view(lax.sin_p) is None  # sin is not linear: no transpose rule


def test_almost_every_rule_has_a_location() -> None:
    views = [jvp_rule_view(p) for p in ad.primitive_jvps]
    views += [transpose_rule_view(p) for p in (*ad.primitive_transposes, *ad.fancy_transposes)]
    located = [v for v in views if v is not None and v.file and v.line]
    assert len(located) >= 0.97 * len(views)


def test_batching_rules_come_from_the_fancy_table() -> None:
    """``fancy_primitive_batchers`` is the real table (``primitive_batchers`` is a shim)."""
    from jax._src.interpreters import batching
    from jaxscope.internals.ad_rules import batch_rule_view

    assert isinstance(batching.fancy_primitive_batchers, dict)
    sin = batch_rule_view(lax.sin_p)
    assert sin is not None and sin.table == "fancy_primitive_batchers"
    assert sin.name == "vectorized_batcher"
    select = batch_rule_view(lax.select_n_p)
    assert select is not None
    assert "fancy_primitive_batchers[select_n_p]" in _line(select.file, select.line)
    views = [batch_rule_view(p) for p in batching.fancy_primitive_batchers]
    assert sum(1 for v in views if v and v.file and v.line) >= 0.97 * len(views)
