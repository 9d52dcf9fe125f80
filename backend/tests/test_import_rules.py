"""The import boundaries of the backend, read from the source with :mod:`ast` (nothing imported):

* ``jaxscope/sandbox/`` (process isolation) never imports ``jaxscope.internals`` (JAX), with one
  named exception (``ALLOWED``): the runner's JAX warm-up installs the compile-size hook of
  ``internals.program_size`` (design 0046), in JAX workers only; a JAX template traces the
  shipped examples with ``internals.warm_traces`` (design 0076);
* ``jaxscope/internals/`` never imports ``jaxscope.sandbox``;
* only ``jaxscope/internals/`` imports private JAX (``jax._src``, ``jax.interpreters``,
  ``jax.extend``), each name of which a contract test pins: checked for every module under
  ``backend/jaxscope`` and every exhibit module that runs in the worker (tests, golden
  regeneration scripts and examples may, as independent truth or user code);
* an exhibit module that runs in the worker (``probe.py``, ``events.py``, ``options.py``, their
  helpers; not the registry, tests or test support) imports jaxscope only through
  ``jaxscope.exhibit_api`` (design 0054), which re-exports, among the rest, the internals facade
  ``jaxscope.internals.api``: what the exhibits use of the core is that one module;
* the core (``backend/jaxscope``) learns about exhibits only through ``exhibits.registry`` (and
  ``exhibits.shown``, the type of the errors its entries report), with no exception: no module
  of ``jaxscope.internals`` imports exhibit code (issue 36). Its walkers return records
  (dataclasses) that each exhibit's probe makes its events of, field by field (design 0059;
  ``test_internals_contract.py`` holds each record's fields to its event's). ``RunOptions`` is
  composed from the registry (``jaxscope.run_options``, design 0059), so the protocol imports
  no exhibit's options. ``ALLOWED`` is exact: the test fails on an entry no import uses.

An import counts wherever it is (a function body, ``if TYPE_CHECKING``), relative imports are
resolved, and ``importlib.import_module``/``__import__`` of a literal name counts too. What both
sides share lives outside both (``jaxscope.snippet_model``, ``jaxscope.explainers``).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BACKEND = REPO / "backend"
EXHIBITS = REPO / "exhibits"

SANDBOX = "jaxscope.sandbox"
# (importing module, imported module) pairs the rules let through, each for a reason given here.
# The runner's ``_warm_up`` (JAX workers only, never a torch worker) wraps JAX's lowering so that
# a run's limits grow before a big compile (design 0046); the hook has no sandbox import.
RUNNER_WARM_UP = frozenset({("jaxscope.sandbox.runner", "jaxscope.internals.program_size")})
# A JAX template traces the shipped examples between requests, no backend started (design 0076):
# the tracing and its backend guard are internals'; the template only runs them.
TEMPLATE_WARM = frozenset({("jaxscope.sandbox.zygote", "jaxscope.internals.warm_traces")})
ALLOWED = RUNNER_WARM_UP | TEMPLATE_WARM
INTERNALS = "jaxscope.internals"
JAXSCOPE = "jaxscope"
EXHIBIT_API = "jaxscope.exhibit_api"
EXHIBITS_PACKAGE = "exhibits"
# Modules under exhibits/ that are not exhibit code, so that the exhibit_api rule leaves them
# out (the private-JAX rule still holds for them): the registry is the core's table of the
# exhibits (its entries are the protocol's ExhibitInfo, its workers WorkerKind); the others are
# test support that only tests import.
NOT_EXHIBIT_CODE = frozenset(
    {
        "exhibits.registry",
        "exhibits.torch_testing",
        "exhibits.error_text_cases",
        "exhibits.train_steps",
    }
)
# What the core may import of exhibits/: the package (to find its folder), the registry, and
# the ShownError type that the registry's entries return (exhibits/shown.py).
REGISTRY_FACE = ("exhibits.registry", "exhibits.shown")
PRIVATE_JAX = ("jax._src", "jax.interpreters", "jax.extend")


@dataclass(frozen=True)
class Violation:
    """One forbidden import: where it is, what it imports, which rule it breaks."""

    path: str
    line: int
    imported: str
    rule: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: imports {self.imported} ({self.rule})"


def _within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def _absolute(module: str | None, level: int, package: str) -> str:
    """The absolute name of ``from <level dots><module> import ...`` in ``package``."""
    if level == 0:
        return module or ""
    parts = package.split(".")
    base = parts[: len(parts) - (level - 1)] if level > 1 else parts
    return ".".join([*base, module] if module else base)


def imported_names(tree: ast.AST, package: str) -> Iterator[tuple[int, str]]:
    """``(line, dotted name)`` of every import in ``tree``: each ``import a.b``, for ``from a
    import b`` both ``a`` and ``a.b`` (``b`` may be a submodule), and the literal argument of
    ``importlib.import_module``/``__import__``. ``package`` resolves relative imports."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node.module, node.level, package)
            yield node.lineno, base
            for alias in node.names:
                if alias.name != "*":
                    yield node.lineno, f"{base}.{alias.name}"
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            first = node.args[0]
            if (
                called in ("import_module", "__import__")
                and isinstance(first, ast.Constant)
                and isinstance(first.value, str)
            ):
                yield node.lineno, first.value


