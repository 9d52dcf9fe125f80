"""The lazy_tensor exhibit against torch_xla itself: the exhibit runs through the real sandbox
(`jaxscope run`, a torch worker), and the truth is the example run as a plain script in a fresh
torch-venv process that calls torch_xla's own functions (``_get_xla_tensors_text``,
``_get_xla_tensors_hlo``, ``_get_graph_hash``) and CPU torch; the cuts' calls against torch's own
``TorchFunctionMode`` in a plain script; eager mode's executions against a plain script that runs
f's statements one by one; the hash's ingredients against the source blob at the tag. Skipped,
with the reason, where the torch venv is not installed (``make test`` installs it).
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from jaxscope.protocol import EventBase, RunFinished
from jaxscope.sandbox.kinds import kind_problem, torch_python

from exhibits import torch_testing

from . import hash_source
from .events import (
    GraphHashCompared,
    LazyGraphBuilt,
    LazyGraphSynced,
    LazyLineStepped,
    TorchaxStaged,
)

HERE = Path(__file__).resolve().parent
EXHIBIT = HERE.name
EXAMPLE = HERE / "examples" / "mlp_item.py"
CUTS = HERE / "examples" / "cuts.py"

pytestmark = pytest.mark.skipif(
    kind_problem("torch") is not None, reason=str(kind_problem("torch"))
)

# The truth: the example as a user's script, torch_xla's functions called here, not by the probe.
TRUTH = r"""
import json, sys, torch, torch_xla
ns = {}
exec(compile(open(sys.argv[1]).read(), "<snippet>", "exec"), ns)
f, args = ns["f"], ns["args"]
expected = f(*args)  # CPU torch
dev = torch_xla.device()
def run(a):
    return f(*[t.to(dev) for t in a])
out = run(args)
truth = {
    "ir": torch_xla._XLAC._get_xla_tensors_text([out]),
    "hlo": torch_xla._XLAC._get_xla_tensors_hlo([out]),
    "hash": bytes(torch_xla._XLAC._get_graph_hash([out])).hex(),
}
torch_xla.sync()
truth["value"] = out.cpu().item()
truth["cpu_value"] = expected.item()
truth["hash_new_values"] = bytes(torch_xla._XLAC._get_graph_hash(
    [run([t * 0.5 + 0.25 for t in args])])).hex()
