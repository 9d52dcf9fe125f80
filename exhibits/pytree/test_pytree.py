"""The pytree exhibit against JAX itself: visit order, leaves, key paths and treedefs equal
``jax.tree_util``'s on a table of containers (every registration kind), the first-difference
report on a table of pairs (against ``treedef ==`` and ``jax.tree.map``'s own error), the cases
C09/C10, the examples' goldens (plain JAX) and the CLI."""

from __future__ import annotations

import ast
import collections
import dataclasses
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.tree_util import GetAttrKey
from jaxscope.internals.pytree_walk import first_difference, walk
from jaxscope.protocol import JaxprStaged, RunOptions
from jaxscope.sandbox.errors import classify
from jaxscope.sandbox.snippet import InvalidSnippet, load_snippet

from exhibits.conftest import CASES, FakeContext, run_probe
from exhibits.pytree.events import (
    PytreeCalled,
    PytreeFlattened,
    PytreeNodeVisited,
    TreedefsCompared,
)
from exhibits.pytree.golden.regen import EXAMPLES, golden
from exhibits.pytree.probe import compared_event, flattened_event, run, visited_events
from testkit import run_cli

GOLDEN = Path(__file__).resolve().parent / "golden"
EXAMPLE_PATHS = {p.stem: p for p in EXAMPLES}


# --- one class per registration kind -------------------------------------------------------


class Point:
    def __init__(self, x: Any, y: Any, tag: str = "p") -> None:
        self.x, self.y, self.tag = x, y, tag


jax.tree_util.register_pytree_node(
    Point, lambda p: ((p.x, p.y), p.tag), lambda tag, ch: Point(*ch, tag=tag)
)


class Named:
    def __init__(self, x: Any, y: Any) -> None:
        self.x, self.y = x, y


jax.tree_util.register_pytree_with_keys(
    Named,
    lambda n: (((GetAttrKey("x"), n.x), (GetAttrKey("y"), n.y)), None),
    lambda _, ch: Named(*ch),
)


@jax.tree_util.register_pytree_node_class
class Pair:
    def __init__(self, a: Any, b: Any) -> None:
        self.a, self.b = a, b

    def tree_flatten(self) -> tuple[tuple[Any, Any], None]:
        return (self.a, self.b), None

    @classmethod
    def tree_unflatten(cls, _: Any, children: Any) -> Pair:
        return cls(*children)


@jax.tree_util.register_pytree_with_keys_class
class Keyed:
    def __init__(self, u: Any) -> None:
        self.u = u

    def tree_flatten_with_keys(self) -> tuple[tuple[tuple[Any, Any]], None]:
        return ((GetAttrKey("u"), self.u),), None

    @classmethod
    def tree_unflatten(cls, _: Any, children: Any) -> Keyed:
        return cls(*children)


@dataclasses.dataclass
class Layer:
    w: Any
    act: str


jax.tree_util.register_dataclass(Layer, data_fields=["w"], meta_fields=["act"])


@jax.tree_util.register_static
@dataclasses.dataclass(frozen=True)
class Config:
    depth: int


class Opaque:
    pass


class NT(NamedTuple):
    a: Any
    b: Any


IsLeaf = Callable[[Any], bool] | None

