"""The dynamo_bridge exhibit against torch itself: the exhibit runs through the real sandbox
(`jaxscope run`, a torch worker); the truth is a plain script in a fresh torch-venv process:
``torch._dynamo.explain(f)`` for the FX graphs and graph-break reasons, the same
``torch.compile(f, backend="openxla")`` calls with torch_xla's own metrics read after each
call's sync and the two ``_XLAC`` bindings the bridge calls (``_get_graph_hash`` at compile,
``_run_cached_graph`` at each launch) wrapped directly, and eager CPU torch for the values.
Skipped, with the reason, where the torch venv is not installed.
"""

from __future__ import annotations

import copy
import functools
import json
import math
import subprocess
from pathlib import Path
from typing import Any

import pytest
from jaxscope.protocol import EventBase, RunFinished
from jaxscope.sandbox.kinds import kind_problem

from exhibits import torch_testing
from exhibits.torch_testing import parse_events, run_truth

from .artefacts import call_rows, region_rows
from .events import (
    DynamoCallCounted,
    DynamoGraphCaptured,
    DynamoOutputsCompared,
    DynamoRegionsFound,
)

HERE = Path(__file__).resolve().parent
EXHIBIT = HERE.name
EXAMPLES = HERE / "examples"

pytestmark = pytest.mark.skipif(
    kind_problem("torch") is not None, reason=str(kind_problem("torch"))
)

# The truth: the example as a user's script. The snippet is compiled under the sandbox's file
# name and its lines registered in linecache, as the sandbox loads it: dynamo reads f's source
# (without it, it names the graph's inputs L_args_0_, ... instead of L_a_, ...).
TRUTH = r"""
import json, re, sys, torch, torch_xla
import torch._dynamo
import torch_xla.core.xla_model as xm
import torch_xla.debug.metrics as met
from torch.utils import _pytree as pytree

import linecache
ns, src = {}, open(sys.argv[1]).read()
linecache.cache["<snippet>"] = (len(src), None, src.splitlines(True), "<snippet>")
exec(compile(src, "<snippet>", "exec"), ns)
f, args, calls = ns["f"], ns["args"], ns.get("calls", 3)
# Eager: a torch.compile(model) the snippet made is not traced on the CPU (as the exhibit).
with torch.compiler.set_stance("force_eager"):
    cpu = f(*args)
dev = torch_xla.device()
# The snippet's modules go to the device as a script's model.to(device) does, before the first
# compiled call.
for v in list(ns.values()):
    if isinstance(v, torch.nn.Module):
        v.to(dev)
moved = [a.to(dev) for a in args]
torch_xla.sync(); xm.wait_device_ops()

def line_of(trace):
    found = re.findall(r'File "<snippet>", line (\d+)', trace or "")
    return int(found[-1]) if found else None


X = torch_xla._XLAC
hashed, launched = [], []
real_hash, real_run = X._get_graph_hash, X._run_cached_graph
def get_graph_hash(tensors):
    h = real_hash(tensors)
    hashed.append(bytes(h).hex())
    return h
def run_cached_graph(h, inputs):
    launched.append(bytes(h).hex())
    return real_run(h, inputs)
X._get_graph_hash, X._run_cached_graph = get_graph_hash, run_cached_graph

def read():
    out = {n: met.counter_value(n) or 0 for n in ("DynamoExtractCompiledGraph", "UncachedCompile")}
    for n in ("CompileTime", "ExecuteTime"):
        d = met.metric_data(n)
        out[n] = d[0] if d else 0
    return out

codes = []
openxla = torch._dynamo.lookup_backend("openxla")
def recorder(gm, example_inputs):
    codes.append(gm.code.strip())
    return openxla(gm, example_inputs)
compiled = torch.compile(f, backend=recorder)
steps = []
for _ in range(calls):
    before, h0, l0 = read(), len(hashed), len(launched)
    out = compiled(*moved)
    torch_xla.sync(); xm.wait_device_ops()
    after = read()
    steps.append({"hashed": hashed[h0:], "launched": launched[l0:],
                  **{k: after[k] - before[k] for k in after}})
# explain() after the counted calls: its lazy run of f compiles (the fallback's input)
# and would fill torch_xla's compile cache before them.
X._get_graph_hash, X._run_cached_graph = real_hash, real_run
explained = torch._dynamo.explain(f)(*moved)
graphs = [{"code": g.code.strip(),
           "ops": [[n.name, line_of(n.meta.get("stack_trace"))] for n in g.graph.nodes
                   if n.op not in ("placeholder", "output")]}
          for g in explained.graphs]
breaks = [{"reason": r.reason,
           "line": [fr.lineno for fr in r.user_stack if fr.filename == "<snippet>"][-1]}
          for r in explained.break_reasons]
torch._dynamo.reset()
leaves = lambda v: [t for t in pytree.tree_leaves(v) if isinstance(t, torch.Tensor)]
print(json.dumps({
    "graphs": graphs, "codes": codes, "breaks": breaks, "steps": steps,
    "xla": [t.cpu().flatten().tolist() for t in leaves(out) if not t.is_complex()],
    "cpu": [t.flatten().tolist() for t in leaves(cpu) if not t.is_complex()],
    "fallback_ops": sorted(met.executed_fallback_ops()),
}))
"""