longer = [torch.cat([args[0], args[0][:1]]), *args[1:]]
truth["hash_longer"] = bytes(torch_xla._XLAC._get_graph_hash([run(longer)])).hex()
# With IR debug on, each node of a plain run names the line that made it (the arguments moved
# and synced first: device data, as the probe gives them to f).
moved = [t.to(dev) for t in args]
torch_xla.sync()
torch_xla._XLAC._set_ir_debug(True)
truth["ir_debug"] = torch_xla._XLAC._get_xla_tensors_text([f(*moved)])
print(json.dumps(truth))
"""


@pytest.fixture(scope="module")
def truth() -> dict[str, Any]:
    return torch_testing.run_truth(TRUTH, EXAMPLE)


def jaxscope_run(*extra: str, example: Path = EXAMPLE) -> subprocess.CompletedProcess[str]:
    return torch_testing.jaxscope_run(EXHIBIT, example, *extra)


def run_events(*extra: str, example: Path = EXAMPLE) -> list[EventBase]:
    done = jaxscope_run("--json", *extra, example=example)
    assert done.returncode == 0, done.stderr[-2000:]
    parsed = torch_testing.parse_events(done.stdout)
    assert isinstance(parsed[-1], RunFinished), parsed[-1]
    return parsed


def run_truth(script: str, example: Path) -> dict[str, Any]:
    return torch_testing.run_truth(script, example)


def run_truth_with(script: str, example: Path, *extra: str) -> dict[str, Any]:
    return torch_testing.run_truth(script, example, *extra)


@pytest.fixture(scope="module")
def events() -> list[EventBase]:
    return run_events()


def only(events: list[EventBase], kind: type[Any]) -> Any:
    (found,) = [e for e in events if isinstance(e, kind)]
    return found


def test_graph_is_torch_xlas_own(events: list[EventBase], truth: dict[str, Any]) -> None:
    built = only(events, LazyGraphBuilt)
    assert built.ir == truth["ir"]
    assert built.hlo == truth["hlo"]
    assert built.graph_hash == truth["hash"]
    assert isinstance(events[-1], RunFinished)


def test_value_equals_cpu_torch(events: list[EventBase], truth: dict[str, Any]) -> None:
    synced = only(events, LazyGraphSynced)
    assert synced.executions == 1
    value = float(synced.values[0].removeprefix("tensor(").removesuffix(")"))
    assert value == pytest.approx(truth["cpu_value"], rel=1e-4)
    assert value == pytest.approx(truth["value"], rel=1e-4)


def test_hash_invariants_by_experiment(events: list[EventBase], truth: dict[str, Any]) -> None:
    compared = only(events, GraphHashCompared)
    same_shape, longer = compared.trials
    # torch_xla's own hashes, computed in the truth process: equal for new values of the same
    # shapes, new for a new leading size.
    assert truth["hash_new_values"] == truth["hash"] != truth["hash_longer"]
    assert (same_shape.graph_hash, same_shape.same) == (truth["hash_new_values"], True)
    assert (longer.graph_hash, longer.same) == (truth["hash_longer"], False)


def test_lines_grow_the_graph_and_the_item_line_cuts(events: list[EventBase]) -> None:
    steps = [e for e in events if isinstance(e, LazyLineStepped)]
    source = EXAMPLE.read_text().splitlines()
    start = source.index("def f(x, w1, w2):")
    end = source.index("args = (")
    body = [i + 1 for i in range(start + 1, end) if source[i].strip()]
    assert [s.line for s in steps] == body
    item_line = next(n for n in body if ".item()" in source[n - 1])
    # The .item() line, and only it, runs a program (the cut) and copies a value to the host.
    assert [s.line for s in steps if s.executions] == [item_line]
    assert [s.line for s in steps if s.transfers_from_device] == [item_line]
    # Every other line of f adds nodes that name it (torch_xla's IR debug location).
    for step in steps:
        assert all(n.line in (None, *body) for n in step.pending)
        if step.line != item_line:
            assert step.new_nodes > 0
            assert step.new_nodes == sum(n.line == step.line for n in step.pending)


def _device_data(texts: list[str]) -> set[tuple[str, str]]:
    """The (shape, location) of each ``xla::device_data`` node among IR node lines."""
    found = set()
    for text in texts:
        matched = re.search(r"= (\S+) xla::device_data\(\), location=([^,]+),", text)
        if matched:
            found.add((matched.group(1), matched.group(2)))
    return found


def test_arguments_name_the_line_that_first_uses_them(
    events: list[EventBase], truth: dict[str, Any]
) -> None:
    """Reading the pending IR after a line must not make an unused argument's IR node in the
    probe (it showed ``location=finish@probe.py:107`` for good): each device-data node names
    the snippet line a plain run with IR debug on names (``w2`` first used on line 9)."""
    steps = [e for e in events if isinstance(e, LazyLineStepped)]
    expected = _device_data(truth["ir_debug"].splitlines())
    assert len(expected) >= 3  # x, w1, w2 and the Python scalars
    assert expected <= _device_data([n.text for n in steps[-1].pending])
    for step in steps:
        for node in step.pending:
            assert "location=" not in node.text or "@<snippet>:" in node.text, node.text


def test_print_artefacts_are_byte_for_byte(truth: dict[str, Any]) -> None:
    ir = jaxscope_run("--print", "ir")
    assert ir.returncode == 0, ir.stderr[-2000:]
    assert ir.stdout in (truth["ir"], truth["ir"] + "\n")
    graph_hash = jaxscope_run("--print", "graph_hash")
    assert graph_hash.stdout.strip() == truth["hash"]


# --- what cuts the graph, by kind -------------------------------------------------------------

# The truth for the cuts: the example as a plain script under torch's own override hook
# (TorchFunctionMode sees every torch call; the probe wraps a few methods instead): each outermost
# call during which torch_xla ran a program, with its snippet line; the graph, its hash and the
# hashes for a new Python number; CPU torch's value.
CUT_TRUTH = r"""
import json, sys, torch, torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.debug.metrics as met
from torch.overrides import TorchFunctionMode
ns = {}
exec(compile(open(sys.argv[1]).read(), "<snippet>", "exec"), ns)
f, args = ns["f"], ns["args"]
expected = f(*args).tolist()
dev = torch_xla.device()
def moved(a):
    out = [t.to(dev) if isinstance(t, torch.Tensor) else t for t in a]
    torch_xla.sync()
    return out