# (name, container, is_leaf, {keypath: registration} expected at some nodes)
CONTAINERS: list[tuple[str, Any, IsLeaf, dict[str, str]]] = [
    ("scalar", 1.0, None, {"": "leaf"}),
    ("none_root", None, None, {"": "None"}),
    ("empty", ((), [], {}), None, {"": "builtin", "[0]": "builtin"}),
    (
        "nested",
        {"b": [1, (2, None)], "a": {"z": 3, "y": jnp.ones(2)}, "c": None},
        None,
        {"['c']": "None", "['b'][1]": "builtin", "['a']['y']": "leaf"},
    ),
    ("namedtuple", NT(1.0, {"k": 2.0}), None, {"": "namedtuple", ".a": "leaf"}),
    (
        "ordered_and_default",
        [collections.OrderedDict(b=1, a=2), collections.defaultdict(list, {"b": 1, "a": 2})],
        None,
        {"[0]": "builtin", "[1]": "builtin"},
    ),
    ("register_pytree_node", Point(1.0, [2.0, 3.0]), None, {"": "register_pytree_node"}),
    ("register_pytree_with_keys", Named(1.0, 2.0), None, {"": "register_pytree_with_keys"}),
    ("register_pytree_node_class", Pair(1.0, 2.0), None, {"": "register_pytree_node_class"}),
    ("register_pytree_with_keys_class", Keyed(1.0), None, {"": "register_pytree_with_keys_class"}),
    ("register_dataclass", Layer(np.ones(2), "relu"), None, {"": "register_dataclass"}),
    ("register_static", [Config(2), 1.0], None, {"[0]": "register_static"}),
    ("unregistered", [Opaque(), "text", np.int8(3)], None, {"[0]": "leaf", "[1]": "leaf"}),
    ("is_leaf_none", [None, 1, (2, None)], lambda x: x is None, {"[0]": "is_leaf"}),
    (
        "is_leaf_tuple",
        {"t": (2, None), "u": [1]},
        lambda x: isinstance(x, tuple),
        {"['t']": "is_leaf"},
    ),
    ("is_leaf_root", [1, 2], lambda x: isinstance(x, list), {"": "is_leaf"}),
    (
        "everything",
        (
            {"p": Point(1.0, 2.0), "n": Named(3.0, None), "l": Layer(jnp.zeros(3), "tanh")},
            [Pair(NT(1, 2), Keyed(Config(1))), None],
        ),
        None,
        {"[0]['l']": "register_dataclass", "[1][0][<flat index 0>]": "namedtuple"},
    ),
]


def _structure(tree: Any) -> Any:
    return jax.tree_util.tree_structure(tree)


def _asked_by_jax(tree: Any, is_leaf: IsLeaf) -> list[Any]:
    """Every object ``tree_flatten`` consulted ``is_leaf`` about, in order (an independent spy)."""
    asked: list[Any] = []

    def spy(x: Any) -> bool:
        asked.append(x)
        return bool(is_leaf(x)) if is_leaf is not None else False

    jax.tree_util.tree_flatten(tree, is_leaf=spy)
    return asked


@pytest.mark.parametrize("name,tree,is_leaf,kinds", CONTAINERS, ids=[c[0] for c in CONTAINERS])
def test_walk_leaves_keypaths_and_treedef_equal_jaxs(
    name: str, tree: Any, is_leaf: IsLeaf, kinds: dict[str, str]
) -> None:
    treedef: Any
    with_path, treedef = jax.tree_util.tree_flatten_with_path(tree, is_leaf=is_leaf)
    visits = visited_events(tree, is_leaf, "args")
    # One visit per object JAX asks is_leaf about (root included), in that order.
    asked = _asked_by_jax(tree, is_leaf)
    assert len(visits) == len(asked)
    assert visits[0].keypath == "" and visits[0].parent is None
    # The leaves, in visit order, are tree_flatten_with_path's leaves with their key paths.
    leaves = [v for v in visits if v.leaf_index is not None]
    assert [v.keypath for v in leaves] == [jax.tree_util.keystr(p) for p, _ in with_path]
    assert [v.leaf_index for v in leaves] == list(range(treedef.num_leaves))
    # Every other visit is a treedef node; the node count is JAX's.
    assert len(visits) == treedef.num_nodes
    # Each node's children keys are its children's visits, in order; the tree is pre-order.
    for v in visits:
        kids = [w for w in visits if w.parent == v.index]
        assert [w.keypath for w in kids] == [v.keypath + k for k in v.children]
        assert all(w.index > v.index and w.depth == v.depth + 1 for w in kids)
    # Registrations as the test registered them; is_leaf consulted on every node.
    by_path = {v.keypath: v for v in visits}
    for path, kind in kinds.items():
        assert by_path[path].registration == kind, path
    for v in visits:
        assert (v.is_leaf_result is None) == (is_leaf is None)
        if v.is_leaf_result:
            assert v.registration == "is_leaf" and v.leaf_index is not None
    flat = flattened_event(tree, is_leaf, "args")
    assert flat.keypaths == [jax.tree_util.keystr(p) for p, _ in with_path]
    assert flat.treedef == str(treedef)
    assert flat.num_leaves == treedef.num_leaves and flat.num_nodes == treedef.num_nodes
    assert flat.roundtrip_ok
    assert flat.leaf_types == [f"{type(x).__module__}.{type(x).__qualname__}" for _, x in with_path]


