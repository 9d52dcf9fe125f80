"""The dtypes exhibit against JAX and against JAX's documentation.

- Every cell of both tables: the join against ``jnp.promote_types`` computed here (with
  ``jax.enable_x64``), the result against ``jax.dtypes.canonicalize_dtype`` of it, and join and
  weak flag against the lattice of JAX's type promotion docs
  (https://docs.jax.dev/en/latest/type_promotion.html: the lattice is given there as the dict
  the figure is drawn from; its join is the docs' binary promotion table), with x64 off its one
  edge changed as ``jax/_src/dtypes.py`` says (uint32 -> int32 instead of int64). A few cells of
  the docs' table are also checked as printed there.
- Each example's arguments and result type: each leaf's node against ``jax.typeof`` and
  ``jnp.result_type``, the result against ``jnp.result_type`` and against the dtype and weak type
  of what ``f`` itself returns (``jax.eval_shape``), with x64 off and on.
- The golden event streams (recorded with ``jaxscope run --json``) against the probe, the
  ``--print`` artefacts, and that a run leaves ``jax_enable_x64`` as it found it.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jaxscope.events import EVENT_ADAPTER
from jaxscope.protocol import EventBase, RunFinished

from exhibits.conftest import FakeContext, Runner, run_probe
from exhibits.registry import EXHIBITS

from .artefacts import headline
from .events import EVENTS, DtypeChangesFound, PromotionTabulated, ResultTypeComputed
from .probe import STRONG, WEAK, short_name

CONFIG: Any = jax.config  # untyped in JAX
HERE = Path(__file__).resolve().parent
EXHIBIT = HERE.name
EXAMPLES = sorted(p.stem for p in (HERE / "examples").glob("*.py"))

# The lattice of JAX's type promotion docs (docs/type_promotion.rst, the code under its figure):
# each type and the types immediately above it.
DOC_LATTICE: dict[str, list[str]] = {
    "b1": ["i*"],
    "u1": ["u2", "i2"],
    "u2": ["i4", "u4"],
    "u4": ["u8", "i8"],
    "u8": ["f*"],
    "i*": ["u1", "i1"],
    "i1": ["i2"],
    "i2": ["i4"],
    "i4": ["i8"],
    "i8": ["f*"],
    "f*": ["c*", "f2", "bf"],
    "bf": ["f4"],
    "f2": ["f4"],
    "f4": ["c8", "f8"],
    "f8": ["c16"],
    "c*": ["c8"],
    "c8": ["c16"],
    "c16": [],
}
# The order of the docs' binary promotion table (and of the exhibit's).
DOC_ORDER = "b1 u1 u2 u4 u8 i1 i2 i4 i8 bf f2 f4 f8 c8 c16 i* f* c*".split()
# The docs' names (bytes: u4 is uint32) -> the exhibit's (bits, as a jaxpr writes them).
DOC_NAMES = {
    "b1": "bool",
    "u1": "u8",
    "u2": "u16",
    "u4": "u32",
    "u8": "u64",
    "i1": "i8",
    "i2": "i16",
    "i4": "i32",
    "i8": "i64",
    "bf": "bf16",
    "f2": "f16",
    "f4": "f32",
    "f8": "f64",
    "c8": "c64",
    "c16": "c128",
    "i*": "i*",
    "f*": "f*",
    "c*": "c*",
}


def doc_join(lattice: dict[str, list[str]], a: str, b: str) -> str:
    """The least upper bound of ``a`` and ``b`` on ``lattice`` (the docs' definition)."""

    def above(n: str) -> set[str]:
        seen, todo = {n}, [n]
        while todo:
            for m in lattice[todo.pop()]:
                if m not in seen:
                    seen.add(m)
                    todo.append(m)
        return seen

    common = above(a) & above(b)
    (least,) = [c for c in common if common <= above(c)]
    return least


def x32_lattice() -> dict[str, list[str]]:
    """The docs' lattice as JAX builds it with x64 off: uint32 goes to int32, not int64
    (``_type_promotion_lattice`` in jax/_src/dtypes.py: "the only one ... u4xi4->i8")."""
    return {**DOC_LATTICE, "u4": ["u8", "i4"]}


def lattice_types() -> list[Any]:
    return [*(jnp.dtype(n) for n in STRONG), *WEAK]


@pytest.fixture(scope="module")
def run() -> FakeContext:
    """The default example's run (the tables do not depend on the snippet)."""
    return run_probe(EXHIBIT, (HERE / "examples" / "mixed_ints.py").read_text())


def tables(ctx: FakeContext) -> dict[bool, PromotionTabulated]:
    return {t.x64: t for t in ctx.of_type(PromotionTabulated)}


def test_short_names_are_jaxs() -> None:
    for name in STRONG:
        aval: Any = jax.core.ShapedArray((), jnp.dtype(name))
        short = aval.str_short(short_dtypes=True)
        assert short == short_name(name) + "[]"


@pytest.mark.parametrize("x64", [False, True], ids=["x64_off", "x64_on"])
def test_every_cell_is_jaxs_promote_types(run: FakeContext, x64: bool) -> None:
    table = tables(run)[x64]
    types = lattice_types()
    assert len(table.types) == len(table.cells) == len(types) == 18
    with jax.enable_x64(x64), warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        for a, row in zip(types, table.cells, strict=True):
            for b, cell in zip(types, row, strict=True):
                join = jnp.promote_types(a, b)
                assert cell.join.dtype == join.name, (a, b)
                assert cell.result == jax.dtypes.canonicalize_dtype(join).name, (a, b)


@pytest.mark.parametrize("x64", [False, True], ids=["x64_off", "x64_on"])
def test_every_cell_is_the_documented_join(run: FakeContext, x64: bool) -> None:
    table = tables(run)[x64]
    lattice = DOC_LATTICE if x64 else x32_lattice()
    docs = DOC_ORDER
    # The docs' order of types is the table's (and the exhibit's).
    assert [t.code for t in table.types] == [DOC_NAMES[c] for c in docs]
    assert [t.weak for t in table.types] == [c.endswith("*") for c in docs]
    for i, a in enumerate(docs):
        for j, b in enumerate(docs):
            join = doc_join(lattice, a, b)
            cell = table.cells[i][j]
            assert cell.join.code == DOC_NAMES[join], (a, b)
            assert cell.join.weak == join.endswith("*"), (a, b)


def test_cells_printed_in_the_docs(run: FakeContext) -> None:
    """A few cells of the docs' binary promotion table (x64: the docs' table is JAX's default
    lattice), copied from the page as printed."""
    table = tables(run)[True]
    index = {t.code: i for i, t in enumerate(table.types)}

    def cell(a: str, b: str) -> str:
        return table.cells[index[DOC_NAMES[a]]][index[DOC_NAMES[b]]].join.code

    printed = {
        ("u4", "i1"): "i8",
        ("u8", "i1"): "f*",
        ("bf", "f2"): "f4",
        ("u1", "i*"): "u1",
        ("bf", "c*"): "c8",
        ("f8", "c8"): "c16",
        ("b1", "i*"): "i*",
        ("i*", "f*"): "f*",
        ("f2", "f*"): "f2",
    }
    for (a, b), expected in printed.items():
        assert cell(a, b) == DOC_NAMES[expected], (a, b)


def test_only_the_uint32_edge_depends_on_x64(run: FakeContext) -> None:
    off, on = tables(run)[False], tables(run)[True]
    codes = [t.code for t in off.types]
    changed = {
        (codes[i], codes[j], off.cells[i][j].join.code, on.cells[i][j].join.code)
        for i in range(18)
        for j in range(18)
        if off.cells[i][j].join.code != on.cells[i][j].join.code
    }
    expected = {(a, b, "i32", "i64") for a in ("u32",) for b in ("i8", "i16", "i32")}
    assert changed == expected | {(b, a, j, k) for a, b, j, k in expected}


def test_the_narrow_dtypes_jax_never_promotes(run: FakeContext) -> None:
    table = tables(run)[False]
    assert {"int4", "uint4", "float8_e4m3fn", "float8_e5m2"} <= set(table.unpromoted)
    for name in table.unpromoted:
        narrow = jnp.dtype(getattr(jnp, name))
        # below it: bool and itself; above it: nothing, so a wider type has no join with it
        assert jnp.promote_types(narrow, jnp.bool_) == narrow
        assert jnp.promote_types(narrow, narrow) == narrow
        for wider in (
            jnp.float32,
            jnp.int32 if jnp.issubdtype(narrow, jnp.integer) else jnp.bfloat16,
        ):
            with pytest.raises(jax.dtypes.TypePromotionError):
                jnp.promote_types(narrow, wider)
    assert "no available implicit dtype promotion path" in table.unpromoted_error


def example(name: str) -> dict[str, Any]:
    namespace: dict[str, Any] = {"__name__": "example"}
    path = HERE / "examples" / f"{name}.py"
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    return namespace


@pytest.mark.parametrize("name", EXAMPLES)
def test_result_type_of_each_example(name: str, probe_runner: Runner) -> None:
    ctx = probe_runner(EXHIBIT, (HERE / "examples" / f"{name}.py").read_text())
    computed = ctx.one(ResultTypeComputed)
    ns = example(name)
    leaves = jax.tree_util.tree_leaves(ns["args"])
    assert len(computed.args) == len(leaves)
    assert computed.user_x64 is False
    by_x64 = {a.x64: a for a in computed.answers}
    for x64 in (False, True):
        with jax.enable_x64(x64):
            for arg, leaf in zip(computed.args, leaves, strict=True):
                node = arg.x64_on if x64 else arg.x64_off
                aval = jax.typeof(leaf)
                assert node.dtype == jnp.result_type(leaf).name == aval.dtype.name
                assert node.weak == aval.weak_type
            out = jax.eval_shape(ns["f"], *ns["args"])
            expected = jnp.result_type(*leaves)
        answer = by_x64[x64]
        assert answer.dtype == expected.name
        # what f computes: its output has the result type, weak only when every input was,
        # unless the run found a promotion inside f: then the output has the promoted dtype
        promoted = [c for c in ctx.one(DtypeChangesFound).changes if c.kind == "promoted"]
        if promoted:
            assert out.dtype.name == promoted[-1].to_dtype != answer.dtype
        else:
            assert answer.dtype == out.dtype.name
            assert answer.weak == out.weak_type
        # the fold through the table ends at the result
        table = tables(ctx)[x64]
        index = {t.code: i for i, t in enumerate(table.types)}
        for step in answer.steps:
            assert table.cells[index[step.row]][index[step.col]].join.code == step.join
        assert answer.steps[-1].join == answer.code
    assert not CONFIG.read("jax_enable_x64")


def test_the_examples_answers() -> None:
    """What each example is there to show, written out."""
    expected = {
        "mixed_ints": ("int32", "int64"),
        "weak_scalar": ("bfloat16", "bfloat16"),
        "numpy_float64": ("float32", "float64"),
        "bf16_promoted": ("bfloat16", "bfloat16"),  # the args; lr * grads is float32
        "int64_ids": ("float32", "float64"),  # int64 ids, a float64 table
        # no promotion at all: the precision lost is in the bfloat16 result (design 0062)
        "bf16_token_count": ("bfloat16", "bfloat16"),
    }
    assert sorted(expected) == EXAMPLES
    for name, (off, on) in expected.items():
        leaves = jax.tree_util.tree_leaves(example(name)["args"])
        with jax.enable_x64(False):
            assert jnp.result_type(*leaves).name == off
        with jax.enable_x64(True):
            assert jnp.result_type(*leaves).name == on


def test_static_arguments_and_no_arguments(probe_runner: Runner) -> None:
    static = (
        "import jax.numpy as jnp\n"
        "def f(n, x, y):\n"
        "    return jnp.ones(n, jnp.int8) + x + y\n"
        "args = (3, jnp.int8(1), 2)\n"
        "static_argnums = (0,)\n"
    )
    computed = probe_runner(EXHIBIT, static).one(ResultTypeComputed)
    assert [a.path for a in computed.args] == ["args[1]", "args[2]"]
    assert [a.python_type for a in computed.args] == ["jax.Array", "int"]
    assert [a.x64_off.code for a in computed.args] == ["i8", "i*"]
    assert {a.dtype for a in computed.answers} == {"int8"}
    empty = "def f():\n    return 1.0\nargs = ()\n"
    computed = probe_runner(EXHIBIT, empty).one(ResultTypeComputed)
    assert computed.args == [] and computed.answers == []


def test_a_snippet_that_turned_x64_on(probe_runner: Runner) -> None:
    source = (
        "import jax\n"
        "import numpy as np\n"
        "jax.config.update('jax_enable_x64', True)\n"
        "def f(x):\n"
        "    return x * 2\n"
        "args = (np.ones(2),)\n"
    )
    try:
        computed = probe_runner(EXHIBIT, source).one(ResultTypeComputed)
        assert CONFIG.read("jax_enable_x64")  # the probe left the user's setting
    finally:
        CONFIG.update("jax_enable_x64", False)
    assert computed.user_x64 is True
    assert {a.x64: a.dtype for a in computed.answers} == {False: "float32", True: "float64"}


def golden_streams() -> list[Path]:
    return sorted((HERE / "golden").glob("*.events.jsonl"))


def test_every_example_has_its_golden() -> None:
    assert [p.name.removesuffix(".events.jsonl") for p in golden_streams()] == EXAMPLES


@pytest.mark.parametrize("golden", golden_streams(), ids=lambda p: p.name)
def test_golden_stream_is_the_probes(golden: Path, probe_runner: Runner) -> None:
    """The golden (``jaxscope run dtypes examples/NAME.py --json``, the real sandbox) parses with
    the event union and holds what the probe emits now."""
    lines = [line for line in golden.read_text().splitlines() if line.strip()]
    stream = [EVENT_ADAPTER.validate_json(line) for line in lines]
    assert isinstance(stream[-1], RunFinished)
    example_path = HERE / "examples" / (golden.name.removesuffix(".events.jsonl") + ".py")
    ctx = probe_runner(EXHIBIT, example_path.read_text())

    def own(events: list[EventBase]) -> list[dict[str, Any]]:
        return [e.model_dump(exclude={"seq", "run_id"}) for e in events if isinstance(e, EVENTS)]

    assert own(stream) == own(ctx.events)
    assert [e["type"] for e in own(stream)] == [
        "promotion_tabulated",
        "promotion_tabulated",
        "result_type_computed",
        "dtype_changes_found",
    ]


def test_print_artefacts(run: FakeContext) -> None:
    artefacts = EXHIBITS[EXHIBIT].artefacts
    answer = json.loads(artefacts["result_type"](run.events) or "")
    assert answer == {
        "x64_off": {"dtype": "int32", "weak": False, "code": "i32"},
        "x64_on": {"dtype": "int64", "weak": False, "code": "i64"},
    }
    text = artefacts["table"](run.events) or ""
    off, on = text.split("\n\n")
    assert off.splitlines()[0] == "# jnp.promote_types, x64 off"
    assert on.splitlines()[1].split() == [DOC_NAMES[c] for c in DOC_ORDER]
    # the row of uint32, with x64 on: as the docs print their u4 row
    u32 = next(line.split() for line in on.splitlines() if line.split()[0] == "u32")
    docs_u4_row = "u4 u4 u4 u4 u8 i8 i8 i8 i8 bf f2 f4 f8 c8 c16 u4 f* c*".split()
    assert u32[1:] == [DOC_NAMES[c] for c in docs_u4_row]


def test_what_each_argument_is(probe_runner: Runner) -> None:
    source = (HERE / "examples" / "numpy_float64.py").read_text()
    computed = probe_runner(EXHIBIT, source).one(ResultTypeComputed)
    # np.ones(3), jnp.ones(3, float32), np.int8(2), 3
    assert [a.python_type for a in computed.args] == [
        "numpy.ndarray",
        "jax.Array",
        "numpy.int8",
        "int",
    ]


def test_a_dtype_asked_for_by_a_dtype_argument_is_no_finding(probe_runner: Runner) -> None:
    """``jnp.sum(x, dtype=jnp.float32)`` widens bfloat16 because the user asked (no operand of
    float32 meets it); ``x * np.float32(2)`` on the next line is a promotion. Truth: plain JAX's
    output dtypes."""
    source = (
        "import jax.numpy as jnp\n"
        "import numpy as np\n"
        "def f(x):\n"
        "    asked = jnp.sum(x, dtype=jnp.float32) + jnp.mean(x, dtype=jnp.float32)\n"
        "    return asked, jnp.cumsum(x, dtype=jnp.float32), x * np.float32(2)\n"
        "args = (jnp.ones((4, 8), jnp.bfloat16),)\n"
    )
    ns: dict[str, Any] = {}
    exec(source, ns)
    out = ns["f"](*ns["args"])
    assert [o.dtype.name for o in out] == ["float32"] * 3  # all three left bfloat16
    (change,) = probe_runner(EXHIBIT, source).one(DtypeChangesFound).changes
    assert (change.kind, change.source and change.source.line) == ("promoted", 5)
    assert (change.api, change.from_type, change.to_type) == ("*", "bf16[4,8]", "f32[4,8]")
    assert change.partner == "f32[] constant"


def test_a_typed_key_argument_is_left_out_of_the_result_type(probe_runner: Runner) -> None:
    """A ``jax.random.key`` argument has an extended dtype that ``result_type`` refuses: the
    run leaves it out and still finds f's promotion (bfloat16 plus jax.random.normal's float32,
    as plain JAX computes it)."""
    source = (
        "import jax\n"
        "import jax.numpy as jnp\n"
        "def f(key, x):\n"
        "    return x + 0.1 * jax.random.normal(key, x.shape)\n"
        "args = (jax.random.key(0), jnp.ones((4,), jnp.bfloat16))\n"
    )
    ns: dict[str, Any] = {}
    exec(source, ns)
    assert ns["f"](*ns["args"]).dtype.name == "float32"
    ctx = probe_runner(EXHIBIT, source)
    computed = ctx.one(ResultTypeComputed)
    assert [a.path for a in computed.args] == ["args[1]"]
    assert {a.dtype for a in computed.answers} == {"bfloat16"}
    (change,) = ctx.one(DtypeChangesFound).changes
    assert (change.source and change.source.line, change.from_type, change.to_type) == (
        4,
        "bf16[4]",
        "f32[4]",
    )


# jnp functions whose body is a jit of their own (jnp.where's _where, jnp.clip, jnp.dot,
# jnp.interp, jnp.polyval, jax.nn.standardize): JAX traces that body with a traceback cut short
# at the jit, so its eqns name no snippet line; the line is the enclosing call's. Each: the
# expression at line 4, the arguments, and the API named.
INNER_JITS = [
    ("jnp.where(c, x, np.float32(0.5))", "jnp.ones(4, bool), jnp.ones(4, jnp.bfloat16)", "where"),
    (
        "jnp.where(True, x[:, None], c)",
        "jnp.ones((4, 3), jnp.float32), jnp.ones(4, jnp.bfloat16)",
        "where",
    ),
    ("jnp.clip(x, np.float32(0), np.float32(1))", "0, jnp.ones(4, jnp.bfloat16)", "jnp.clip"),
    ("jnp.dot(x, c)", "jnp.ones((4, 4)), jnp.ones((4, 4), jnp.bfloat16)", "jnp.dot"),
    ("jnp.concatenate([x, c])", "jnp.ones(4), jnp.ones(4, jnp.bfloat16)", "concatenate"),
    ("jnp.einsum('ij,jk->ik', x, c)", "jnp.ones((2, 2)), jnp.ones((2, 2), jnp.bfloat16)", "einsum"),
    ("jnp.interp(x, c, c)", "jnp.arange(4.0), jnp.ones(4, jnp.bfloat16)", "interp"),
    (
        "jax.nn.standardize(x, mean=c, variance=c)",
        "jnp.ones((2, 1)), jnp.ones((2, 8), jnp.bfloat16)",
        "jax.nn.standardize",
    ),
]


@pytest.mark.parametrize(
    ("expr", "arguments", "api"), INNER_JITS, ids=[e for e, _, _ in INNER_JITS]
)
def test_a_promotion_inside_a_jitted_jnp_function_is_found_at_the_call(
    expr: str, arguments: str, api: str, probe_runner: Runner
) -> None:
    """Truth: plain JAX's output dtype is float32 although ``x`` is bfloat16 (the other
    operand, or the numpy constant, is float32); the line is the call's."""
    source = (
        "import jax, jax.numpy as jnp\n"
        "import numpy as np\n"
        "def f(c, x):\n"
        f"    return {expr}\n"
        f"args = ({arguments},)\n"
    )
    ns: dict[str, Any] = {}
    exec(source, ns)
    _, x = ns["args"]
    assert x.dtype == jnp.bfloat16 and ns["f"](*ns["args"]).dtype == jnp.float32
    (change,) = probe_runner(EXHIBIT, source).one(DtypeChangesFound).changes
    assert change.kind == "promoted" and change.source and change.source.line == 4
    assert (change.from_dtype, change.to_dtype) == ("bfloat16", "float32")
    assert change.from_type.startswith("bf16[") and change.to_type.startswith("f32[")
    assert change.api == api


def test_float64_data_rounded_to_float32_is_a_note(probe_runner: Runner) -> None:
    """Ordinary code: float64 numpy data handed to JAX with x64 off. Every value changes, each
    only rounded (numpy: within 2**-24 of it): the change is listed, and it is not a finding."""
    source = (
        "import jax.numpy as jnp\n"
        "import numpy as np\n"
        "def f(w, x):\n"
        "    return jnp.tanh(x @ w)\n"
        "args = (jnp.ones((4, 2)), np.random.default_rng(0).normal(size=(32, 4)))\n"
    )
    x = np.random.default_rng(0).normal(size=(32, 4))
    rounded = x.astype(np.float32).astype(np.float64)
    assert np.all(np.abs(rounded - x) <= 2.0**-24 * np.abs(x))
    ctx = probe_runner(EXHIBIT, source)
    (change,) = ctx.one(DtypeChangesFound).changes
    assert (change.kind, change.api, change.finding, change.corrupted) == (
        "demoted",
        "args[1]",
        False,
        0,
    )
    assert (change.changed, change.total) == (int(np.sum(rounded != x)), x.size)
    assert EXHIBITS[EXHIBIT].shown_errors(ctx.events) == []  # jaxscope run exits 0
    (note,) = EXHIBITS[EXHIBIT].notes(ctx.events)
    assert note.startswith("DtypeDemoted at line 5, not a finding: args[1] is f64[32,4];")
    assert f"rounds {change.changed} of 128 values to float32 ({change.example})" in note


# Values a 32-bit copy corrupts rather than rounds (design 0024), each with the element numpy
# says is changed beyond float32's rounding: (the argument, the corruption, its index).
CORRUPTING = [
    ("np.array([1.0, 1e39, 0.5])", "overflow", 1),
    ("np.array([1.0, 0.5, 1e-300])", "underflow", 2),
    ("np.array([0.25, 3e-40])", "underflow", 1),
    ("np.array([3.0, 16777217.0, 2.0**30 + 1])", "whole_number", 1),
    ("np.array([5, -(2**31) - 1, 2**40], np.int64)", "wrapped", 1),
    ("np.array([1, 2**33], np.uint64)", "wrapped", 1),
]


@pytest.mark.parametrize(
    ("value", "corruption", "first"), CORRUPTING, ids=[c for _, c, _ in CORRUPTING]
)
def test_values_a_32_bit_copy_corrupts_are_a_finding(
    value: str, corruption: str, first: int, probe_runner: Runner
) -> None:
    """Truth: numpy's cast to the 32-bit dtype (JAX's canonicalization, read back with
    ``jax.device_put`` in the probe) and float32's unit roundoff."""
    source = (
        "import jax.numpy as jnp\n"
        "import numpy as np\n"
        "def f(a):\n"
        "    return a + 1\n"
        f"args = ({value},)\n"
    )
    before = eval(value, {"np": np})
    with np.errstate(over="ignore"):
        held = before.astype({"f": np.float32, "i": np.int32, "u": np.uint32}[before.dtype.kind])
    back = held.astype(before.dtype)
    if before.dtype.kind == "f":
        with np.errstate(invalid="ignore"):
            beyond = ~(np.abs(back - before) <= 2.0**-24 * np.abs(before))
        if corruption == "whole_number":  # rounded, but a count or id is not what it was
            beyond = back != before
    else:
        beyond = back != before
    assert int(np.flatnonzero(beyond)[0]) == first
    ctx = probe_runner(EXHIBIT, source)
    (change,) = ctx.one(DtypeChangesFound).changes
    assert change.finding and change.corruption == corruption
    assert change.corrupted == int(beyond.sum())
    assert change.changed == int(np.sum(back != before))
    assert change.corrupt_example == (
        f"args[0][{first}]: {before[first].item()!r} -> {held[first].item()!r}"
    )
    (shown,) = EXHIBITS[EXHIBIT].shown_errors(ctx.events)
    assert (shown.kind, shown.error_class, shown.line) == ("finding", "DtypeDemoted", 5)
    assert EXHIBITS[EXHIBIT].notes(ctx.events) == []


def test_the_int64_ids_example_looks_up_wrong_rows_in_plain_jax(probe_runner: Runner) -> None:
    """The example's finding is real: plain JAX (x64 off) returns other rows than numpy for
    exactly the ids int32 cannot hold; the table's rounding is the note."""
    ns = example("int64_ids")
    ids, table = ns["args"]
    out = np.asarray(ns["f"](*ns["args"]))
    assert out.dtype == np.float32
    right = table[ids % table.shape[0]].astype(np.float32)
    wrong = [i for i in range(len(ids)) if not np.array_equal(out[i], right[i])]
    assert wrong == [i for i, v in enumerate(ids) if v > np.iinfo(np.int32).max] == [1, 2]
    changes = probe_runner(EXHIBIT, (HERE / "examples" / "int64_ids.py").read_text()).one(
        DtypeChangesFound
    )
    assert [(c.api, c.finding, c.corrupted) for c in changes.changes] == [
        ("args[0]", True, len(wrong)),
        ("args[1]", False, 0),
    ]


def test_the_page_and_the_cli_say_the_same_sentences() -> None:
    """The view model's sentences for the int64_ids golden (view-model.test.ts holds the page
    to these very strings) are the CLI's headlines."""
    stream = [
        EVENT_ADAPTER.validate_json(line)
        for line in (HERE / "golden" / "int64_ids.events.jsonl").read_text().splitlines()
        if line.strip()
    ]
    (found,) = [e for e in stream if isinstance(e, DtypeChangesFound)]
    assert [headline(c) for c in found.changes] == [
        "args[0] is i64[3]; with x64 off JAX holds it as i32[3], and 2 of 3 values lie outside"
        " the 32-bit range and wrap around (args[0][1]: 4294967303 -> 7)",
        "args[1] is f64[1000,4]; with x64 off JAX holds it as f32[1000,4], and rounds 4000 of"
        " 4000 values to float32 (args[1][0, 0]: 0.1257302210933933 -> 0.1257302165031433), as"
        " JAX documents",
    ]


def test_eqns_read_counts_fs_eqns_with_jit_bodies_inlined(probe_runner: Runner) -> None:
    """The page's "(N eqns read)": the eqns of ``jax.make_jaxpr(f)`` with each ``jit`` eqn
    replaced by its body's eqns (a jitted helper, and ``jnp.where``/``jnp.clip``, which are
    jits of their own), counted here by walking JAX's jaxpr."""
    source = (
        "import jax, jax.numpy as jnp\n"
        "import numpy as np\n"
        "@jax.jit\n"
        "def helper(x, c):\n"
        "    return jnp.where(x > 0, x * c, x)\n"
        "def f(c, x):\n"
        "    return jnp.clip(helper(x, c), -1.0, 1.0).sum()\n"
        "args = (np.float32(2.0), jnp.ones((2, 8), jnp.bfloat16))\n"
    )
    ns: dict[str, Any] = {}
    exec(source, ns)

    def inlined(jaxpr: Any) -> int:
        return sum(
            inlined(e.params["jaxpr"].jaxpr) if e.primitive.name == "jit" else 1 for e in jaxpr.eqns
        )

    closed = jax.make_jaxpr(ns["f"])(*ns["args"])
    assert len(closed.jaxpr.eqns) == 3  # helper, clip, reduce_sum: the count is not the top's
    found = probe_runner(EXHIBIT, source).one(DtypeChangesFound)
    assert found.eqns_read == inlined(closed.jaxpr) == 10


def test_a_promotion_inside_jax_checkpoint_is_found_at_its_line(probe_runner: Runner) -> None:
    """``jax.checkpoint``'s body is read like a ``jit``'s (its eqn is ``remat2``; the list of
    call primitives named ``remat``, which no eqn is, so the body was one opaque eqn). Truth:
    plain JAX returns float32 for bfloat16 ``x``; ``jax.make_jaxpr`` holds one ``remat2`` eqn
    whose body has the ``mul``."""
    source = (
        "import jax, jax.numpy as jnp\n"
        "import numpy as np\n"
        "def f(x):\n"
        "    g = jax.checkpoint(lambda y: y * np.float32(2.0))\n"
        "    return g(x)\n"
        "args = (jnp.ones((4,), jnp.bfloat16),)\n"
    )
    ns: dict[str, Any] = {}
    exec(source, ns)
    assert ns["f"](*ns["args"]).dtype == jnp.float32
    (eqn,) = jax.make_jaxpr(ns["f"])(*ns["args"]).jaxpr.eqns
    body = [e.primitive.name for e in eqn.params["jaxpr"].eqns]
    assert eqn.primitive.name == "remat2" and "mul" in body
    found = probe_runner(EXHIBIT, source).one(DtypeChangesFound)
    assert found.eqns_read == len(body)
    (change,) = found.changes
    assert change.kind == "promoted" and change.api == "*"
    assert change.source is not None and change.source.line == 4
    assert (change.from_dtype, change.to_dtype) == ("bfloat16", "float32")