def runs():
    xm.wait_device_ops()
    return met.counter_value("ExecuteComputation") or 0
cuts = []
class Cuts(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        before = runs()
        result = func(*args, **(kwargs or {}))
        ran = runs() - before
        if ran:
            frame = sys._getframe(1)
            while frame.f_code.co_filename != "<snippet>":
                frame = frame.f_back
            cuts.append([frame.f_lineno, func.__name__, ran])
        return result
a = moved(args)
with Cuts():
    f(*a)
out = f(*moved(args))
X = torch_xla._XLAC
truth = {"cuts": cuts, "ir": X._get_xla_tensors_text([out]),
         "hash": bytes(X._get_graph_hash([out])).hex()}
hashes = {}
for i, v in enumerate(args):
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        changed = [*args[:i], v + 1, *args[i + 1:]]
        hashes[i] = bytes(X._get_graph_hash([f(*moved(changed))])).hex()
truth["number_hashes"] = hashes
torch_xla.sync()
truth["value"] = out.cpu().tolist()
truth["cpu_value"] = expected
print(json.dumps(truth))
"""


@pytest.fixture(scope="module")
def cuts_events() -> list[EventBase]:
    return run_events(example=CUTS)


@pytest.fixture(scope="module")
def cuts_truth() -> dict[str, Any]:
    return run_truth(CUT_TRUTH, CUTS)


def test_each_cut_names_the_call_that_made_it(
    cuts_events: list[EventBase], cuts_truth: dict[str, Any]
) -> None:
    steps = [e for e in cuts_events if isinstance(e, LazyLineStepped)]
    shown: list[list[Any]] = [[s.line, c.method, c.executions] for s in steps for c in s.cut_by]
    # .item(), .cpu(), .to("cpu"), print, an if on a tensor, .tolist(): one line each, as
    # torch's own hook sees them in a plain script (a .to("cpu") was a cut with no call named).
    assert shown == cuts_truth["cuts"]
    assert [m for _, m, _ in shown] == ["item", "cpu", "to", "__repr__", "__bool__", "tolist"]
    source = CUTS.read_text().splitlines()
    for s in steps:
        for call in s.cut_by:
            line, method = s.line, call.method
            word = {"__repr__": "print(", "__bool__": "if "}.get(method, f".{method}(")
            assert word in source[line - 1], (line, method)
    # Every line that ran a program named its call; the others ran none (lazy).
    for step in steps:
        assert step.executions == sum(c.executions for c in step.cut_by)
        assert not step.eager_mode


def test_cuts_example_graph_and_values(
    cuts_events: list[EventBase], cuts_truth: dict[str, Any]
) -> None:
    built = only(cuts_events, LazyGraphBuilt)
    assert (built.ir, built.graph_hash) == (cuts_truth["ir"], cuts_truth["hash"])
    synced = only(cuts_events, LazyGraphSynced)
    # torch prints 4 decimals.
    got = json.loads(synced.values[0].removeprefix("tensor(").removesuffix(")"))
    assert got == pytest.approx(cuts_truth["cpu_value"], abs=1e-4)
    assert got == pytest.approx(cuts_truth["value"], abs=1e-4)


def test_a_python_constant_baked_in_is_a_new_hash(
    cuts_events: list[EventBase], cuts_truth: dict[str, Any]
) -> None:
    compared = only(cuts_events, GraphHashCompared)
    numbers = {t.change.split(" ")[0]: t for t in compared.trials if "Python number" in t.change}
    assert set(numbers) == {"args[2]", "args[3]"}
    truth = cuts_truth["number_hashes"]
    # The exponent p is baked into the graph (prim::Constant): a new p, a new hash. The
    # multiplier scale is uploaded as device data: a new scale, the same hash.
    assert (numbers["args[2]"].graph_hash, numbers["args[2]"].same) == (truth["2"], False)
    assert (numbers["args[3]"].graph_hash, numbers["args[3]"].same) == (truth["3"], True)
    assert truth["2"] != cuts_truth["hash"] == truth["3"]


# --- eager mode: a cut after every op ---------------------------------------------------------

# The truth: f's body run statement by statement in a plain script under torch_xla's eager mode,
# the counters read after each statement (no settrace, no wrapped methods).
EAGER_TRUTH = r"""
import ast, json, sys, torch, torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.debug.metrics as met
from torch_xla.experimental import eager_mode
source = open(sys.argv[1]).read()
ns = {}
exec(compile(source, "<snippet>", "exec"), ns)
f, args = ns["f"], ns["args"]
dev = torch_xla.device()
scope = dict(ns)
fdef = next(n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name == "f")
for name, value in zip([a.arg for a in fdef.args.args], args):
    scope[name] = value.to(dev) if isinstance(value, torch.Tensor) else value
torch_xla.sync()
def counts():
    xm.wait_device_ops()
    return [met.counter_value(n) or 0 for n in ("ExecuteComputation", "UncachedCompile")]
per_line = []
eager_mode(True)
for stmt in fdef.body:
    if isinstance(stmt, ast.Return):
        out = ast.Name("__out", ast.Store())
        stmt = ast.copy_location(ast.Assign(targets=[out], value=stmt.value), stmt)
    module = ast.fix_missing_locations(ast.Module(body=[stmt], type_ignores=[]))
    before = counts()
    exec(compile(module, "<snippet>", "exec"), scope)
    after = counts()
    per_line.append([stmt.lineno, after[0] - before[0], after[1] - before[1]])
eager_mode(False)
print(json.dumps({"per_line": per_line}))
"""


def test_eager_mode_runs_every_op(events: list[EventBase]) -> None:
    eager = run_events("--eager-mode", "true")
    truth = run_truth(EAGER_TRUTH, EXAMPLE)
    steps = [e for e in eager if isinstance(e, LazyLineStepped)]
    assert all(s.eager_mode for s in steps)
    assert [[s.line, s.executions, s.compiles] for s in steps] == truth["per_line"]
    # Every line of f ran programs in eager mode; lazily, only the .item() line did.
    lazy = [e for e in events if isinstance(e, LazyLineStepped)]
    assert all(s.executions > 0 for s in steps)
    assert sum(s.executions > 0 for s in lazy) == 1
    # The ops ran as they came, not as a cut of a pending graph: no call ran a program.
    assert all(not s.cut_by for s in steps)
    # The graph, its hash and the values are lazy's (the option changes the line steps only).
    graphs = [only(run, LazyGraphBuilt) for run in (eager, events)]
    assert len({(g.ir, g.hlo, g.graph_hash) for g in graphs}) == 1


# --- the hash's ingredients, from the source at the tag -----------------------------------------


def test_hash_source_is_the_v2_9_0_blob() -> None:
    """git blob ids at v2.9.0 (``git ls-tree v2.9.0``) of the shipped files."""
    blobs = {
        "xla_graph_executor.cpp": "42e38b92184947f793741701b10fa29a5d5f2c9a",
        "LICENSE": "6fa55f3e9b8a78436a81511c728382f40d0359ba",
    }
    for name, blob in blobs.items():
        data = (hash_source.SOURCE_DIR / name).read_bytes()
        assert hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest() == blob, name
    assert len(hash_source.source_text().splitlines()) == 1607


def test_hash_ingredients_read_from_the_source(events: list[EventBase]) -> None:
    lines = hash_source.source_text().splitlines()
    found = hash_source.ingredients()
    # In the order a call runs them: CollectSyncTensors (called first), then GetGraphHash.
    assert [(i.function, i.key) for i in found] == [
        ("CollectSyncTensors", "force_ltc_data"),
        ("CollectSyncTensors", "HashCompilationEnv"),
        ("CollectSyncTensors", "ir_value.hash()"),
        ("GetGraphHash", "parameter_sequence"),
        ("GetGraphHash", "buffer_donor_index"),
        ("GetGraphHash", "GetAutoSharding"),
    ]
    entry = hash_source.function_lines("GetGraphHash")
    collect = hash_source.function_lines("CollectSyncTensors")
    call = hash_source.call_line()
    assert entry[0] < call < entry[1]
    assert "CollectSyncTensors(tensors, config)" in lines[call - 1]
    for i in found:
        span = collect if i.function == "CollectSyncTensors" else entry
        assert span[0] <= i.lines[0] <= i.lines[1] <= span[1]
        # The excerpt is the file's lines, byte for byte.
        assert i.text == "\n".join(lines[i.lines[0] - 1 : i.lines[1]])
        assert "hash" in i.text and i.key in i.text
    # _get_graph_hash's binding calls GetGraphHash (init_python_bindings.cpp at the tag, read in
    # a snapshot: `XLAGraphExecutor::Get()->GetGraphHash(xtensors)`), and the probe ships it all.
    source = only(events, GraphHashCompared).source
    assert (source.tag, source.commit, source.path) == (
        "v2.9.0",
        "5fab7053df86c8d503b98d9e7202ca8b8d4978c7",
        "torch_xla/csrc/xla_graph_executor.cpp",
    )
    assert [(v.function, tuple(v.lines), v.text) for v in source.ingredients] == [
        (i.function, i.lines, i.text) for i in found
    ]
    assert (tuple(source.entry_lines), tuple(source.collect_lines), source.call_line) == (
        entry,
        collect,
        call,
    )


# --- the same f through torchax (design 0042) -------------------------------------------------

NO_CUTS = HERE / "examples" / "no_cuts.py"
TORCHAX_SITE = torch_python().parent.parent / "torchax-site"
needs_torchax = pytest.mark.skipif(
    not (TORCHAX_SITE / "torchax").is_dir(),
    reason=f"torchax is not installed ({TORCHAX_SITE}: `make torch` installs it)",
)

# The truth: torchax's own jax_view + jax.make_jaxpr in a plain fresh process (torch seeded 0
# first, as the probe does: torchax's environment takes its PRNG key from torch's seed, and is
# made before the trace: made inside it, its key would be a ``random_seed`` eqn of the jaxpr,
# one that is not f's), and CPU torch.
TORCHAX_TRUTH = r"""
import json, sys
sys.path.insert(0, sys.argv[2])
import torch
torch.manual_seed(0)
import jax, numpy as np, torchax, torchax.interop
ns = {}
exec(compile(open(sys.argv[1]).read(), "<snippet>", "exec"), ns)
f, args = ns["f"], ns["args"]
static = [i for i, a in enumerate(args) if not isinstance(a, torch.Tensor)]
jargs = [jax.numpy.asarray(a.numpy()) if isinstance(a, torch.Tensor) else a for a in args]
torchax.default_env()  # made before the trace (its PRNG key a concrete array), as the probe does
jf = torchax.interop.jax_view(f)
truth = {"cpu": [torch.as_tensor(f(*args)).tolist()]}
truth["versions"] = [torchax.__version__, jax.__version__]
try:
    truth["jaxpr"] = str(jax.make_jaxpr(jf, static_argnums=static)(*jargs))
    low = jax.jit(jf, static_argnums=static).lower(*jargs)
    truth["stablehlo"] = low.as_text()
    out = jax.tree_util.tree_leaves(jax.jit(jf, static_argnums=static)(*jargs))
    truth["values"] = [np.asarray(v).tolist() for v in out]
except Exception as exc:
    truth["error"] = type(exc).__name__
print(json.dumps(truth))
"""


def torchax_truth(example: Path) -> dict[str, Any]:
    return torch_testing.run_truth(TORCHAX_TRUTH, example, TORCHAX_SITE)


@needs_torchax
def test_torchax_shows_the_same_f_as_a_jaxpr() -> None:
    events = run_events("--torchax", "true", example=NO_CUTS)
    staged = only(events, TorchaxStaged)
    truth = torchax_truth(NO_CUTS)
    assert staged.problem == ""
    assert [staged.torchax_version, staged.jax_version] == truth["versions"] == ["0.0.13", "0.10.2"]
    assert staged.static_args == [2, 3]
    assert staged.jaxpr == truth["jaxpr"]
    assert staged.stablehlo == truth["stablehlo"]
    assert "dot_general" in staged.jaxpr and "stablehlo.dot_general" in staged.stablehlo
    values = [json.loads(v) for v in staged.values]
    assert values == [pytest.approx(v, rel=1e-6) for v in truth["values"]]
    assert values == [pytest.approx(v, rel=1e-5, abs=1e-7) for v in truth["cpu"]]
    # Beside it, torch_xla's graph of the same f (its own IR and HLO, tested above).
    assert only(events, LazyGraphBuilt).hlo.startswith("HloModule")


@needs_torchax
def test_torchax_cannot_trace_a_host_read() -> None:
    """mlp_item's .item() reads a value while torchax traces: torchax's (JAX's) own error, said,
    not a failed run."""
    events = run_events("--torchax", "true")
    staged = only(events, TorchaxStaged)
    truth = torchax_truth(EXAMPLE)
    assert staged.problem.split(":")[0] == truth["error"]
    assert (staged.jaxpr, staged.stablehlo, staged.values) == ("", "", [])


MODULE_STATE = HERE / "examples" / "module_state.py"

# The truth for f reading module-level state, torchax's own way in a plain fresh process: each
# module's state as torchax.extract_jax splits it (names and JAX arrays, the values the snippet
# built), passed in as an input and put in the module by JittableModule.functional_call around
# f; a module-level tensor moved to torchax's device as a user would (``.to("jax")`` under the
# environment), captured. The error's type, first line and snippet line where the trace fails.
TORCHAX_STATE_TRUTH = r"""
import json, sys, traceback
sys.path.insert(0, sys.argv[2])
import torch
torch.manual_seed(0)
import jax, numpy as np, torchax, torchax.interop
ns = {}
exec(compile(open(sys.argv[1]).read(), "<snippet>", "exec"), ns)
f, args = ns["f"], ns["args"]
truth = {}
try:
    truth["cpu"] = [f(*args).tolist()]
except Exception as exc:
    truth["cpu_error"] = type(exc).__name__
ns2 = {}
exec(compile(open(sys.argv[1]).read(), "<snippet>", "exec"), ns2)
f, args, model = ns2["f"], ns2["args"], ns2["model"]
states, _ = torchax.extract_jax(model)
jm = torchax.interop.JittableModule(model)
env = torchax.default_env()
names = [n for n, v in ns2.items() if isinstance(v, torch.Tensor) and not any(v is a for a in args)]
with env:
    captured = {n: ns2[n].to("jax") for n in names}
def body(states, *a):
    ns2.update(captured)
    mine = states["model"]
    return jm.functional_call(
        lambda m, *b: f(*b), {k: mine[k] for k in jm.params}, {k: mine[k] for k in jm.buffers}, *a
    )
g = torchax.interop.jax_view(body)
jargs = [jax.numpy.asarray(a.numpy()) for a in args]
truth["state_names"] = sorted(states)
truth["params"] = sorted(jm.params)
truth["named_parameters"] = sorted(n for n, _ in model.named_parameters())
truth["captured"] = names
try:
    closed = jax.make_jaxpr(g)({"model": states}, *jargs)
    truth["jaxpr"] = str(closed)
    truth["stablehlo"] = jax.jit(g).lower({"model": states}, *jargs).as_text()
    truth["values"] = [np.asarray(v).tolist() for v in jax.tree_util.tree_leaves(
        jax.jit(g)({"model": states}, *jargs))]
    truth["invars"] = [v.aval.str_short(short_dtypes=True) for v in closed.jaxpr.invars]
except Exception as exc:
    tb = traceback.extract_tb(exc.__traceback__)
    lines = [fr.lineno for fr in tb if fr.filename == "<snippet>"]
    truth["error"] = [type(exc).__name__, str(exc).strip().splitlines()[0], lines[-1]]
print(json.dumps(truth))
"""


@needs_torchax
def test_torchax_module_state_is_inputs_and_constants() -> None:
    """A module-level nn.Sequential, tensor and loss read by f: it failed ``AssertionError: Expect
    a Tensor or a View but got <class 'torch.nn.parameter.Parameter'>``. Now the model's
    parameters are inputs of the jaxpr, named as torchax and ``named_parameters()`` name them,
    the tensor a constant; the jaxpr, StableHLO and values are torchax's own in a fresh process,
    and the values CPU torch's."""
    truth = run_truth_with(TORCHAX_STATE_TRUTH, MODULE_STATE, str(TORCHAX_SITE))
    events = run_events("--torchax", "true", example=MODULE_STATE)
    staged = only(events, TorchaxStaged)
    assert staged.problem == ""
    assert staged.jaxpr == truth["jaxpr"]
    assert staged.stablehlo == truth["stablehlo"]
    values = [json.loads(v) for v in staged.values]
    assert values == [pytest.approx(v, rel=1e-6) for v in truth["values"]]
    assert values == [pytest.approx(v, rel=1e-5) for v in truth["cpu"]]
    # The inputs: torchax's state names (named_parameters()'s here), then the args, in the
    # jaxpr's order, each with its type there; the tensor f reads, a constant.
    assert truth["params"] == truth["state_names"] == truth["named_parameters"]
    names = [f"model.{n}" for n in truth["state_names"]] + ["args[0]", "args[1]"]
    assert [v.name for v in staged.inputs] == names
    assert [v.kind for v in staged.inputs] == ["parameter"] * 4 + ["argument"] * 2
    assert [v.aval for v in staged.inputs] == truth["invars"]
    assert [(v.name, v.kind) for v in staged.constants] == [("scale", "tensor")]
    assert truth["captured"] == ["scale"]
    header = staged.jaxpr.split(". let")[0]
    consts, invars = header.removeprefix("{ lambda ").split(";")
    assert invars.split() == [f"{v.var}:{v.aval}" for v in staged.inputs]
    assert consts.split() == [f"{v.var}:{v.aval}" for v in staged.constants]
    assert staged.updated == []
    # torch_xla's side of the same run still moves the state (its graph has the parameters).
    assert only(events, LazyGraphBuilt).hlo.startswith("HloModule")


@needs_torchax
def test_torchax_says_what_it_raised_on_a_training_step() -> None:
    """train_step's f calls loss.backward() and opt.step(): torchax's trace of the forward
    cannot run torch's autograd on it. The panel says what torchax raised and on which line
    of the snippet (the truth: the same trace in a fresh process), not a traceback or a jaxpr;
    the run does not fail."""
    truth = run_truth_with(TORCHAX_STATE_TRUTH, TRAIN, str(TORCHAX_SITE))
    events = run_events("--torchax", "true", example=TRAIN)
    staged = only(events, TorchaxStaged)
    kind, message, line = truth["error"]
    assert staged.problem == f"{kind}: {message}"
    assert "Traceback" not in staged.problem and "\n" not in staged.problem
    assert staged.problem_line == line
    assert staged.problem_source == TRAIN.read_text().splitlines()[line - 1].strip()
    assert staged.problem_source == "loss.backward()"
    assert (staged.jaxpr, staged.stablehlo, staged.values, staged.inputs) == ("", "", [], [])


# f updates module-level state in place: a tensor (``count.add_(1)``) and a BatchNorm's buffers
# in training mode.
IN_PLACE = """
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3))
count = torch.zeros(())


def f(x):
    count.add_(1)
    return model(x).sum()


x = torch.linspace(-1.0, 1.0, 24).reshape(6, 4)
args = (x,)
"""

# The truth: which state f changes under CPU torch, and which under torchax run eagerly (its
# own tensors: the model moved with ``.to("jax")``, ``count`` too, f called under its
# environment), by value.
TORCHAX_IN_PLACE_TRUTH = r"""
import json, sys
sys.path.insert(0, sys.argv[2])
import torch
torch.manual_seed(0)
import numpy as np, torchax, torchax.interop
def load():
    ns = {}
    exec(compile(open(sys.argv[1]).read(), "<snippet>", "exec"), ns)
    return ns
def state(ns, view):
    out = {f"model.{k}": view(v) for k, v in ns["model"].state_dict(keep_vars=True).items()}
    out["count"] = view(ns["count"])
    return out
def changed(ns, call, view):
    before = state(ns, view)
    call()
    after = state(ns, view)
    return sorted(k for k in before if not np.array_equal(before[k], after[k]))
cpu = load()
truth = {"cpu": changed(cpu, lambda: cpu["f"](*cpu["args"]), lambda t: t.detach().numpy().copy())}
env = torchax.default_env()
ns = load()
with env:
    ns["model"].to("jax")
    ns["count"] = ns["count"].to("jax")
    x = ns["args"][0].to("jax")
def run():
    with env:
        ns["f"](x)
truth["torchax"] = changed(ns, run, lambda t: np.asarray(torchax.interop.jax_view(t)).copy())
print(json.dumps(truth))
"""


@needs_torchax
def test_torchax_says_which_state_updates_it_drops(tmp_path: Path) -> None:
    """An in-place update of module-level state is computed in the jaxpr but is none of its
    outputs (``_ = ...``): the panel lists the state torchax updates, as torchax run eagerly
    updates it (by value); CPU torch updates more (torchax's batch norm drops the running
    stats)."""
    snippet = tmp_path / "in_place.py"
    snippet.write_text(IN_PLACE)
    truth = run_truth_with(TORCHAX_IN_PLACE_TRUTH, snippet, str(TORCHAX_SITE))
    staged = only(run_events("--torchax", "true", example=snippet), TorchaxStaged)
    assert staged.problem == ""
    assert sorted(staged.updated) == truth["torchax"]
    assert set(truth["torchax"]) < set(truth["cpu"])
    assert "count" in staged.updated
    (count,) = [c for c in staged.constants if c.name == "count"]
    assert f"_:f32[] = add {count.var} 1.0:f32[]" in staged.jaxpr


def test_no_torchax_panel_without_the_option(events: list[EventBase]) -> None:
    assert not [e for e in events if isinstance(e, TorchaxStaged)]


# --- a training step at module level --------------------------------------------------------

TRAIN = HERE / "examples" / "train_step.py"

# The truth for a training step whose model, loss and optimizer live at module level: the example
# as a plain script, its model moved by torch's own in-place conversion
# (``torch.__future__.set_swap_module_params_on_conversion``: the optimizer keeps the parameters).
# The probe calls f once line by line (arguments moved and synced first, synced after), then
# plainly (the graph shown); each call is one step, so the truth runs one step first, then the
# step whose loss graph it reads. CPU torch runs the same two steps.
TRAIN_TRUTH = r"""
import json, sys, torch, torch_xla
def load():
    ns = {}
    exec(compile(open(sys.argv[1]).read(), "<snippet>", "exec"), ns)
    return ns
dev = torch_xla.device()  # before any backward: autograd sizes its device queues then
cpu = load()
cpu_losses = [cpu["f"](*cpu["args"]).item() for _ in range(2)]
ns = load()
f, args = ns["f"], ns["args"]
torch.__future__.set_swap_module_params_on_conversion(True)
for v in list(ns.values()):
    if isinstance(v, torch.nn.Module):
        v.to(dev)
moved = [t.to(dev) for t in args]
torch_xla.sync()
f(*moved)
torch_xla.sync()
out = f(*[t.to(dev) for t in args])
truth = {
    "ir": torch_xla._XLAC._get_xla_tensors_text([out]),
    "hlo": torch_xla._XLAC._get_xla_tensors_hlo([out]),
    "hash": bytes(torch_xla._XLAC._get_graph_hash([out])).hex(),
}
torch_xla.sync()
truth["value"] = out.cpu().item()
truth["cpu_losses"] = cpu_losses
truth["weight_on_xla"] = ns["model"].weight.device.type
print(json.dumps(truth))
"""


def test_module_level_training_step_is_torch_xlas_own() -> None:
    """A module-level ``nn.Linear`` + ``CrossEntropyLoss`` + ``SGD`` step runs on the device (it
    failed "Expected XLA tensor" when only ``args`` were moved): the loss graph, its HLO and
    hash are torch_xla's own for the same step, and the loss is CPU torch's for that step (the
    second: the line-by-line call ran the first)."""
    truth = run_truth(TRAIN_TRUTH, TRAIN)
    events = run_events(example=TRAIN)
    built = only(events, LazyGraphBuilt)
    assert truth["weight_on_xla"] == "xla"
    assert built.ir == truth["ir"]
    assert built.hlo == truth["hlo"]
    assert built.graph_hash == truth["hash"]
    synced = only(events, LazyGraphSynced)
    # The loss keeps its autograd history: torch prints ``tensor(v, grad_fn=...)``.
    matched = re.fullmatch(r"tensor\(([-\d.e]+), grad_fn=<\w+>\)", synced.values[0])
    assert matched, synced.values[0]
    value = float(matched.group(1))
    first, second = truth["cpu_losses"]
    assert first != pytest.approx(second, rel=1e-3)  # the step changed the weights
    assert value == pytest.approx(second, rel=1e-4)
    assert value == pytest.approx(truth["value"], rel=1e-4)
    # Each line of f ran on the device, the step's lines included.
    steps = [e for e in events if isinstance(e, LazyLineStepped)]
    assert [s.line for s in steps] == [15, 16, 17, 18, 19]
    # The hash trials call f again on the moved state (two more steps); x one row longer than
    # the labels is refused by the loss, and said, not a failed run.
    trials = only(events, GraphHashCompared).trials
    assert [t.change for t in trials] == [
        "new values, same shapes",
        "args[0] one row longer (ValueError)",
    ]
    # New values of the same shapes and dtypes (the int64 labels reversed, not made float) give
    # the graph the same hash: before, the labels became float32 and the trial said "new hash".
    assert trials[0].same, trials[0]