def test_dict_keys_are_visited_sorted_and_none_has_no_children() -> None:
    visits = walk({"b": 1, "a": None, "c": 2})
    assert visits[0].children == ["['a']", "['b']", "['c']"]
    none = visits[1]
    assert none.keypath == "['a']" and none.registration == "None" and none.children == []
    assert none.leaf_index is None
    assert jax.tree.leaves({"b": 1, "a": None, "c": 2}) == [1, 2]


def test_namedtuple_children_keys_are_each_field() -> None:
    # jaxlib 0.10.2's flatten_one_level_with_keys names every child ".a"; the walk does not.
    visits = walk(NT(1, 2))
    assert visits[0].children == [".a", ".b"]
    assert [v.keypath for v in visits[1:]] == [".a", ".b"]


def test_aux_data_is_what_the_treedef_keeps() -> None:
    visits = walk([Point(1.0, 2.0, tag="q"), Layer(1.0, "relu"), Config(4)])
    assert [v.aux for v in visits[1:] if v.aux is not None] == [
        "'q'",
        "('relu',)",
        "Config(depth=4)",
    ]
    assert "Point[q]" in str(jax.tree_util.tree_structure(Point(1.0, 2.0, tag="q")))


# --- first difference ----------------------------------------------------------------------

# (name, left, right, is_leaf, expected (keypath, kind) or None)
PAIRS: list[tuple[str, Any, Any, IsLeaf, tuple[str, str] | None]] = [
    ("same", {"a": [1, 2]}, {"a": [3.0, "x"]}, None, None),
    ("dict_order_irrelevant", {"a": 1, "b": 2}, {"b": 2, "a": 1}, None, None),
    ("list_vs_tuple", {"h": (1, 2)}, {"h": [1, 2]}, None, ("['h']", "type")),
    ("missing_key", {"w": 1, "b": 2}, {"w": 1}, None, ("", "keys")),
    ("renamed_key", [{"w": 1, "b": 2}], [{"w": 1, "c": 2}], None, ("[0]", "keys")),
    ("arity", [1, [2, 3]], [1, [2, 3, 4]], None, ("[1]", "arity")),
    ("none_vs_leaf", [None, 1.0], [2.0, None], None, ("[0]", "leaf/node")),
    ("none_is_leaf", [None, 1.0], [2.0, None], lambda x: x is None, None),
    ("leaf_vs_dict", (1.0,), ({"a": 1.0},), None, ("[0]", "leaf/node")),
    ("aux_data", [Point(1, 2, "p")], [Point(1, 2, "q")], None, ("[0]", "aux data")),
    ("dataclass_meta", Layer(1.0, "relu"), Layer(1.0, "tanh"), None, ("", "aux data")),
    ("static", [Config(1)], [Config(2)], None, ("[0]", "aux data")),
    ("namedtuple_vs_tuple", NT(1, 2), (1, 2), None, ("", "type")),
    (
        "ordered_dict_order",
        collections.OrderedDict(a=1, b=2),
        collections.OrderedDict(b=2, a=1),
        None,
        ("", "keys"),
    ),
    (
        "deep_first",
        {"a": [1, (2,)], "b": [1]},
        {"a": [1, [2]], "b": (1,)},
        None,
        ("['a'][1]", "type"),
    ),
]


