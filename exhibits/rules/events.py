"""The rules exhibit's event: ``rules_tabulated`` (the coverage matrix: one row per primitive,
one column per rule table, each cell the registration file:line).

It imports only pydantic and ``jaxscope.protocol`` (the core views); ``jaxscope.events`` puts
``EVENTS`` into the event union (see its docstring).
"""

from __future__ import annotations

from typing import Literal

from jaxscope.exhibit_api import EventBase, JaxprView, WireModel


class RuleCell(WireModel):
    """One cell of the coverage matrix: the table that holds the rule (``ad.primitive_jvps``,
    ``ad.fancy_transposes``, ``mlir._lowerings``, ``mlir._platform_specific_lowerings['cpu']``
    ...), the rule function's name (``partial``/``lower_fun`` unwrapped), where it was
    registered (``file`` below site-packages, 1-based ``line``) and ``text``, the statement
    of the installed JAX source starting on that line (with its continuation lines while its
    parentheses are open, at most 6; dedented)."""

    table: str
    name: str
    file: str | None = None
    line: int | None = None
    text: str | None = None


class RuleRow(WireModel):
    """One primitive: its name, the global that creates it (``var`` in ``file`` at ``line``),
    and its cells by column id (a column absent from ``cells`` has no rule); ``used`` when the
    primitive appears in the snippet's jaxpr (matched by object, not by name). ``own``: the
    snippet's own ``Primitive`` object (a row of its own even when a JAX primitive has the same
    name: ``Primitive("add")`` beside ``lax.add_p``)."""

    primitive: str
    var: str | None = None
    file: str | None = None
    line: int | None = None
    cells: dict[str, RuleCell]
    used: bool = False
    own: bool = False


class RulesTabulated(EventBase):
    """The coverage matrix: one row per primitive JAX knows, one column per rule table (jvp,
    transpose, batching, lowering, then one per platform), each cell the registration file:line.
    ``counts``: column -> filled cells, equal to ``len()`` of the column's JAX table (the union
    of keys for transpose); ``table_sizes``: JAX table expression -> ``len()``;
    ``column_tables``: column -> the tables it reads in lookup order. ``imported`` are the
    modules imported before tabulating (flax's, then every other ``jax`` module, sorted),
    ``not_imported`` the ``jax`` modules whose import failed (an optional dependency
    such as tensorflow is not installed).
    ``jaxpr`` is the snippet's function (or the default one), whose primitives are ``used``."""

    type: Literal["rules_tabulated"] = "rules_tabulated"
    columns: list[str]
    column_tables: dict[str, list[str]]
    rows: list[RuleRow]
    counts: dict[str, int]
    table_sizes: dict[str, int]
    imported: list[str]
    not_imported: list[str]
    jax_version: str
    fun_name: str
    jaxpr: JaxprView | None = None
    jaxpr_primitives: list[str] = []


# This exhibit's events, in the order the union lists them (checked: every event class
# defined here must be listed, see ``jaxscope.events``).
EVENTS: tuple[type[EventBase], ...] = (RulesTabulated,)
