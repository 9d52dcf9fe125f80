"""JAX's rule tables as one coverage matrix: every primitive JAX knows, and for each whether it
has a JVP rule, a transpose rule, a batching rule, a generic lowering and a lowering per
platform, with the file:line that registered it in the installed JAX.

The tables (all module-level dicts keyed by ``core.Primitive``, read live, never copied):

- ``jvp``: ``jax._src.interpreters.ad.primitive_jvps`` (``JVPTrace.process_primitive``);
- ``transpose``: ``ad.fancy_transposes`` then ``ad.primitive_transposes`` (the order
  ``backward_pass`` looks them up); a cell says which one answered;
- ``batching``: ``jax._src.interpreters.batching.fancy_primitive_batchers``
  (``BatchTrace.process_primitive``; ``batching.primitive_batchers`` is a proxy writing there);
- ``lowering``: ``jax._src.interpreters.mlir._lowerings`` (the generic rule);
- ``cpu``/``cuda``/``rocm``/``tpu`` (and any other platform JAX registered, e.g. ``oneapi``):
  ``mlir._platform_specific_lowerings[platform]``, consulted before the generic rule by
  ``mlir._get_lowering_rules``.

"Every primitive JAX knows" is the union of those tables' keys and of the ``core.Primitive``
objects held by a global of a loaded ``jax`` module (a primitive can exist with no rule at all),
after importing :data:`IMPORTED` (flax included: importing it adds primitives such as
``get_variable``/``set_variable`` and those of the JAX modules it loads) and every module of
``jax``, and of the primitives in the snippet's jaxpr (its own ``Primitive`` may
have no rule and no module global). The file:line of each cell comes from ``internals.ad_rules``.

Why every module: the tables only grow with imports, and JAX imports some modules
lazily (``jax.device_put`` to a sharding imports ``jax.experimental.multihost_utils``, which
defines two primitives). Counting only what happened to be loaded made the count depend on what
the process had run before (291, then 293 after a sharded ``device_put``); with every module
imported first it is the same in any process of the installed JAX.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
import re
import sys
import textwrap
import warnings
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from jax._src import core
from jax._src.interpreters import ad, batching, mlir

from jaxscope.internals import ad_rules
from jaxscope.protocol import RuleView

IMPORTED: tuple[str, ...] = (
    "jax",
    "jax.numpy",
    "jax.scipy",
    "jax.nn",
    "flax",
    "flax.linen",
    "flax.nnx",
)
"""The modules imported before tabulating, then every other module of ``jax``
(:func:`jax_modules`)."""

NOT_IMPORTED: tuple[str, ...] = ()
"""Modules the issue names that are not installed (none: flax is a dependency)."""

PLATFORMS: tuple[str, ...] = ("cpu", "cuda", "rocm", "tpu")
"""The platforms always shown as columns (others JAX registered rules for are appended)."""

RULE_COLUMNS: tuple[str, ...] = ("jvp", "transpose", "batching", "lowering")

NOT_WALKED: tuple[str, ...] = ("jax.collect_profile", "jax.experimental.pallas.ops")
"""Modules of ``jax`` that are not library code, not imported (nor their submodules): a
command-line script, and Pallas example kernels (they define no primitive, and some import JAX's
test harness). Every ``test_*``/``*test_util`` module (JAX's test harnesses) is skipped too:
importing one adds its test flags to ``jax.config``."""


@dataclass(frozen=True)
class Imported:
    """What :func:`import_modules` loaded: ``loaded`` (:data:`IMPORTED`, then every other module
    of ``jax``, sorted) and ``failed`` (modules of ``jax`` whose import raised: an optional
    dependency missing, such as tensorflow for ``jax.experimental.jax2tf``)."""

    loaded: list[str]
    failed: list[str]


def _walked(name: str) -> bool:
    return name not in NOT_WALKED and not any(
        part.startswith("test_") or part.endswith("test_util") for part in name.split(".")
    )


def jax_modules() -> Imported:
    """Import every module of ``jax`` (private ones too: ``jax.experimental.key_reuse._core``,
    which JAX imports only when key-reuse checking is on, defines two primitives), package by
    package in sorted order, but :data:`NOT_WALKED` and the test harnesses; a module whose import
    raises is listed in ``failed`` and skipped, with its submodules."""
    import jax

    loaded: list[str] = []
    failed: list[str] = []
    # Depth first, by hand: pkgutil.walk_packages would import the test harness packages too
    # (it imports every package to list its children).
    pending = [jax]
    while pending:
        package = pending.pop()
        children = sorted(
            (info.name, info.ispkg)
            for info in pkgutil.iter_modules(package.__path__, package.__name__ + ".")
            if _walked(info.name)
        )
        for name, is_package in children:
            try:
                # Deprecated modules (jax.cloud_tpu_init) warn on import: not the user's doing.
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", DeprecationWarning)
                    module = importlib.import_module(name)
            except Exception:  # an optional dependency missing (tensorflow, flatbuffers)
                failed.append(name)
                continue
            loaded.append(name)
            if is_package:
                pending.append(module)
    return Imported(loaded=sorted(loaded), failed=sorted(failed))


def import_modules() -> Imported:
    """Import :data:`IMPORTED`, ``jax.scipy``'s lazy submodules and every other module of
    ``jax`` (:func:`jax_modules`); return what loaded and what failed."""
    loaded: list[str] = []
    for name in IMPORTED:
        module = importlib.import_module(name)
        loaded.append(name)
        if name == "jax.scipy":
            for sub in sorted(dir(module)):
                if sub.startswith("_"):
                    continue
                full = f"jax.scipy.{sub}"
                try:
                    importlib.import_module(full)
                except ImportError:  # an optional dependency missing: skip that submodule
                    continue
                loaded.append(full)
    walked = jax_modules()
    loaded += [name for name in walked.loaded if name not in loaded]
    return Imported(loaded=loaded, failed=walked.failed)


def platforms() -> list[str]:
    """:data:`PLATFORMS` then every other platform with a registered lowering, sorted."""
    extra = sorted(p for p in mlir._platform_specific_lowerings if p not in PLATFORMS)
    return [*PLATFORMS, *extra]


def columns() -> list[str]:
    """The matrix's columns: :data:`RULE_COLUMNS` then :func:`platforms`."""
    return [*RULE_COLUMNS, *platforms()]


def column_tables() -> dict[str, list[str]]:
    """Column -> the JAX table expressions it reads, in lookup order."""
    out: dict[str, list[str]] = {
        "jvp": ["ad.primitive_jvps"],
        "transpose": ["ad.fancy_transposes", "ad.primitive_transposes"],
        "batching": ["batching.fancy_primitive_batchers"],
        "lowering": ["mlir._lowerings"],
    }
    for p in platforms():
        out[p] = [f"mlir._platform_specific_lowerings[{p!r}]"]
    return out


def _tables() -> dict[str, Mapping[Any, Any]]:
    """JAX table expression -> the live dict."""
    out: dict[str, Mapping[Any, Any]] = {
        "ad.primitive_jvps": ad.primitive_jvps,
        "ad.fancy_transposes": ad.fancy_transposes,
        "ad.primitive_transposes": ad.primitive_transposes,
        "batching.fancy_primitive_batchers": batching.fancy_primitive_batchers,
        "mlir._lowerings": mlir._lowerings,
    }
    for p in platforms():
        out[f"mlir._platform_specific_lowerings[{p!r}]"] = mlir._platform_specific_lowerings.get(
            p, {}
        )
    return out


def table_sizes() -> dict[str, int]:
    """JAX table expression -> ``len()`` of that dict."""
    return {name: len(table) for name, table in _tables().items()}


def column_keys(column: str) -> set[Any]:
    """The primitives with an entry for ``column`` (the union of its tables' keys)."""
    tables = _tables()
    keys: set[Any] = set()
    for name in column_tables()[column]:
        keys |= set(tables[name])
    return keys


def _module_primitives() -> Iterator[Any]:
    for name, module in list(sys.modules.items()):
        if module is None or not (name == "jax" or name.startswith("jax.")):
            continue
        for value in list(vars(module).values()):
            if isinstance(value, core.Primitive):
                yield value


def _loaded_primitives() -> Iterator[Any]:
    """The primitives any loaded module holds as a global: JAX's, a library's (``flax.nnx``'s
    ``get_variable_p``), the current snippet's (its module is ``sys.modules["snippet"]``, which
    the next snippet replaces)."""
    for module in list(sys.modules.values()):
        if module is None:
            continue
        try:
            values = list(vars(module).values())
        except TypeError:  # a module-like object without a __dict__
            continue
        for value in values:
            if isinstance(value, core.Primitive):
                yield value


def known_primitives(extra: Iterable[Any] = ()) -> list[Any]:
    """Every primitive in any rule table or held by a loaded ``jax`` module's global, then those
    of ``extra`` (a jaxpr's, a snippet's: a snippet's own ``Primitive`` may be in no table and
    no module) not already there, matched by object: a snippet's ``Primitive("add")`` is a row
    of its own beside JAX's ``add``. Primitives an earlier run's snippet left in the tables are
    not listed. Sorted by name (ties keep table order: a snippet's after JAX's, and Pallas's kernel
    primitives that reuse a core name, such as ``gather`` or ``swap``, after the core one)."""
    # A table key that no loaded module holds and that is not in ``extra`` is an earlier run's
    # snippet primitive, registered in JAX's process-wide tables by that run in this worker (a
    # second run of the same snippet makes a second ``double``): not listed, as it is not this
    # run's. JAX's and the libraries' table primitives are all module globals (contract test).
    extra = list(extra)
    wanted = loaded_primitive_ids() | {id(p) for p in extra}
    seen: dict[int, Any] = {}
    for table in _tables().values():
        for key in table:
            if isinstance(key, core.Primitive) and id(key) in wanted:
                seen.setdefault(id(key), key)
    for prim in _module_primitives():
        seen.setdefault(id(prim), prim)
    for prim in extra:
        seen.setdefault(id(prim), prim)
    return sorted(seen.values(), key=lambda p: str(p.name))


def loaded_primitive_ids() -> frozenset[int]:
    """The ids of the primitives any loaded module holds as a global (JAX's, libraries', the
    current snippet's): the table keys :func:`known_primitives` lists besides its ``extra``."""
    return frozenset(id(p) for p in _loaded_primitives())


def jax_primitive_ids() -> frozenset[int]:
    """The ids of the primitives a loaded ``jax`` module holds as a global (``lax.add_p``): a
    snippet's own ``Primitive`` is not one of them (its rules may be in the tables, registered
    by the snippet)."""
    return frozenset(id(p) for p in _module_primitives())


def is_primitive(value: Any) -> bool:
    """Whether ``value`` is a JAX ``Primitive`` object (a snippet's global, say)."""
    return isinstance(value, core.Primitive)


@dataclass(frozen=True)
class Definition:
    """Where a primitive object is created: the global name, the file below site-packages and
    the 1-based line of ``name = ...`` (``None`` when not found)."""

    var: str | None
    file: str | None
    line: int | None


_ASSIGN = re.compile(r"^(\w+)\s*(?::[^=]*)?=(?!=)")


@functools.cache
def _assignments(filename: str) -> dict[str, int]:
    """Top-level ``name = ...`` lines of ``filename``: name -> first 1-based line."""
    out: dict[str, int] = {}
    for i, text in enumerate(ad_rules._source_lines(filename), start=1):
        m = _ASSIGN.match(text)
        if m is not None:
            out.setdefault(m.group(1), i)
    return out


def definition(primitive: Any) -> Definition:
    """The global that creates ``primitive`` (the first module holding it whose source assigns
    that name at top level)."""
    homes = ad_rules._primitive_names().get(id(primitive), [])
    for filename, var in homes:
        line = _assignments(filename).get(var)
        if line is not None:
            return Definition(var=var, file=ad_rules._site_path(filename), line=line)
    if homes:
        filename, var = homes[0]
        return Definition(var=var, file=ad_rules._site_path(filename), line=None)
    return Definition(var=None, file=None, line=None)


_MODULE_OF_TABLE = {
    "primitive_jvps": "ad",
    "fancy_transposes": "ad",
    "primitive_transposes": "ad",
    "fancy_primitive_batchers": "batching",
}


def rule_view(primitive: Any, column: str) -> RuleView | None:
    """The rule of ``primitive`` for ``column`` and where it was registered, or ``None``;
    ``table`` is the expression of :func:`column_tables` (``ad.primitive_jvps``)."""
    if column == "jvp":
        view = ad_rules.jvp_rule_view(primitive)
    elif column == "transpose":
        view = ad_rules.transpose_rule_view(primitive)
    elif column == "batching":
        view = ad_rules.batch_rule_view(primitive)
    elif column == "lowering":
        view = ad_rules.lowering_rule_view(primitive)
    else:
        view = ad_rules.lowering_rule_view(primitive, column)
    if view is None:
        return None
    module = _MODULE_OF_TABLE.get(view.table, "mlir")
    return view.model_copy(update={"table": f"{module}.{view.table}"})


def source_line(file: str | None, line: int | None) -> str | None:
    """The text of ``line`` (1-based) of ``file`` (a path below site-packages), or ``None``."""
    if file is None or line is None:
        return None
    lines = ad_rules._source_lines(site_file(file))
    return lines[line - 1] if 0 < line <= len(lines) else None


def source_statement(file: str | None, line: int | None, max_lines: int = 6) -> str | None:
    """The statement starting at ``line`` of ``file``: that line and the next ones while its
    parentheses are open (at most ``max_lines``), dedented; ``None`` when there is no such
    line."""
    if file is None or line is None:
        return None
    lines = ad_rules._source_lines(site_file(file))
    if not 0 < line <= len(lines):
        return None
    taken = [lines[line - 1]]
    while "".join(taken).count("(") > "".join(taken).count(")") and len(taken) < max_lines:
        if line - 1 + len(taken) >= len(lines):
            break
        taken.append(lines[line - 1 + len(taken)])
    return textwrap.dedent("\n".join(taken)).strip("\n")


def site_file(file: str) -> str:
    """A path below site-packages -> the absolute path of the installed file."""
    import jax

    root = jax.__file__.rsplit("jax/__init__.py", 1)[0]
    return root + file


def primitives_in(closed_jaxpr: Any) -> list[str]:
    """The names of the primitives of a ``ClosedJaxpr``'s eqns, inner jaxprs included
    (the jaxprs in eqn params), in first-seen order."""
    return list(dict.fromkeys(str(p.name) for p in primitive_objects_in(closed_jaxpr)))


def primitive_objects_in(closed_jaxpr: Any) -> list[Any]:
    """The primitives (objects) of a ``ClosedJaxpr``'s eqns, inner jaxprs included, in
    first-seen order."""
    found: dict[int, Any] = {}

    def walk(jaxpr: Any) -> None:
        for eqn in jaxpr.eqns:
            found.setdefault(id(eqn.primitive), eqn.primitive)
            for sub in _eqn_subjaxprs(eqn):
                walk(sub)

    walk(closed_jaxpr.jaxpr)
    return list(found.values())


def _eqn_subjaxprs(eqn: Any) -> Iterator[Any]:
    for value in eqn.params.values():
        items = value if isinstance(value, (tuple, list)) else (value,)
        for item in items:
            if isinstance(item, core.ClosedJaxpr):
                yield item.jaxpr
            elif isinstance(item, core.Jaxpr):
                yield item