@pytest.mark.parametrize("name,left,right,is_leaf,want", PAIRS, ids=[p[0] for p in PAIRS])
def test_first_difference_on_pairs(
    name: str, left: Any, right: Any, is_leaf: IsLeaf, want: tuple[str, str] | None
) -> None:
    event = compared_event(left, right, is_leaf)
    left_def: Any = jax.tree_util.tree_structure(left, is_leaf=is_leaf)
    right_def: Any = jax.tree_util.tree_structure(right, is_leaf=is_leaf)
    assert event.left == str(left_def) and event.right == str(right_def)
    assert event.equal == (left_def == right_def)
    assert event.equal == (want is None)  # the table's expectation agrees with JAX's ==
    got = None if event.keypath is None else (event.keypath, event.kind)
    assert got == want
    if want is not None:
        assert event.difference
    # When jax.tree.map refuses the pair, its error names the same key path.
    try:
        jax.tree.map(lambda *_: None, left, right, is_leaf=is_leaf)
    except (ValueError, TypeError) as err:
        assert event.jax_error == f"{type(err).__name__}: {err}"
        if "tree_map tree" in str(err) and want is not None:
            assert f"tree_map tree{want[0]}\n" in str(err)
    else:
        assert event.jax_error is None


def test_first_difference_none_iff_treedefs_equal_on_all_container_pairs() -> None:
    trees = [c[1] for c in CONTAINERS if c[2] is None]
    for a in trees:
        for b in trees:
            diff = first_difference(a, b)
            assert (diff is None) == (_structure(a) == _structure(b))


# --- the probe on snippets: cases, examples, CLI -------------------------------------------


def _numbers(preview: str) -> Any:
    """A numpy printout (``[0., 1.]``, ``0.95``) read back as numbers."""
    return ast.literal_eval(re.sub(r"(\d)\.(?!\d)", r"\1.0", preview))


def _expect(case: str) -> dict[str, Any]:
    expect: dict[str, Any] = json.loads((CASES / f"{case}.expect.json").read_text())
    return expect


def _run_collecting(source: str) -> tuple[FakeContext, BaseException | None]:
    ctx = FakeContext(snippet=load_snippet(source), options=RunOptions(), exhibit="pytree")
    try:
        run(ctx)
    except Exception as err:  # the runner would report it; the test reads it
        return ctx, err
    return ctx, None


@pytest.mark.parametrize("case", ["C09_none_grads_broken", "C09_none_prefix_broken"])
def test_c09_broken_cases_flatten_then_fail_at_the_users_line(case: str) -> None:
    expect = _expect(case)
    source = (CASES / f"{case}.py").read_text()
    ctx, err = _run_collecting(source)
    assert err is not None
    failed = classify(err, "trace", load_snippet(source).f)
    assert failed.error_class == expect["error_class"]
    assert failed.message.splitlines()[0] == expect["error_first_line"]
    assert failed.source is not None and failed.source.line == expect["error_user_line"]
    flat = ctx.one(PytreeFlattened)  # shown before f fails
    assert flat.keypaths == expect["leaves_keypaths"]
    assert flat.treedef == expect["treedef"] and flat.num_leaves == expect["num_leaves"]
    assert flat.leaf_types == expect["leaf_types"]
    nones = [v for v in ctx.of_type(PytreeNodeVisited) if v.registration == "None"]
    assert nones and all(v.children == [] and v.leaf_index is None for v in nones)


