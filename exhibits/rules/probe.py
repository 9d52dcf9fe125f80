"""The rules exhibit: every primitive JAX knows after importing jax, jax.numpy, jax.scipy, jax.nn,
flax and every other module of jax, and for each whether JAX's own tables hold a JVP rule, a
transpose rule, a batching rule, a generic lowering and a lowering per platform, with the
file:line that registered it (``internals.rule_tables`` reads ``ad.primitive_jvps``,
``ad.fancy_transposes``, ``ad.primitive_transposes``, ``batching.fancy_primitive_batchers``,
``mlir._lowerings`` and ``mlir._platform_specific_lowerings``).

The exhibit needs no snippet (``Exhibit.needs_snippet=False``): with ``f`` and ``args`` in the
snippet, the rows of the primitives in ``f``'s jaxpr are marked; else :func:`default_fun`'s.
One event, ``rules_tabulated``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
from jaxscope.exhibit_api import (
    NOT_IMPORTED,
    ProbeContext,
    is_primitive,
    jax_primitive_ids,
    jaxpr_view,
    known_primitives,
    plan_call,
    primitive_definition,
    primitive_objects_in,
    rule_column_tables,
    rule_columns,
    rule_import_modules,
    rule_table_sizes,
    rule_view,
    source_statement,
)

from exhibits.rules.events import RuleCell, RuleRow, RulesTabulated


def default_fun(x: jax.Array) -> jax.Array:
    """The function whose primitives are marked when the snippet defines none."""
    return jnp.cumsum(jnp.sin(x) @ x.T, axis=0)


def _subject(ctx: ProbeContext) -> tuple[str, Callable[..., Any], tuple[Any, ...], Any]:
    snippet = ctx.snippet
    if snippet.defines_f:
        plan = plan_call(snippet)
        return getattr(snippet.f, "__name__", "f"), plan.fun, plan.args, plan
    return "default_fun", default_fun, (jnp.ones((3, 3)),), None


def tabulate(
    used: frozenset[str] = frozenset(),
    extra: Sequence[Any] = (),
    used_objects: Sequence[Any] | None = None,
    own: Sequence[Any] = (),
) -> tuple[list[str], list[RuleRow]]:
    """The columns and one row per primitive (cells from JAX's tables, with source lines);
    ``extra``: primitives to list even when no table or JAX module holds them (the jaxpr's and
    the snippet's: a snippet's primitive with no rule at all is a row with every cell empty).
    ``used_objects``: the jaxpr's primitive objects, matched by object (a snippet's
    ``Primitive("add")`` does not mark JAX's ``add``); without it, ``used`` matches names.
    ``own``: the snippet's own primitives, marked ``own``."""
    columns = rule_columns()
    rows: list[RuleRow] = []
    used_ids = None if used_objects is None else {id(p) for p in used_objects}
    own_ids = {id(p) for p in own}
    for prim in known_primitives([*extra, *own]):
        cells: dict[str, RuleCell] = {}
        for column in columns:
            view = rule_view(prim, column)
            if view is None:
                continue
            cells[column] = RuleCell(
                table=view.table,
                name=view.name,
                file=view.file,
                line=view.line,
                text=source_statement(view.file, view.line),
            )
        mine = id(prim) in own_ids
        where = primitive_definition(prim) if not mine else None
        rows.append(
            RuleRow(
                primitive=str(prim.name),
                var=where.var if where else None,
                file=where.file if where else None,
                line=where.line if where else None,
                cells=cells,
                used=str(prim.name) in used if used_ids is None else id(prim) in used_ids,
                own=mine,
            )
        )
    return columns, rows


def _own_primitives(ctx: ProbeContext, in_jaxpr: Sequence[Any]) -> list[Any]:
    """The snippet's own ``Primitive`` objects: its globals that are primitives, and the
    jaxpr's primitives no JAX module holds."""
    jax_ids = jax_primitive_ids()
    found: dict[int, Any] = {}
    values = list(ctx.snippet.namespace.values()) if ctx.snippet.defines_f else []
    for p in [*values, *in_jaxpr]:
        if is_primitive(p) and id(p) not in jax_ids:
            found.setdefault(id(p), p)
    return list(found.values())


def run(ctx: ProbeContext) -> None:
    """Trace the subject's jaxpr, then tabulate every primitive's rules. When tracing fails (a
    snippet ``Primitive`` with no abstract eval raises ``NotImplementedError``) the table is
    still sent, with the snippet's primitives and no jaxpr, then JAX's error is raised."""
    imported = rule_import_modules()  # every jax module: the count is the same in any run
    name, fun, args, plan = _subject(ctx)
    static = plan.static_argnums if plan is not None else ()
    kwargs = plan.kwargs if plan is not None else {}
    error: Exception | None = None
    closed = None
    with ctx.stage("trace"):
        try:
            closed = jax.make_jaxpr(fun, static_argnums=static)(*args, **kwargs)
        except Exception as exc:  # the table first, then JAX's error as the run's failure
            error = exc
    objects = primitive_objects_in(closed) if closed is not None else []
    in_jaxpr = list(dict.fromkeys(str(p.name) for p in objects))  # primitives_in, walked once
    own = _own_primitives(ctx, objects)
    columns, rows = tabulate(frozenset(in_jaxpr), objects, used_objects=objects, own=own)
    counts = {c: sum(1 for r in rows if c in r.cells) for c in columns}
    counts["primitives"] = len(rows)
    ctx.emit(
        RulesTabulated(
            columns=columns,
            column_tables=rule_column_tables(),
            rows=rows,
            counts=counts,
            table_sizes=rule_table_sizes(),
            imported=imported.loaded,
            not_imported=[*NOT_IMPORTED, *imported.failed],
            jax_version=jax.__version__,
            fun_name=name,
            jaxpr=jaxpr_view(closed) if closed is not None else None,
            jaxpr_primitives=in_jaxpr,
        )
    )
    if error is not None:
        raise error
