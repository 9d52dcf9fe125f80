"""The flax_params exhibit's tests, each against a truth computed here without the probe: keys
recomputed with ``hashlib`` and ``jax.random.fold_in`` (linen) or ``fold_in(key(seed), n)``
(nnx), every parameter re-made by its initializer from the reported key and compared with what
the test's own ``init`` returns, a numpy forward pass against the reported ``apply`` output,
``jax.grad`` for the parameters ``apply`` never reads, JAX's own jaxpr text, the golden streams
and the ``--print`` artefacts.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import re
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx
from flax.core import scope as flax_scope
from flax.nnx import rnglib, variablelib
from jaxscope.events import EVENT_ADAPTER
from jaxscope.protocol import EventBase, JaxprStaged, RunFinished
from jaxscope.sandbox.runner import global_state, state_changed
from jaxscope.sandbox.snippet import InvalidSnippet, load_snippet

from exhibits.conftest import FakeContext, jaxscope_run, run_probe
from exhibits.registry import EXHIBITS

from .events import (
    EVENTS,
    FlaxErrorRaised,
    NnxStateSplit,
    ParamCreated,
    ParamsApplied,
    ParamsInitialized,
)
from .initializers import describe

HERE = Path(__file__).resolve().parent
EXHIBIT = HERE.name
EXAMPLES = HERE / "examples"


def run(source: str) -> FakeContext:
    """The probe on ``source``, in-process (the snippet defines ``model``, not ``f``)."""
    probe: Any = importlib.import_module(f"exhibits.{EXHIBIT}.probe")
    snippet = load_snippet(source, require_f=False)
    state = global_state()
    ctx = FakeContext(snippet=snippet, exhibit=EXHIBIT)
    probe.run(ctx)
    assert not state_changed(state, global_state())
    return ctx


def example(name: str) -> tuple[str, dict[str, Any]]:
    """An example's source, and its namespace run as plain Python."""
    source = (EXAMPLES / f"{name}.py").read_text()
    # a real module: linen's dataclass transform looks the class's module up in sys.modules
    module = types.ModuleType(f"flax_params_example_{name}")
    sys.modules[module.__name__] = module
    exec(compile(source, f"{name}.py", "exec"), module.__dict__)
    return source, module.__dict__