@pytest.mark.parametrize(
    "case", ["C09_none_grads_fixed", "C10_dict_order_broken", "C10_dict_order_fixed"]
)
def test_running_cases_reproduce_leaves_jaxpr_and_outputs(case: str) -> None:
    expect = _expect(case)
    ctx = run_probe("pytree", (CASES / f"{case}.py").read_text())
    flat = ctx.one(PytreeFlattened)
    assert flat.keypaths == expect["leaves_keypaths"]
    assert flat.treedef == expect["treedef"] and flat.num_leaves == expect["num_leaves"]
    assert flat.leaf_types == expect["leaf_types"]
    assert ctx.one(JaxprStaged).jaxpr.text == expect["jaxpr"]
    called = ctx.one(PytreeCalled)
    out = expect["out"]
    if isinstance(out, dict):  # a dict output: previews keyed by keystr path
        for preview in called.jit_outputs:
            key = preview.path[2:-2]
            np.testing.assert_allclose(_numbers(preview.preview), out[key], rtol=1e-6)
    else:
        np.testing.assert_allclose(_numbers(called.jit_outputs[0].preview), out, rtol=1e-6)
    if "eager_out" in expect:
        np.testing.assert_allclose(
            _numbers(called.eager_outputs[0].preview), expect["eager_out"], rtol=1e-6
        )
        assert called.agree == (expect["eager_out"] == out)


@pytest.mark.parametrize("name", sorted(EXAMPLE_PATHS))
def test_examples_match_their_goldens(name: str) -> None:
    path = EXAMPLE_PATHS[name]
    want = json.loads((GOLDEN / f"{name}.json").read_text())
    assert want == golden(path)  # the goldens are current
    ctx = run_probe("pytree", path.read_text())
    flats = {f.name: f for f in ctx.of_type(PytreeFlattened)}
    for tree in ("args", "other"):
        if tree not in want:
            assert tree not in flats
            continue
        assert flats[tree].keypaths == want[tree]["keypaths"]
        assert flats[tree].treedef == want[tree]["treedef"]
        assert flats[tree].num_nodes == want[tree]["num_nodes"]
        visits = [v for v in ctx.of_type(PytreeNodeVisited) if v.tree == tree]
        assert len(visits) == want[tree]["num_nodes"]
    if "treedefs_equal" in want:
        assert ctx.one(TreedefsCompared).equal == want["treedefs_equal"]
    assert ctx.one(JaxprStaged).jaxpr.text == want["jaxpr"]
    called = ctx.one(PytreeCalled)
    assert len(called.jit_outputs) == len(want["jit_out"])
    # Stepping: every visit is its own event, in visit order, before the flattened summary.
    kinds = [e.type for e in ctx.events]
    assert kinds.index("pytree_flattened") > kinds.index("pytree_node_visited")


def test_is_leaf_from_the_snippet_is_used_and_must_be_callable() -> None:
    ctx = run_probe("pytree", EXAMPLE_PATHS["none_is_leaf"].read_text())
    flat = ctx.one(PytreeFlattened)
    assert "[1]['b']" in flat.keypaths  # None came back as a leaf
    assert all(v.is_leaf_result is not None for v in ctx.of_type(PytreeNodeVisited))
    with pytest.raises(InvalidSnippet):
        run_probe("pytree", "def f(x):\n    return x\n\nargs = (1.0,)\nis_leaf = 3\n")


def test_user_flatten_errors_propagate_at_the_users_line() -> None:
    source = (
        "import jax\n\n"
        "class Bad:\n"
        "    pass\n\n"
        "def flatten(b):\n"
        "    raise RuntimeError('flatten broke')\n\n"
        "jax.tree_util.register_pytree_node(Bad, flatten, lambda a, c: Bad())\n\n"
        "def f(x):\n"
        "    return x\n\n"
        "args = (Bad(),)\n"
    )
    with pytest.raises(RuntimeError) as info:
        run_probe("pytree", source)
    failed = classify(info.value, "trace", load_snippet(source).f)
    assert failed.source is not None and failed.source.line == 7


def _cli(path: Path, name: str) -> str:
    out = run_cli("run", "pytree", str(path), "--print", name)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_cli_prints_keypaths_treedef_and_num_leaves() -> None:
    path = EXAMPLE_PATHS["nested_params"]
    want = golden(path)["args"]
    assert json.loads(_cli(path, "keypaths")) == want["keypaths"]
    assert _cli(path, "treedef") == want["treedef"]
    assert _cli(path, "num_leaves") == str(want["num_leaves"])


def _failed(source: str) -> Any:
    _ctx, err = _run_collecting(source)
    assert err is not None
    return classify(err, "trace", load_snippet(source).f)