def violations(source: str, module: str, path: str, *, is_package: bool = False) -> list[Violation]:
    """The imports of ``source`` (the module named ``module``, read from ``path``) that break
    a rule of this file, one per import statement and rule."""
    package = module if is_package else module.rpartition(".")[0]
    found: dict[tuple[int, str], Violation] = {}
    for line, name in imported_names(ast.parse(source, filename=path), package):
        if any(module == who and _within(name, what) for who, what in ALLOWED):
            continue
        if _within(module, SANDBOX) and _within(name, INTERNALS):
            rule = "sandbox/ may not import jaxscope.internals"
        elif _within(module, INTERNALS) and _within(name, SANDBOX):
            rule = "internals/ may not import jaxscope.sandbox"
        elif not _within(module, INTERNALS) and any(_within(name, p) for p in PRIVATE_JAX):
            rule = "only jaxscope.internals may import private JAX"
        elif (
            _within(module, EXHIBITS_PACKAGE)
            and module not in NOT_EXHIBIT_CODE
            and _within(name, JAXSCOPE)
            # ``from jaxscope import exhibit_api`` names the package too: only what is taken
            # from it (a submodule other than exhibit_api, a name of its __init__) breaks it.
            and name != JAXSCOPE
            and not _within(name, EXHIBIT_API)
        ):
            rule = f"an exhibit module imports jaxscope only through {EXHIBIT_API}"
        elif (
            _within(module, JAXSCOPE)
            and _within(name, EXHIBITS_PACKAGE)
            and name != EXHIBITS_PACKAGE
            and not any(_within(name, face) for face in REGISTRY_FACE)
        ):
            rule = "the core learns about exhibits only through exhibits.registry"
        else:
            continue
        found.setdefault((line, rule), Violation(path, line, name, rule))
    return list(found.values())


def _module_name(path: Path, root: Path) -> tuple[str, bool]:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        return ".".join(parts[:-1]), True
    return ".".join(parts), False


def allowed_in_use(root: Path, paths: list[Path]) -> set[tuple[str, str]]:
    """The entries of ``ALLOWED`` that an import in ``paths`` (modules named relative to
    ``root``) uses."""
    used: set[tuple[str, str]] = set()
    for path in paths:
        module, is_package = _module_name(path, root)
        package = module if is_package else module.rpartition(".")[0]
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for _, name in imported_names(tree, package):
            used |= {(who, what) for who, what in ALLOWED if module == who and _within(name, what)}
    return used


def scan(root: Path, paths: list[Path]) -> list[Violation]:
    """The violations of every file in ``paths`` (modules named relative to ``root``)."""
    out: list[Violation] = []
    for path in sorted(paths):
        module, is_package = _module_name(path, root)
        shown = path.relative_to(REPO) if path.is_relative_to(REPO) else path.relative_to(root)
        source = path.read_text(encoding="utf-8")
        out += violations(source, module, str(shown), is_package=is_package)
    return out