def truth_of(example: str) -> dict[str, Any]:
    """The plain loop's truth of ``example``: one fresh torch process per example and test
    process (item_break is read by two tests; ~7 s each), a copy for each caller."""
    return copy.deepcopy(_truth_of(example))


@functools.cache
def _truth_of(example: str) -> dict[str, Any]:
    return run_truth(TRUTH, EXAMPLES / f"{example}.py")


def jaxscope_run(example: str | Path, *extra: str) -> subprocess.CompletedProcess[str]:
    path = example if isinstance(example, Path) else EXAMPLES / f"{example}.py"
    return torch_testing.jaxscope_run(EXHIBIT, path, *extra)


def events_of(example: str) -> list[EventBase]:
    return torch_testing.events_of(EXHIBIT, EXAMPLES / f"{example}.py")


def graphs_of(events: list[EventBase]) -> list[DynamoGraphCaptured]:
    return [e for e in events if isinstance(e, DynamoGraphCaptured)]


def calls_of(events: list[EventBase]) -> list[DynamoCallCounted]:
    return [e for e in events if isinstance(e, DynamoCallCounted)]


def assert_is_torchs(events: list[EventBase], truth: dict[str, Any]) -> None:
    """Every value the exhibit shows against the plain script's."""
    graphs = graphs_of(events)
    # The FX graphs: the code dynamo hands a backend in a plain script and explain()'s graphs
    # (their code, op nodes and stack-trace lines).
    assert [g.code for g in graphs] == truth["codes"]
    assert [g.code for g in graphs] == [g["code"] for g in truth["graphs"]]
    assert [
        [[n.name, n.line] for n in g.nodes if n.op not in ("placeholder", "output")] for g in graphs
    ] == [g["ops"] for g in truth["graphs"]]
    # Graph breaks: explain's reasons at the same user lines.
    broken = [g for g in graphs if g.graph_break]
    assert [g.reason for g in broken] == [b["reason"] for b in truth["breaks"]]
    assert [g.break_line for g in broken] == [b["line"] for b in truth["breaks"]]
    assert not graphs[-1].graph_break
    # Each call: the hashes computed (compile) and launched, and the metric deltas.
    calls = calls_of(events)
    assert len(calls) == len(truth["steps"])
    for got, want in zip(calls, truth["steps"], strict=True):
        assert got.compiled == want["hashed"]
        assert got.launched == want["launched"]
        c = got.counters
        assert (c.extracts, c.uncached, c.compiles, c.executions) == (
            want["DynamoExtractCompiledGraph"],
            want["UncachedCompile"],
            want["CompileTime"],
            want["ExecuteTime"],
        )
        assert (c.compile_ns > 0) == (c.compiles > 0)
    # Compile on the first call, replay by hash after: the launched hashes are those computed.
    first, later = calls[0], calls[1:]
    assert first.compiled and first.counters.uncached == len(first.compiled)
    assert first.launched == first.compiled
    for call in later:
        assert call.compiled == [] and call.counters.uncached == 0 and call.counters.compiles == 0
        assert call.launched == first.compiled
    # The regions: one xla region per compiled program, under the hash it was compiled under.
    (found,) = [e for e in events if isinstance(e, DynamoRegionsFound)]
    xla = [r for r in found.regions if r.kind == "xla"]
    assert [r.graph_hash for r in xla] == first.compiled
    assert [r.program for r in xla] == list(range(len(xla)))
    # Values: eager CPU torch, and the plain script's compiled run.
    (outputs,) = [e for e in events if isinstance(e, DynamoOutputsCompared)]
    assert outputs.close and outputs.replayed_by_hash
    if truth["cpu"]:
        assert outputs.values == pytest.approx(truth["cpu"][0][:16], rel=1e-5, abs=1e-6)
        assert outputs.values == pytest.approx(truth["xla"][0][:16], rel=1e-6, abs=1e-7)
    assert isinstance(events[-1], RunFinished)