def flax_hash(data: list[str | int]) -> int:
    """The uint32 flax folds for static data, written from Flax's documented rule (SHA-1 of the
    names as UTF-8 and the counter as big-endian bytes, no separator; first 4 bytes)."""
    m = hashlib.sha1()
    for x in data:
        m.update(x.encode() if isinstance(x, str) else x.to_bytes((x.bit_length() + 7) // 8, "big"))
    return int.from_bytes(m.digest()[:4], "big")


def key_data(key: Any) -> list[int]:
    return [int(x) for x in np.asarray(jax.random.key_data(key))]


def leaf(tree: Any, path: list[str]) -> Any:
    for name in path:
        tree = tree[name]
    return tree


def numbers(text: str) -> np.ndarray:
    return np.array([float(x) for x in re.findall(r"-?\d+\.?\d*(?:e[-+]?\d+)?", text)])


@pytest.fixture(scope="module")
def mlp() -> FakeContext:
    return run(example("mlp")[0])


def test_linen_keys_are_fold_in_of_the_hash_of_path_and_counter(mlp: FakeContext) -> None:
    created = mlp.of_type(ParamCreated)
    assert [e.path for e in created] == [
        ["Dense_0", "kernel"],
        ["Dense_0", "bias"],
        ["Dense_1", "kernel"],
        ["Dense_1", "bias"],
        ["Dense_2", "kernel"],
        ["Dense_2", "bias"],
    ]
    root = jax.random.key(0)
    for e in created:
        # the counter counts the params stream's keys per scope: 1 for the kernel, 2 for the bias
        counter = 1 if e.path[-1] == "kernel" else 2
        data: list[str | int] = [e.path[0], counter]
        assert e.fold_in_data == data
        assert e.folded == flax_hash(data)
        assert e.key == key_data(jax.random.fold_in(root, flax_hash(data)))
        assert e.root_key == key_data(root)
        assert e.stream == "params" and e.api == "linen"


def test_each_initializer_on_the_reported_key_is_the_param_init_returns(mlp: FakeContext) -> None:
    _, ns = example("mlp")
    params = ns["model"].init(jax.random.key(0), *ns["args"])["params"]
    for e in mlp.of_type(ParamCreated):
        value = leaf(params, e.path)
        key = jax.random.wrap_key_data(jnp.array(e.key, jnp.uint32))
        if e.path[-1] == "kernel":
            assert e.initializer == "jax.nn.initializers.lecun_normal()"
            again = jax.nn.initializers.lecun_normal()(key, tuple(e.aval.shape))
        else:
            assert e.initializer == "jax.nn.initializers.zeros"
            again = jax.nn.initializers.zeros(key, tuple(e.aval.shape))
        assert np.array_equal(again, value)
        assert e.reproduced is True
        assert [list(value.shape), value.dtype.name] == [e.aval.shape, e.aval.dtype]


def test_a_numpy_forward_pass_equals_apply(mlp: FakeContext) -> None:
    _, ns = example("mlp")
    params = ns["model"].init(jax.random.key(0), *ns["args"])["params"]
    h = np.asarray(ns["args"][0], np.float64)
    for i in range(3):
        layer = params[f"Dense_{i}"]
        h = h @ np.asarray(layer["kernel"], np.float64) + np.asarray(layer["bias"], np.float64)
        h = np.maximum(h, 0.0) if i < 2 else h
    applied = mlp.one(ParamsApplied)
    assert applied.output_aval is not None and applied.output_aval.shape == list(h.shape)
    np.testing.assert_allclose(numbers(applied.output), h.reshape(-1), atol=2e-6)
    # apply read every parameter, each the very array init put in the dict; none is unused
    assert [r.path for r in applied.reads] == [e.path for e in mlp.of_type(ParamCreated)]
    assert all(r.same_object for r in applied.reads)
    assert applied.unused == []


def test_the_apply_jaxpr_is_jaxs_and_its_invars_are_the_leaves(mlp: FakeContext) -> None:
    _, ns = example("mlp")
    variables = ns["model"].init(jax.random.key(0), *ns["args"])
    closed = jax.make_jaxpr(lambda variables: ns["model"].apply(variables, *ns["args"]))(variables)
    staged = mlp.one(JaxprStaged)
    assert staged.jaxpr.text == str(closed)
    paths = [jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_flatten_with_path(variables)[0]]
    assert staged.jaxpr.arg_names == [f"variables{p}" for p in paths]


def test_the_initialized_tree_is_the_dict_init_returns(mlp: FakeContext) -> None:
    _, ns = example("mlp")
    variables = ns["model"].init(jax.random.key(0), *ns["args"])
    init = mlp.one(ParamsInitialized)
    assert init.container == type(variables).__name__ == "dict"
    assert init.treedef == str(jax.tree_util.tree_structure(variables))
    flat = jax.tree_util.tree_flatten_with_path(variables)[0]
    assert [x.keypath for x in init.leaves] == [jax.tree_util.keystr(p) for p, _ in flat]
    assert init.total_size == sum(v.size for _, v in flat)
    assert init.total_bytes == sum(v.nbytes for _, v in flat)
    # bias is created after kernel but flattens first (a dict's keys are sorted)
    assert [x.created_index for x in init.leaves] == [1, 0, 3, 2, 5, 4]
    assert 0 <= init.compile_seconds <= init.init_seconds
    assert init.other_keys == []


def test_a_path_gets_the_same_key_in_any_model(mlp: FakeContext) -> None:
    conv = run(example("conv")[0])
    by_path = {tuple(e.path): e.key for e in conv.of_type(ParamCreated)}
    mlp_keys = {tuple(e.path): e.key for e in mlp.of_type(ParamCreated)}
    assert by_path[("Dense_0", "kernel")] == mlp_keys[("Dense_0", "kernel")]
    assert by_path[("Conv_0", "kernel")] == key_data(
        jax.random.fold_in(jax.random.key(0), flax_hash(["Conv_0", 1]))
    )


def test_the_silent_branch_bug_leaves_dense_2_unread() -> None:
    source, ns = example("branch_silent")
    ctx = run(source)
    applied = ctx.one(ParamsApplied)
    # known by construction: apply(False) builds two layers, Dense_0 and Dense_1
    assert applied.unused == [["Dense_2", "bias"], ["Dense_2", "kernel"]]
    assert [r.path[0] for r in applied.reads] == ["Dense_0", "Dense_0", "Dense_1", "Dense_1"]
    assert applied.call == "model.apply(variables, *apply_args)"
    # independent: the gradient of apply's output with respect to Dense_2 is exactly zero
    variables = ns["model"].init(jax.random.key(0), *ns["args"])
    grads = jax.grad(lambda v: ns["model"].apply(v, *ns["apply_args"]).sum())(variables)
    zero = {
        tuple(k.key for k in p)[1:]
        for p, g in jax.tree_util.tree_flatten_with_path(grads)[0]
        if not np.any(g)
    }
    assert zero == {("Dense_2", "bias"), ("Dense_2", "kernel")}
    shown = EXHIBITS[EXHIBIT].shown_errors(ctx.events)
    assert [(s.error_class, s.kind) for s in shown] == [("UnusedParams", "finding")]


def test_the_loud_branch_bug_shows_flaxs_error_at_the_shifted_layer() -> None:
    source, ns = example("branch_error")
    ctx = run(source)
    (error,) = ctx.of_type(FlaxErrorRaised)
    with pytest.raises(Exception) as raised:
        variables = ns["model"].init(jax.random.key(0), *ns["args"])
        ns["model"].apply(variables, *ns["apply_args"])
    assert error.phase == "apply"
    assert error.error_class == "flax.errors.ScopeParamShapeError"
    assert error.message == str(raised.value)
    # the layer after the branch: Dense_1 in apply, a (4, 1) kernel in the dict
    lines = source.splitlines()
    assert error.line is not None
    assert lines[error.line - 1].strip() == "x = nn.relu(nn.Dense(4)(x))"
    assert error.docs is not None and error.docs.endswith("ScopeParamShapeError")
    assert not ctx.of_type(ParamsApplied)


def test_a_layer_in_one_branch_of_nn_cond_fails_init() -> None:
    source, ns = example("cond_branch")
    ctx = run(source)
    (error,) = ctx.of_type(FlaxErrorRaised)
    assert error.phase == "init" and error.error_class == "TypeError"
    with pytest.raises(TypeError) as raised:
        ns["model"].init(jax.random.key(0), *ns["args"])
    assert error.message == re.sub(r"\S*/site-packages/", "", str(raised.value))
    assert "flax/core/lift.py:" in error.message
    assert "symmetric difference of key sets: {'params'}" in error.message
    assert error.line is not None
    assert source.splitlines()[error.line - 1].strip().startswith("return nn.cond(")
    # the branch's Dense was created while cond traced it: its key is a tracer, not shown
    created = ctx.of_type(ParamCreated)
    assert [e.path for e in created] == [["Dense_0", "kernel"], ["Dense_0", "bias"]]
    assert all(e.key is None and e.preview is None for e in created)


@pytest.fixture(scope="module")
def nnx_mlp() -> FakeContext:
    return run(example("nnx_mlp")[0])


def test_nnx_keys_are_fold_in_of_the_seed_key_and_the_count(nnx_mlp: FakeContext) -> None:
    created = nnx_mlp.of_type(ParamCreated)
    assert [e.path for e in created] == [
        ["l1", "kernel"],
        ["l1", "bias"],
        ["l2", "kernel"],
        ["l2", "bias"],
    ]
    # Rngs(0) is the default stream; the Dropout between the layers took count 2
    assert [e.folded for e in created] == [0, 1, 3, 4]
    root = jax.random.key(0)
    for e in created:
        assert e.stream == "default" and e.root_key == key_data(root)
        assert e.folded is not None
        assert e.key == key_data(jax.random.fold_in(root, e.folded))
    (other,) = nnx_mlp.one(ParamsInitialized).other_keys
    assert other.folded == 2 and other.key == key_data(jax.random.fold_in(root, 2))


def test_nnx_values_are_the_initializers_on_those_keys(nnx_mlp: FakeContext) -> None:
    _, ns = example("nnx_mlp")
    model = ns["model"](rngs=nnx.Rngs(0))
    for e in nnx_mlp.of_type(ParamCreated):
        value = getattr(getattr(model, e.path[0]), e.path[1])[...]
        key = jax.random.wrap_key_data(jnp.array(e.key, jnp.uint32))
        ini = jax.nn.initializers
        init = ini.lecun_normal() if e.path[1] == "kernel" else ini.zeros
        assert np.array_equal(init(key, value.shape, value.dtype), value)
        assert e.reproduced is True
    x = np.asarray(ns["args"][0], np.float64)
    h = np.maximum(x @ np.asarray(model.l1.kernel[...]) + np.asarray(model.l1.bias[...]), 0)
    h = h @ np.asarray(model.l2.kernel[...]) + np.asarray(model.l2.bias[...])
    np.testing.assert_allclose(numbers(nnx_mlp.one(ParamsApplied).output), h.reshape(-1), atol=2e-6)


def test_nnx_split_state_and_merge(nnx_mlp: FakeContext) -> None:
    _, ns = example("nnx_mlp")
    graphdef, state = nnx.split(ns["model"](rngs=nnx.Rngs(0)))
    split = nnx_mlp.one(NnxStateSplit)
    flat = list(nnx.to_flat_state(state))
    assert [s.path for s in split.leaves] == [[str(k) for k in p] for p, _ in flat]
    assert [s.variable_type for s in split.leaves] == [type(v).__name__ for _, v in flat]
    assert ["dropout", "rngs", "count"] in [s.path for s in split.leaves]
    assert [n.type_name for n in split.nodes if n.kind == "VariableDef"] == [
        "RngCount",
        "RngKey",
        "Param",
        "Param",
        "Param",
        "Param",
    ]
    assert len(split.nodes) == len(graphdef.nodes)
    assert split.merge_equal and split.max_abs_diff == 0.0


def test_hooks_are_restored_even_when_flax_raises() -> None:
    originals = (
        flax_scope.Scope.param,
        flax_scope.Scope.make_rng,
        flax_scope.Scope.get_variable,
        flax_scope.random,  # type: ignore[attr-defined]
        rnglib.RngStream.__call__,
        variablelib.Variable.__init__,
    )
    run(example("branch_error")[0])
    with pytest.raises(ZeroDivisionError):
        run(
            "import flax.linen as nn\nimport jax.numpy as jnp\n"
            "class M(nn.Module):\n"
            "    @nn.compact\n"
            "    def __call__(self, x):\n"
            "        return nn.Dense(2)(x) / 0 if False else 1 // 0\n"
            "model = M()\nargs = (jnp.ones((1, 2)),)\n"
        )
    assert originals == (
        flax_scope.Scope.param,
        flax_scope.Scope.make_rng,
        flax_scope.Scope.get_variable,
        flax_scope.random,  # type: ignore[attr-defined]
        rnglib.RngStream.__call__,
        variablelib.Variable.__init__,
    )


def test_a_snippet_without_model_or_with_a_built_nnx_model_is_refused() -> None:
    with pytest.raises(InvalidSnippet, match="needs `model`"):
        run("args = (1,)\n")
    with pytest.raises(InvalidSnippet, match="already built"):
        run("from flax import nnx\nmodel = nnx.Linear(2, 2, rngs=nnx.Rngs(0))\nargs = ()\n")


def test_initializers_are_named_as_users_write_them() -> None:
    ini = jax.nn.initializers
    assert describe(ini.glorot_uniform()) == "jax.nn.initializers.glorot_uniform()"
    assert describe(ini.he_normal()) == "jax.nn.initializers.he_normal()"
    assert describe(nn.initializers.zeros_init()) == "jax.nn.initializers.zeros"
    assert describe(ini.normal(0.5)) == "jax.nn.initializers.normal(stddev=0.5)"
    assert describe(ini.constant(2.0)) == "jax.nn.initializers.constant(value=2.0)"
    assert (
        describe(ini.variance_scaling(0.5, "fan_in", "normal"))
        == "jax.nn.initializers.variance_scaling(batch_axis=(), distribution='normal',"
        " in_axis=-2, mode='fan_in', out_axis=-1, scale=0.5)"
    )


def test_print_params_is_the_issues_format(mlp: FakeContext) -> None:
    text = EXHIBITS[EXHIBIT].artefacts["params"](mlp.events)
    assert text is not None
    rows = json.loads(text)
    assert [set(r) for r in rows] == [{"path", "shape", "dtype", "initializer", "key"}] * 6
    assert rows[0]["path"] == ["Dense_0", "kernel"] and rows[0]["shape"] == [4, 16]
    assert rows[0]["dtype"] == "float32"
    assert rows[0]["key"] == key_data(
        jax.random.fold_in(jax.random.key(0), flax_hash(["Dense_0", 1]))
    )
    assert EXHIBITS[EXHIBIT].artefacts["unused"](mlp.events) == "[]"
    assert EXHIBITS[EXHIBIT].shown_errors(mlp.events) == []


def golden_streams() -> list[Path]:
    return sorted((HERE / "golden").glob("*.events.jsonl"))


@pytest.mark.parametrize("golden", golden_streams(), ids=lambda p: p.name)
def test_golden_stream_is_the_probes(golden: Path) -> None:
    """The golden (``jaxscope run flax_params examples/NAME.py --json``, the real sandbox)
    parses with the event union and holds what the probe emits now (timings aside)."""
    lines = [line for line in golden.read_text().splitlines() if line.strip()]
    stream = [EVENT_ADAPTER.validate_json(line) for line in lines]
    assert isinstance(stream[-1], RunFinished)
    assert [e.seq for e in stream] == list(range(len(stream)))
    ctx = run((EXAMPLES / (golden.name.removesuffix(".events.jsonl") + ".py")).read_text())
    timing = {"init_seconds", "compiles", "compile_seconds"}

    def own(events: list[EventBase]) -> list[dict[str, Any]]:
        return [
            e.model_dump(exclude={"seq", "run_id", *timing})
            for e in events
            if isinstance(e, (*EVENTS, JaxprStaged))
        ]

    assert own(stream) == own(ctx.events)
    assert own(stream)


def test_a_train_steps_arguments_as_args_are_blamed_on_the_args_line() -> None:
    from jaxscope.sandbox.probe_api import BLAME_ATTR

    text = (
        "import jax\nimport jax.numpy as jnp\nimport flax.linen as nn\n\n"
        "class MLP(nn.Module):\n"
        "    @nn.compact\n"
        "    def __call__(self, x):\n"
        "        return nn.Dense(2)(x)\n\n"
        "model = MLP()\n"
        "params = model.init(jax.random.key(0), jnp.ones((1, 3)))\n\n"
        "def f(params, x):\n"
        "    return jnp.sum(model.apply(params, x))\n\n"
        "args = (params, jnp.ones((4, 3)))\n"
    )
    # plain Flax: init with a train step's arguments is Python's own TypeError
    with pytest.raises(TypeError) as plain:
        ns: dict[str, Any] = {}
        exec(compile(text, "<snippet>", "exec"), ns)
        ns["model"].init(jax.random.key(0), *ns["args"])
    with pytest.raises(TypeError) as info:
        run_probe("flax_params", text)
    assert str(info.value) == str(plain.value)
    line, _, explanation = getattr(info.value, BLAME_ATTR)
    assert line == text.splitlines().index("args = (params, jnp.ones((4, 3)))") + 1
    assert "`args` must be the model's own inputs (here it has 2)" in explanation


# ``model.init`` in a fresh Python after what a worker does before any run (the runner's own
# warm-up, which compiles one tiny function), every XLA compile logged by JAX
# (``jax_log_compiles``): the truth of the page's "N XLA compiles" for the first init.
_INIT_COMPILES = """
import io, logging, runpy, sys
import jax
from jaxscope.sandbox.runner import _warm_up
_warm_up()
ns = runpy.run_path(sys.argv[1], run_name="snippet")
jax.config.update("jax_log_compiles", True)
buf = io.StringIO()
handler = logging.StreamHandler(buf)
handler.setLevel(logging.DEBUG)
logging.getLogger("jax").addHandler(handler)
logging.getLogger("jax").setLevel(logging.DEBUG)
ns["model"].init(jax.random.key(ns.get("rngs", 0)), *ns["args"])
print(buf.getvalue().count("Finished XLA compilation"))
"""


def test_init_compiles_are_the_ones_jax_logs() -> None:
    """The first init's compile count on the page (a real ``jaxscope run``, the sandboxed
    worker) equals the compiles JAX logs for ``model.init`` in a fresh process."""
    path = EXAMPLES / "mlp.py"
    done = jaxscope_run(EXHIBIT, path, "--json")
    assert done.returncode == 0, done.stderr[-2000:]
    events = [EVENT_ADAPTER.validate_json(line) for line in done.stdout.splitlines() if line]
    (init,) = [e for e in events if isinstance(e, ParamsInitialized)]
    plain = subprocess.run(
        [sys.executable, "-c", _INIT_COMPILES, str(path)],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    logged = int(plain.stdout.strip().splitlines()[-1])
    assert logged > 0
    assert init.compiles == logged