def _runs_in_worker(path: Path) -> bool:
    """An exhibit module of the app (not a test, a golden regeneration script or an example)."""
    rel = path.relative_to(EXHIBITS)
    return not (
        path.name.startswith("test_")
        or path.name == "conftest.py"
        or "examples" in rel.parts
        or "golden" in rel.parts
        or "fixtures" in rel.parts
    )


def test_the_backend_keeps_its_import_boundaries() -> None:
    paths = list((BACKEND / "jaxscope").rglob("*.py"))
    assert len(paths) > 50  # the scan found the package
    found = scan(BACKEND, paths)
    assert not found, "forbidden imports:\n" + "\n".join(map(str, found))


def test_no_internals_module_imports_exhibit_code() -> None:
    """``jaxscope.internals`` (the walkers of JAX's machinery) imports nothing of ``exhibits``,
    not even the registry: a walker returns records and the exhibit's probe builds its events
    (issue 36; the package's own ``find_spec("exhibits")`` locates the folder, imports
    nothing)."""
    paths = list((BACKEND / "jaxscope" / "internals").rglob("*.py"))
    assert len(paths) > 20
    found = []
    for path in paths:
        module, is_package = _module_name(path, BACKEND)
        package = module if is_package else module.rpartition(".")[0]
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        found += [
            f"{path.relative_to(REPO)}:{line}: imports {name}"
            for line, name in imported_names(tree, package)
            if _within(name, EXHIBITS_PACKAGE)
        ]
    assert not found, "internals modules that import exhibit code:\n" + "\n".join(found)


def test_every_allowed_import_is_still_made() -> None:
    """The allowlists are exact: an entry that no import uses any more fails here, so that each
    list only shrinks (remove the entry with the import)."""
    paths = list((BACKEND / "jaxscope").rglob("*.py"))
    unused = ALLOWED - allowed_in_use(BACKEND, paths)
    assert not unused, "allowed imports no module makes any more (remove them from the list):\n" + (
        "\n".join(f"{who} -> {what}" for who, what in sorted(unused))
    )


def test_exhibit_modules_keep_their_import_boundaries() -> None:
    """No private JAX, and jaxscope only through jaxscope.exhibit_api."""
    paths = [p for p in EXHIBITS.rglob("*.py") if _runs_in_worker(p)]
    assert any(p.name == "probe.py" for p in paths)
    found = scan(REPO, paths)
    assert not found, "forbidden imports:\n" + "\n".join(map(str, found))


def test_exhibit_modules_import_jaxscope_through_the_exhibit_api() -> None:
    """Probes, events, options, explainers and helper modules name ``jaxscope.exhibit_api``
    (the scan above fails on any other jaxscope import; this checks the scan saw them)."""
    paths = [p for p in EXHIBITS.rglob("*.py") if _runs_in_worker(p)]
    through_api = {
        p.relative_to(EXHIBITS).as_posix()
        for p in paths
        for _, name in imported_names(ast.parse(p.read_text(encoding="utf-8")), "exhibits")
        if name == EXHIBIT_API
    }
    assert {
        "vmap/probe.py",
        "vmap/events.py",
        "vmap/options.py",
        "transpose/fd_check.py",
        "custom_vjp/explain.py",
        "seam/probe.py",
        "shown.py",
    } <= through_api


# ---- the checker itself, on deliberately bad sources ---------------------------------------

_HEADER = '"""A module."""\n\n'  # the import under test is on line 3