def test_one_graph_compiles_once_then_replays_by_hash() -> None:
    events = events_of("sin_cos")
    truth = truth_of("sin_cos")
    assert_is_torchs(events, truth)
    (graph,) = graphs_of(events)
    assert (graph.frame, graph.reason, graph.graph_break) == ("f", "return_value", False)
    assert [n.target for n in graph.nodes if n.op == "call_function"] == [
        "torch.sin", "operator.mul", "torch.cos", "operator.add",
    ]  # fmt: skip
    calls = calls_of(events)
    assert [c.counters.extracts for c in calls] == [1, 0, 0]
    assert [len(c.launched) for c in calls] == [1, 1, 1]
    # The first call's compile alone outlasts a replayed call.
    assert calls[0].counters.compile_ns > calls[1].wall_ns
    (found,) = [e for e in events if isinstance(e, DynamoRegionsFound)]
    assert [r.kind for r in found.regions] == ["xla"]
    assert "torch.ops.aten.sin.default" in found.regions[0].code


def test_item_breaks_the_graph_into_two_programs_with_host_code_between() -> None:
    events = events_of("item_break")
    assert_is_torchs(events, truth_of("item_break"))
    source = (EXAMPLES / "item_break.py").read_text().splitlines()
    first, second = graphs_of(events)
    assert first.graph_break and "Tensor.item()" in first.reason
    assert first.break_line is not None and ".item()" in source[first.break_line - 1]
    assert second.frame.startswith("torch_dynamo_resume_in_f_at_")
    (found,) = [e for e in events if isinstance(e, DynamoRegionsFound)]
    assert [r.kind for r in found.regions] == ["xla", "host", "xla"]
    assert found.regions[1].lines == [first.break_line]
    assert found.regions[1].code == source[first.break_line - 1].strip()
    assert all(
        max(a.lines) <= min(b.lines) for a, b in zip(found.regions, found.regions[1:], strict=False)
    )


def test_data_dependent_if_breaks_at_the_if() -> None:
    events = events_of("data_dependent_if")
    assert_is_torchs(events, truth_of("data_dependent_if"))
    first, _ = graphs_of(events)
    assert first.reason.startswith("generic_jump TensorVariable()")
    (found,) = [e for e in events if isinstance(e, DynamoRegionsFound)]
    assert [r.kind for r in found.regions] == ["xla", "host", "xla"]
    assert found.regions[1].code == "if x.sum() > 0:"


def test_unsupported_op_splits_one_graph_into_two_programs() -> None:
    events = events_of("cpu_fallback")
    truth = truth_of("cpu_fallback")
    assert_is_torchs(events, truth)
    (graph,) = graphs_of(events)
    assert not graph.graph_break
    (found,) = [e for e in events if isinstance(e, DynamoRegionsFound)]
    assert [(r.kind, r.graph) for r in found.regions] == [("xla", 0), ("host", 0), ("xla", 0)]
    host = found.regions[1]
    # The op the bridge left to the CPU is the one torch_xla ran as a fallback op.
    assert host.what == "CPU fallback: aten.linalg_eig.default"
    assert "aten::linalg_eig" in truth["fallback_ops"]
    source = (EXAMPLES / "cpu_fallback.py").read_text().splitlines()
    assert "eigvals" in source[host.lines[0] - 1]


def test_module_compiled_at_module_level_runs_as_a_script_does() -> None:
    # Issue 33: `compiled = torch.compile(model)` at module level, called in f. The exhibit
    # crashed moving the model ("Cannot swap t1 because it has weakref associated with it":
    # its eager truth call had traced the compiled model on the CPU); a plain script moves the
    # model first and compiles one program for it.
    events = events_of("compiled_module")
    truth = truth_of("compiled_module")
    assert_is_torchs(events, truth)
    assert len(graphs_of(events)) == 1
    assert len(calls_of(events)[0].compiled) == 1