def test_cyclic_container_is_reported_at_the_args_line_by_the_worker(tmp_path: Path) -> None:
    """Through the real worker (the CLI): a RecursionError, not a crashed worker."""
    path = tmp_path / "cyclic.py"
    path.write_text("a = []\na.append(a)\n\n\ndef f(x):\n    return x\n\n\nargs = (a,)\n")
    out = run_cli("run", "pytree", str(path))
    assert "run failed (user_exception): RecursionError: the container is cyclic" in out.stderr
    assert "at line 9 in <module>" in out.stderr
    assert "worker_crashed" not in out.stderr


def test_too_deep_container_is_reported_at_the_args_line() -> None:
    source = (
        "def f(x):\n    return x\n\n\nd = 1.0\nfor _ in range(5000):\n    d = [d]\nargs = (d,)\n"
    )
    failed = _failed(source)
    assert failed.error_class == "RecursionError"
    assert failed.message.startswith("the container is nested too deeply")
    assert failed.source is not None and failed.source.line == 8
    assert "cyclic or nested too deeply" in (failed.explanation or "")


def test_unsortable_keys_and_garbage_flatten_point_at_args_and_registration() -> None:
    keys = "def f(d):\n    return d\n\n\nargs = ({1: 1.0, 'a': 2.0},)\n"
    failed = _failed(keys)
    with pytest.raises(Exception) as jax_err:  # JAX's own error, for the class and text
        jax.tree_util.tree_flatten({1: 1.0, "a": 2.0})
    assert failed.error_class == type(jax_err.value).__name__
    assert failed.source is not None and failed.source.line == 5
    garbage = (
        "import jax\n\n\nclass Box:\n    def __init__(self, v):\n        self.v = v\n\n\n"
        "jax.tree_util.register_pytree_node(Box, lambda b: 42, lambda t, c: Box(c[0]))\n\n\n"
        "def f(b):\n    return b.v\n\n\nargs = (Box(1.0),)\n"
    )
    failed = _failed(garbage)
    assert failed.error_class == "ValueError" and "got 42" in failed.message
    assert failed.source is not None and failed.source.line == 9


def test_large_container_visits_stop_at_the_cap_and_lists_are_capped() -> None:
    from exhibits.pytree import probe as pytree_probe

    n = pytree_probe.MAX_LEAVES + 500
    tree = ([float(i) for i in range(n)],)
    visits = visited_events(tree, None, "args")
    assert len(visits) == pytree_probe.MAX_VISITS
    flat = flattened_event(tree, None, "args")
    truth = jax.tree_util.tree_flatten_with_path(tree)[0]
    assert flat.num_leaves == n and flat.leaves_omitted == 500
    assert flat.keypaths == [jax.tree_util.keystr(p) for p, _ in truth[: pytree_probe.MAX_LEAVES]]
    assert len(flat.avals) == len(flat.leaf_types) == pytree_probe.MAX_LEAVES
    assert [v.keypath for v in visits[1:4]] == ["[0]", "[0][0]", "[0][1]"]


def test_huge_aux_repr_is_cut() -> None:
    from exhibits.pytree import probe as pytree_probe

    @dataclasses.dataclass
    class Tagged:
        v: float
        tag: str

    jax.tree_util.register_pytree_node(
        Tagged, lambda t: ((t.v,), t.tag), lambda tag, c: Tagged(c[0], tag)
    )
    tree = (Tagged(1.0, "x" * 1_000_000),)
    flat = flattened_event(tree, None, "args")
    full = str(jax.tree_util.tree_structure(tree))
    assert flat.treedef_chars == len(full)
    assert flat.treedef.startswith(full[: pytree_probe.TREEDEF_CHARS])
    assert len(flat.treedef) < pytree_probe.TREEDEF_CHARS + 50
    aux = [v.aux for v in visited_events(tree, None, "args") if v.aux is not None]
    assert aux and all(len(a) <= 200 for a in aux)