@pytest.mark.parametrize(
    ("module", "statement", "imported"),
    [
        ("jaxscope.sandbox.errors", "import jaxscope.internals.views", "jaxscope.internals.views"),
        (
            "jaxscope.sandbox.errors",
            "from jaxscope.internals.custom_rules import rejected_bwd",
            "jaxscope.internals.custom_rules",
        ),
        ("jaxscope.sandbox.errors", "from jaxscope import internals", "jaxscope.internals"),
        ("jaxscope.sandbox.errors", "from ..internals import views", "jaxscope.internals"),
        (
            "jaxscope.sandbox.runner",
            "importlib.import_module('jaxscope.internals.views')",
            "jaxscope.internals.views",
        ),
        (
            "jaxscope.internals.views",
            "from jaxscope.sandbox.probe_api import SNIPPET_FILENAME",
            "jaxscope.sandbox.probe_api",
        ),
        ("jaxscope.internals.views", "from jaxscope import sandbox", "jaxscope.sandbox"),
        ("jaxscope.internals.views", "from .. import sandbox", "jaxscope.sandbox"),
        ("jaxscope.sandbox.errors", "from jax._src import core", "jax._src"),
        ("jaxscope.cli", "import jax.interpreters.ad", "jax.interpreters.ad"),
        ("exhibits.vmap.probe", "from jax.extend.core import Primitive", "jax.extend.core"),
        ("exhibits.vmap.probe", "from jax import _src", "jax._src"),
        (
            "exhibits.vmap.probe",
            "from jaxscope.internals.views import jaxpr_view",
            "jaxscope.internals.views",
        ),
        ("exhibits.nan_finder.cure", "from jaxscope.internals import views", "jaxscope.internals"),
        (
            "exhibits.rules.probe",
            "import jaxscope.internals.rule_tables",
            "jaxscope.internals.rule_tables",
        ),
        ("exhibits.config.probe", "from jaxscope.internals import EXCLUDED_ROOTS", INTERNALS),
        # The internals facade, the probe API, the protocol, the wire base: through exhibit_api.
        (
            "exhibits.vmap.probe",
            "from jaxscope.internals.api import jaxpr_view",
            "jaxscope.internals.api",
        ),
        (
            "exhibits.vmap.probe",
            "from jaxscope.sandbox.probe_api import ProbeContext",
            "jaxscope.sandbox.probe_api",
        ),
        ("exhibits.vmap.events", "from jaxscope.protocol import EventBase", "jaxscope.protocol"),
        ("exhibits.vmap.options", "from jaxscope.wire import WireModel", "jaxscope.wire"),
        ("exhibits.pallas.probe", "from jaxscope import finite_diff", "jaxscope.finite_diff"),
        ("exhibits.shown", "import jaxscope.protocol", "jaxscope.protocol"),
        # The core imports exhibits' code through the registry only (and the allowlists).
        (
            "jaxscope.cli",
            "from exhibits.vmap.events import VmapInputsMapped",
            "exhibits.vmap.events",
        ),
        ("jaxscope.internals.views", "from exhibits.vmap import events", "exhibits.vmap"),
        ("jaxscope.protocol", "from exhibits.vmap.probe import run", "exhibits.vmap.probe"),
        (
            "jaxscope.protocol",
            "from exhibits.vmap.options import VmapOptions",
            "exhibits.vmap.options",
        ),
        (
            "jaxscope.sandbox.runner",
            "importlib.import_module('exhibits.vmap.probe')",
            "exhibits.vmap.probe",
        ),
    ],
)
def test_the_checker_names_file_and_line_of_a_forbidden_import(
    module: str, statement: str, imported: str
) -> None:
    found = violations(_HEADER + statement + "\n", module, "bad.py")
    assert [(v.path, v.line, v.imported) for v in found] == [("bad.py", 3, imported)]
    assert str(found[0]).startswith(f"bad.py:3: imports {imported} (")


def test_relative_imports_resolve_from_the_package() -> None:
    # In sandbox/__init__.py ``..`` is ``jaxscope``; in sandbox/errors.py ``.`` is the sandbox.
    found = violations("from ..internals import views\n", "jaxscope.sandbox", "p", is_package=True)
    assert [v.imported for v in found] == ["jaxscope.internals"]
    assert violations("from .internals import x\n", "jaxscope.sandbox.errors", "p") == []


def test_the_checker_sees_imports_inside_functions_and_type_checking() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from jaxscope.internals.calling import CallPlan\n"
        "def f() -> None:\n"
        "    import jaxscope.internals.views\n"
    )
    found = violations(source, "jaxscope.sandbox.errors", "bad.py")
    assert [v.line for v in found] == [3, 5]