def test_print_fx_regions_and_calls() -> None:
    done = jaxscope_run("item_break", "--print", "fx")
    assert done.returncode == 0, done.stderr[-2000:]
    truth = truth_of("item_break")
    blocks = done.stdout.rstrip("\n").split("\n\n# graph ")
    assert len(blocks) == 2
    for block, want in zip(blocks, truth["codes"], strict=True):
        assert block.split("\n", 1)[1] == want
    regions = jaxscope_run("item_break", "--print", "regions")
    assert regions.returncode == 0, regions.stderr[-2000:]
    rows = json.loads(regions.stdout)
    assert [r["kind"] for r in rows] == ["xla", "host", "xla"]
    assert list(rows[0]) == ["kind", "graph", "program", "graph_hash", "what", "lines"]
    assert rows[0]["graph_hash"] == truth["steps"][0]["hashed"][0]


def test_golden_is_the_default_run() -> None:
    golden = HERE / "golden" / "sin_cos.events.jsonl"
    events = parse_events(golden.read_text())
    rows = call_rows(events)
    assert [r["extracts"] for r in rows] == [1, 0, 0]
    assert len({h for r in rows for h in r["launched"]}) == 1  # type: ignore[attr-defined]
    assert [r["kind"] for r in region_rows(events)] == ["xla"]


@pytest.mark.parametrize(
    ("body", "message", "line"),
    [
        ("calls = 0\n", "calls must be an int from 1 to 16, not 0", 7),
        ("calls = 'x'\n", "calls must be an int from 1 to 16, not 'x'", 7),
    ],
)
def test_bad_calls_is_blamed_on_its_line(
    tmp_path: Path, body: str, message: str, line: int
) -> None:
    snippet = tmp_path / "bad.py"
    snippet.write_text(
        "import torch\n\ndef f(x):\n    return x.sum()\n\nargs = (torch.ones(2),)\n" + body
    )
    done = jaxscope_run(snippet, "--print", "fx")
    assert done.returncode != 0
    assert message in done.stderr
    assert f"at line {line} in <module>" in done.stderr


def test_raising_f_points_at_its_line(tmp_path: Path) -> None:
    snippet = tmp_path / "raises.py"
    snippet.write_text(
        "import torch\n\ndef f(x):\n    raise ValueError('boom')\n\nargs = (torch.ones(2),)\n"
    )
    done = jaxscope_run(snippet, "--print", "fx")
    assert done.returncode != 0
    assert "ValueError: boom" in done.stderr
    assert "line 4" in done.stderr


def test_f_without_tensor_ops_gives_no_graph_and_says_so(tmp_path: Path) -> None:
    snippet = tmp_path / "constant.py"
    snippet.write_text("import torch\n\ndef f(x):\n    return 3.0\n\nargs = (torch.ones(2),)\n")
    done = jaxscope_run(snippet, "--print", "calls")
    assert done.returncode == 0, done.stderr[-2000:]
    rows = json.loads(done.stdout)
    assert [(r["graphs"], r["compiled"], r["launched"]) for r in rows] == [([], [], [])] * 3
    assert "dynamo handed the backend no FX graph" in done.stderr


def test_backward_in_f_lists_the_backward_program_after_the_break(tmp_path: Path) -> None:
    """A module-level weight goes to the device with f; backward() breaks the graph, and the
    backward graph aot_autograd made is compiled at that line: after the break, as backward."""
    snippet = tmp_path / "step.py"
    snippet.write_text(
        "import torch\n\nw = torch.ones(3, requires_grad=True)\n\n"
        "def f(x):\n    loss = (x * w).sin().sum()\n    loss.backward()\n    return loss\n\n"
        "args = (torch.linspace(0, 1, 3),)\ncalls = 2\n"
    )
    done = jaxscope_run(snippet, "--json")
    assert done.returncode == 0, done.stderr[-2000:]
    events = parse_events(done.stdout)
    (found,) = [e for e in events if isinstance(e, DynamoRegionsFound)]
    assert [(r.kind, r.graph, r.program) for r in found.regions] == [
        ("xla", 0, 0), ("host", 0, None), ("xla", 0, 1),
    ]  # fmt: skip
    assert found.regions[1].what == "graph break: Unsupported Tensor.backward() call"
    assert found.regions[1].lines == [7]
    assert found.regions[2].what.startswith("backward: ") and "aten.cos" in found.regions[2].what
    calls = calls_of(events)
    assert [len(c.compiled) for c in calls] == [2, 0]
    assert calls[1].launched == calls[0].compiled
    (outputs,) = [e for e in events if isinstance(e, DynamoOutputsCompared)]
    # The loss: sum(sin(x * 1)) for x = 0, 0.5, 1.
    assert outputs.close
    assert outputs.values == pytest.approx([sum(math.sin(v) for v in (0, 0.5, 1))], rel=1e-6)
