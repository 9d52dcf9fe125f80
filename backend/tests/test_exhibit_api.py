"""``jaxscope.exhibit_api``, the one module of jaxscope that exhibit code imports (design 0054):
cheap to import, each name the object of its home module, its three lists in agreement, and
every name of the internals facade (``jaxscope.internals.api``) in it.
"""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

from jaxscope import exhibit_api

REPO = Path(__file__).resolve().parents[2]
API = REPO / "backend" / "jaxscope" / "exhibit_api.py"
INTERNALS_API = REPO / "backend" / "jaxscope" / "internals" / "api.py"


def _internals_api_names() -> set[str]:
    """The names ``jaxscope.internals.api`` re-exports (``X as X``) or binds, read with ast."""
    names: set[str] = set()
    for node in ast.parse(INTERNALS_API.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ImportFrom):
            names |= {a.name for a in node.names if a.asname == a.name}
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.add(node.name)
    return {n for n in names if not n.startswith("_")}


def _type_checking_imports() -> tuple[dict[str, str], set[str], list[str]]:
    """From the ``if TYPE_CHECKING:`` block: name -> module of each ``from M import name``,
    the modules imported whole (``from jaxscope import M``), and the star-imported modules."""
    names: dict[str, str] = {}
    whole: set[str] = set()
    star: list[str] = []
    tree = ast.parse(API.read_text(encoding="utf-8"))
    block = next(n for n in tree.body if isinstance(n, ast.If))
    assert ast.unparse(block.test) == "TYPE_CHECKING"
    for node in block.body:
        assert isinstance(node, ast.ImportFrom) and node.module
        for alias in node.names:
            assert alias.asname is None, f"{alias.name} is re-exported under its own name"
            if alias.name == "*":
                star.append(node.module)
            elif node.module == "jaxscope":
                whole.add(alias.name)
            else:
                names[alias.name] = node.module
    return names, whole, star


def test_importing_it_imports_nothing_else_of_jaxscope() -> None:
    """Nothing is imported until a name is used: an options.py that jaxscope.protocol imports
    while it is defined, and an events.py that the server imports, stay cheap and acyclic."""
    code = (
        "import sys, jaxscope.exhibit_api\n"
        "print(sorted(m for m in sys.modules if m.startswith(('jaxscope', 'exhibits', 'jax'))))\n"
        "from jaxscope.exhibit_api import WireModel\n"
        "print(sorted(m for m in sys.modules if m.startswith(('jaxscope', 'exhibits', 'jax'))))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO
    ).stdout.splitlines()
    assert out == [
        "['jaxscope', 'jaxscope.exhibit_api']",
        "['jaxscope', 'jaxscope.exhibit_api', 'jaxscope.wire']",
    ]


def test_its_lists_agree() -> None:
    """``__all__`` (no name twice), the ``TYPE_CHECKING`` imports mypy reads and ``_HOMES`` the
    run time reads name the same names from the same modules; every other name is the internals
    facade's, star-imported, and the facade's names are all here."""
    assert len(exhibit_api.__all__) == len(set(exhibit_api.__all__))
    names, whole, star = _type_checking_imports()
    assert names == exhibit_api._HOME
    assert whole == exhibit_api._MODULES
    assert star == [exhibit_api._INTERNALS_API]
    internals = set(exhibit_api.__all__) - set(names) - whole
    assert internals == _internals_api_names()


def test_each_name_is_the_object_of_its_home() -> None:
    for name in exhibit_api.__all__:
        if name in exhibit_api._MODULES:
            home = importlib.import_module(f"jaxscope.{name}")
            assert getattr(exhibit_api, name) is home
            continue
        module = exhibit_api._HOME.get(name, exhibit_api._INTERNALS_API)
        assert getattr(exhibit_api, name) is getattr(importlib.import_module(module), name), name


def test_an_unknown_name_is_an_attribute_error() -> None:
    try:
        exhibit_api.jaxpr_of_everything  # noqa: B018
    except AttributeError as exc:
        assert "jaxpr_of_everything" in str(exc)
    else:
        raise AssertionError("an unknown name resolved")
