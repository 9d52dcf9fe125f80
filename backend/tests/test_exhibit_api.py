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

from testkit import fresh_json

REPO = Path(__file__).resolve().parents[2]
API = REPO / "backend" / "jaxscope" / "exhibit_api.py"
INTERNALS_API = REPO / "backend" / "jaxscope" / "internals" / "api.py"


def _internals_api_names() -> set[str]:
    """The names ``jaxscope.internals.api`` re-exports (``X as X``) or binds, at the top level or
    in its ``if TYPE_CHECKING:`` block (the imports it makes on first use), read with ast."""
    names: set[str] = set()
    body = ast.parse(INTERNALS_API.read_text(encoding="utf-8")).body
    for block in [n for n in body if isinstance(n, ast.If)]:
        assert ast.unparse(block.test) == "TYPE_CHECKING"
        body += block.body
    for node in body:
        if isinstance(node, ast.ImportFrom):
            names |= {a.asname for a in node.names if a.asname is not None}
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


def test_the_internals_facade_imports_a_submodule_on_first_use() -> None:
    """``jaxscope.internals.api`` imports none of its submodules until one of their names is
    used, each name is its submodule's object, and the tracing probe (the warm template's first,
    before it says ready: issue 36's cold start) imports only the submodules it uses."""
    code = (
        "import sys, json\n"
        "from jaxscope.internals import api\n"
        "def ours(): return sorted(m for m in sys.modules if m.startswith('jaxscope.internals.'))\n"
        "at_import = ours()\n"
        "from jaxscope.internals.api import jaxpr_view, walk_transpose\n"
        "used = ours()\n"
        "import exhibits.tracing.probe\n"
        "print(json.dumps([at_import, used, ours()]))\n"
    )
    at_import, used, tracing = fresh_json(code)
    assert at_import == ["jaxscope.internals.api"]
    assert {"jaxscope.internals.views", "jaxscope.internals.transpose_walk"} <= set(used)
    assert "jaxscope.internals.rule_tables" not in used
    # The tracing probe: calling, views, cache, monitoring, recording and what they import,
    # not the other exhibits' machinery (~45 submodules: 0.2-0.4 CPU-s on this box).
    assert "jaxscope.internals.recording" in tracing
    assert not {"jaxscope.internals.pallas_found", "jaxscope.internals.flax_hooks"} & set(tracing)
    assert len(tracing) < 20


def test_each_name_of_the_internals_facade_is_its_submodules_object() -> None:
    from jaxscope.internals import api

    homes = api._homes()
    functions = {"pallas_compiled_fun", "pallas_mosaic_kernels", "pallas_index_map_line"}
    assert set(homes) | functions == _internals_api_names()
    for name, (module, attribute) in homes.items():
        assert module.startswith("jaxscope.internals."), name
        assert getattr(api, name) is getattr(importlib.import_module(module), attribute), name
    assert "walk_transpose" in dir(api)
    try:
        api.jaxpr_of_everything  # noqa: B018
    except AttributeError as exc:
        assert "jaxpr_of_everything" in str(exc)
    else:
        raise AssertionError("an unknown name resolved")