@pytest.mark.parametrize(
    ("module", "statement"),
    [
        ("jaxscope.internals.views", "from jax._src import core"),
        ("jaxscope.internals.views", "from jaxscope.snippet_model import SNIPPET_FILENAME"),
        ("jaxscope.sandbox.errors", "from jaxscope.explainers import explain"),
        ("jaxscope.sandbox.errors", "import jax.errors"),
        ("jaxscope.sandbox.errors", "from jaxscope.sandbox_tools import x"),  # a name boundary
        ("jaxscope.internals.views", "import jax.numpy as jnp"),
        ("exhibits.vmap.probe", "from jaxscope.exhibit_api import jaxpr_view"),
        ("exhibits.vmap.probe", "from jaxscope import exhibit_api"),
        ("exhibits.transpose.fd_check", "import jaxscope.exhibit_api"),
        ("exhibits.vmap.probe", "from exhibits.stations.events import ModuleLowered"),
        # Not exhibit code: the core's table, and test support.
        ("exhibits.registry", "from jaxscope.protocol import ExhibitInfo"),
        ("exhibits.torch_testing", "from jaxscope.sandbox.kinds import torch_python"),
        # The core and exhibits/: the registry's face, and the allowlisted imports.
        ("jaxscope.cli", "from exhibits.registry import EXHIBITS"),
        ("jaxscope.cli", "from exhibits.shown import ShownError"),
        ("jaxscope.sandbox.namespaces", "import exhibits"),
        ("jaxscope.sandbox.runner", "from jaxscope.internals.program_size import install"),
        # The facade itself, and backend modules, import internals' submodules directly.
        ("jaxscope.internals.api", "from jaxscope.internals.views import jaxpr_view"),
        ("jaxscope.cli", "from jaxscope.internals.views import jaxpr_view"),
        ("jaxscope.cli", "from jaxscope.sandbox.pool import WorkerPool"),
    ],
)
def test_the_checker_allows_what_the_rules_allow(module: str, statement: str) -> None:
    assert violations(_HEADER + statement + "\n", module, "ok.py") == []


def test_a_bad_module_file_fails_the_scan(tmp_path: Path) -> None:
    """A forbidden import written into a file of a (temporary) package tree is reported with
    that file's path and the line of the import."""
    sandbox = tmp_path / "jaxscope" / "sandbox"
    sandbox.mkdir(parents=True)
    (tmp_path / "jaxscope" / "__init__.py").write_text("")
    (sandbox / "__init__.py").write_text("")
    (sandbox / "good.py").write_text("from jaxscope.protocol import RunFailed\n")
    (sandbox / "bad.py").write_text(_HEADER + "x = 1\nfrom jaxscope.internals import views\n")
    found = scan(tmp_path, list(tmp_path.rglob("*.py")))
    assert [str(v) for v in found] == [
        "jaxscope/sandbox/bad.py:4: imports jaxscope.internals "
        "(sandbox/ may not import jaxscope.internals)"
    ]


def test_the_api_rule_names_the_file_and_the_module_of_a_lazy_import() -> None:
    """A jaxscope module imported inside a probe's function (lazily) breaks the rule too, and
    the message says which file, which line, which module and what to import instead."""
    source = (
        '"""A probe."""\n'
        "from jaxscope.exhibit_api import plan_call\n"
        "def run() -> None:\n"
        "    from jaxscope.internals.transpose_walk import walk\n"
    )
    found = violations(source, "exhibits.transpose.probe", "exhibits/transpose/probe.py")
    assert [str(v) for v in found] == [
        "exhibits/transpose/probe.py:4: imports jaxscope.internals.transpose_walk "
        "(an exhibit module imports jaxscope only through jaxscope.exhibit_api)"
    ]


def test_an_allowlist_entry_no_import_uses_is_reported(tmp_path: Path) -> None:
    """``allowed_in_use`` sees the allowlisted imports that are made, so that an entry whose
    import went (a walker moved into its exhibit) is reported as unused."""
    sandbox = tmp_path / "jaxscope" / "sandbox"
    sandbox.mkdir(parents=True)
    runner = sandbox / "runner.py"
    runner.write_text("from jaxscope.internals.program_size import install\n")
    used = allowed_in_use(tmp_path, [runner])
    assert used == {("jaxscope.sandbox.runner", "jaxscope.internals.program_size")}
    runner.write_text("x = 1\n")
    assert ("jaxscope.sandbox.runner", "jaxscope.internals.program_size") in ALLOWED - (
        allowed_in_use(tmp_path, [runner])
    )
