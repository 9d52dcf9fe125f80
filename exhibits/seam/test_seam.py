"""The seam exhibit against torch_xla itself: the exhibit runs through the real sandbox
(``jaxscope run``, a torch worker); the truth is the same loop as a plain script in a fresh
torch-venv process that reads ``torch_xla.debug.metrics`` itself around each phase of each step
(the batch's ``.to``, ``f``, ``torch_xla.sync()``, ``.item()``), and the same loop in eager CPU
torch for the losses. Skipped, with the reason, where the torch venv is not installed.
"""

from __future__ import annotations

import copy
import functools
import subprocess
from pathlib import Path
from typing import Any

import pytest
from jaxscope.protocol import EventBase, RunFinished
from jaxscope.sandbox.kinds import kind_problem

from exhibits import torch_testing
from exhibits.torch_testing import parse_events, run_truth

from .artefacts import HEADER, crossing_rows
from .events import SeamLoopFinished, SeamStepCrossed

HERE = Path(__file__).resolve().parent
EXHIBIT = HERE.name
EXAMPLES = HERE / "examples"

pytestmark = pytest.mark.skipif(
    kind_problem("torch") is not None, reason=str(kind_problem("torch"))
)

METHODS = (
    "TransferToDevice",
    "Compile",
    "ExecuteComputation",
    "ExecuteReplicated",
    "TransferFromDevice",
)

# The truth: the example as a user's loop, modules moved with torch's own swap-on-conversion
# flag, each phase's count of every ComputationClient method's time metric read with the
# public metrics API (after xm.wait_device_ops(): a run's time sample lands when it ends, on
# another thread), and the losses of the same steps in eager CPU torch.
TRUTH = r"""
import json, os, sys, torch

def load():
    ns = {}
    exec(compile(open(sys.argv[1]).read(), "<snippet>", "exec"), ns)
    return ns

ns = load()
mesh = None
if "mesh_shape" in ns:  # SPMD: the client on that many CPU devices, the batch's rows sharded
    import math, numpy as np
    os.environ["CPU_NUM_DEVICES"] = str(math.prod(ns["mesh_shape"]))
    import torch_xla.distributed.spmd as xs
    import torch_xla.runtime as xr
    xr.use_spmd()
    mesh = xs.Mesh(np.arange(math.prod(ns["mesh_shape"])), tuple(ns["mesh_shape"]))

import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.debug.metrics as met

NAMES = {"TransferToDevice": "TransferToDeviceTime", "Compile": "CompileTime",
         "ExecuteComputation": "ExecuteTime", "ExecuteReplicated": "ExecuteReplicatedTime",
         "TransferFromDevice": "TransferFromDeviceTime",
         "OutboundData": "OutboundData", "InboundData": "InboundData"}

def loss_of(out):
    return out[0] if isinstance(out, (tuple, list)) else out

dev = torch_xla.device()
cpu_losses = [loss_of(ns["f"](*ns["args"])).item() for _ in range(ns.get("steps", 3))]

ns = load()
torch.__future__.set_swap_module_params_on_conversion(True)
for v in list(ns.values()):
    if isinstance(v, torch.nn.Module):
        v.to(dev)
torch_xla.sync(); xm.wait_device_ops()

def read():
    out = {}
    for k, n in NAMES.items():
        d = met.metric_data(n)
        out[k] = (d[0], d[1]) if d else (0, 0.0)
    out["ReplicateShardedData"] = (met.counter_value("ReplicateShardedData") or 0, 0.0)
    return out

def delta(a, b):
    return {k: b[k][0] - a[k][0] for k in NAMES if not k.endswith("Data")} | {
        k: b[k][1] - a[k][1] for k in NAMES if k.endswith("Data")} | {
        "ReplicateShardedData": b["ReplicateShardedData"][0] - a["ReplicateShardedData"][0]}

steps, losses = [], []
for _ in range(ns.get("steps", 3)):
    r0 = read()
    batch = [x.to(dev) if isinstance(x, torch.Tensor) else x for x in ns["args"]]
    for x in batch:
        if mesh is not None and isinstance(x, torch.Tensor) and x.dim() > 0:
            xs.mark_sharding(x, mesh, (0, *([None] * (x.dim() - 1))))
    r1 = read()
    out = ns["f"](*batch)
    xm.wait_device_ops()  # a run inside f (a read there) posts its ExecuteTime when it ends
    r2 = read()
    torch_xla.sync(); xm.wait_device_ops()
    r3 = read()
    losses.append(loss_of(out).item())
    r4 = read()
    steps.append({"upload": delta(r0, r1), "f": delta(r1, r2), "sync": delta(r2, r3),
                  "read": delta(r3, r4)})
print(json.dumps({"steps": steps, "xla_losses": losses, "cpu_losses": cpu_losses,
                  "spmd": mesh is not None}))
"""


def truth_of(example: str) -> dict[str, Any]:
    """The plain loop's truth of ``example``: one fresh torch process per example and test
    process (mlp_sgd and spmd_batch are each read by two tests; ~7 s each), a copy for each
    caller."""
    return copy.deepcopy(_truth_of(example))


@functools.cache
def _truth_of(example: str) -> dict[str, Any]:
    return run_truth(TRUTH, EXAMPLES / f"{example}.py")


def jaxscope_run(path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return torch_testing.jaxscope_run(EXHIBIT, path, *extra)


def events_of(example: str) -> list[EventBase]:
    return torch_testing.events_of(EXHIBIT, EXAMPLES / f"{example}.py")


def steps_of(events: list[EventBase]) -> list[SeamStepCrossed]:
    return [e for e in events if isinstance(e, SeamStepCrossed)]


def source_line(example: str, text: str) -> int:
    """The 1-based line of ``example`` that starts with ``text`` (indented or not; exactly
    one)."""
    lines = (EXAMPLES / f"{example}.py").read_text().splitlines()
    (found,) = [i + 1 for i, line in enumerate(lines) if line.strip().startswith(text)]
    return found


def assert_crossings_are_torch_xlas(events: list[EventBase], truth: dict[str, Any]) -> None:
    """Per step and per phase, the crossings of each method equal the plain script's metric
    counts; the bytes equal its OutboundData/InboundData; each crossing has its trace span."""
    steps = steps_of(events)
    assert len(steps) == len(truth["steps"])
    for got, want in zip(steps, truth["steps"], strict=True):
        for phase, counted in want.items():
            for method in METHODS:
                n = sum(c.method == method and c.phase == phase for c in got.crossings)
                assert n == counted[method], (got.step, phase, method)
            up = [
                c.bytes
                for c in got.crossings
                if c.phase == phase and c.method == "TransferToDevice"
            ]
            down = [
                c.bytes
                for c in got.crossings
                if c.phase == phase and c.method == "TransferFromDevice"
            ]
            assert sum(b or 0 for b in up) == counted["OutboundData"]
            assert sum(b or 0 for b in down) == counted["InboundData"]
        assert got.trace_ok
        assert all(c.start_us is not None and c.dur_us is not None for c in got.crossings)
        starts = [c.start_us or 0.0 for c in got.crossings]
        assert starts == sorted(starts)
        m = got.metrics
        assert (m.to_device, m.compiles, m.executions, m.replicated, m.from_device) == tuple(
            sum(p[k] for p in want.values()) for k in METHODS
        )
        assert m.replicate_sharded == sum(p["ReplicateShardedData"] for p in want.values())
    end = [e for e in events if isinstance(e, SeamLoopFinished)][-1]
    assert end.losses == pytest.approx(truth["xla_losses"], rel=1e-6)
    assert end.losses == pytest.approx(truth["cpu_losses"], rel=1e-4)
    assert [s.loss for s in steps] == end.losses
    assert isinstance(events[-1], RunFinished)


@pytest.fixture(scope="module")
def default_events() -> list[EventBase]:
    return events_of("mlp_sgd")


def test_default_step_crosses_four_ways(default_events: list[EventBase]) -> None:
    assert_crossings_are_torch_xlas(default_events, truth_of("mlp_sgd"))
    steps = steps_of(default_events)
    order = [[(c.method, c.phase) for c in s.crossings] for s in steps]
    upload = [("TransferToDevice", "upload")] * 2
    run = [("ExecuteComputation", "sync"), ("TransferFromDevice", "read")]
    # The first step uploads the learning rate at opt.step() and compiles; the next only run.
    assert order[0] == [*upload, ("TransferToDevice", "f"), ("Compile", "sync"), *run]
    assert order[1] == order[2] == [*upload, *run]
    first = steps[0].crossings
    assert first[2].line == source_line("mlp_sgd", "opt.step()")
    assert first[-1].line == source_line("mlp_sgd", "return loss")
    assert first[0].line == source_line("mlp_sgd", "args = ")
    # Bytes: float32[8,4] and float32[8,1] down, one float32 up (and the lr down).
    assert [c.bytes for c in first if c.method.startswith("Transfer")] == [128, 32, 4, 4]
    # The PJRT calls inside each span, by the trace (the CPU client's classes).
    inner = {c.method: {s.name for s in c.pjrt} for c in first}
    assert "PjRtCpuClient::Compile" in inner["Compile"]
    assert "PjRtCpuExecutable::ExecuteSharded" in inner["ExecuteComputation"]
    assert "CommonPjRtBuffer::ToLiteral" in inner["TransferFromDevice"]
    assert steps[0].metrics.uncached == 1 and [s.metrics.cached for s in steps[1:]] == [1, 1]


def test_item_inside_the_step_cuts_the_graph() -> None:
    """``.item()`` inside f: the forward and backward compile and run at that line, the update
    is a second graph at the sync."""
    events = events_of("item_in_step")
    assert_crossings_are_torch_xlas(events, truth_of("item_in_step"))
    line = source_line("item_in_step", "logged.append(loss.item())")
    for s in steps_of(events):
        at_line = [c.method for c in s.crossings if c.line == line]
        want = ["ExecuteComputation", "TransferFromDevice"]
        assert at_line == (["Compile", *want] if s.step == 0 else want)
        assert sum(c.method == "ExecuteComputation" for c in s.crossings) == 2


def test_print_crossings(default_events: list[EventBase]) -> None:
    done = jaxscope_run(EXAMPLES / "mlp_sgd.py", "--print", "crossings")
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert lines[0].split() == [w for h in HEADER for w in h.split()]
    methods = [line.split()[1] for line in lines[1:] if line and line[0].isdigit()]
    assert methods == [r[1] for r in crossing_rows(default_events)]
    assert "PjRtLoadedExecutable::ExecuteSharded" in done.stdout
    assert "step 2: loss " in done.stdout


def test_golden_is_a_run_of_the_default() -> None:
    golden = HERE / "golden" / "mlp_sgd.events.jsonl"
    events = parse_events(golden.read_text())
    truth = truth_of("mlp_sgd")
    steps = steps_of(events)
    assert [len(s.crossings) for s in steps] == [
        sum(sum(p[m] for m in METHODS) for p in t.values()) for t in truth["steps"]
    ]


def test_spmd_step_runs_replicated() -> None:
    """``mesh_shape = (4,)``: the client on 4 CPU devices under SPMD, the batch's rows sharded.
    Each batch tensor goes down as TransferShardsToDevice (one span, no metric of its own) with
    its one TransferToDevice inside (pjrt_computation_client.cpp:309); the step runs as
    ExecuteReplicated; the loss, a replicated sharded value, is read through
    ReplicateShardedData's counter without a program."""
    events = events_of("spmd_batch")
    truth = truth_of("spmd_batch")
    assert truth["spmd"]
    assert_crossings_are_torch_xlas(events, truth)
    end = [e for e in events if isinstance(e, SeamLoopFinished)][-1]
    assert end.spmd
    for s in steps_of(events):
        kinds = [c.method for c in s.crossings]
        assert "ExecuteComputation" not in kinds and kinds.count("ExecuteReplicated") == 1
        shards = [i for i, c in enumerate(s.crossings) if c.method == "TransferShardsToDevice"]
        assert len(shards) == s.metrics.to_device
        for i in shards:
            outer, inner = s.crossings[i], s.crossings[i + 1]
            assert inner.method == "TransferToDevice"
            assert (outer.start_us or 0.0) <= (inner.start_us or 0.0)
            assert (inner.start_us or 0.0) + (inner.dur_us or 0.0) <= (outer.start_us or 0.0) + (
                outer.dur_us or 0.0
            )
        run = next(c for c in s.crossings if c.method == "ExecuteReplicated")
        assert "PjRtCpuExecutable::Execute" in {p.name for p in run.pjrt}
        # float32[8,4] and float32[8,1] go down in 4 shards each: the bytes of one copy.
        up = [
            c.bytes for c in s.crossings if c.method == "TransferToDevice" and c.phase == "upload"
        ]
        assert up == [128, 32]
    cited = {m.method: m for m in end.methods}
    assert cited["TransferShardsToDevice"].defined == "pjrt_computation_client.cpp:298"
    assert cited["ReplicateShardedData"].metric == "ReplicateShardedData (counter)"


def test_golden_spmd_is_a_run_of_the_example() -> None:
    golden = HERE / "golden" / "spmd_batch.events.jsonl"
    events = parse_events(golden.read_text())
    assert_crossings_are_torch_xlas(events, truth_of("spmd_batch"))


ARGS = "\n\nargs = (torch.ones(2),)\n"


@pytest.mark.parametrize(
    ("body", "message", "line"),
    [
        ("def f(x):\n    return x.sum()" + ARGS + "steps = 0\n", "steps must be an int from 1", 7),
        ("def f(x):\n    return x * 2" + ARGS, "not a tensor of shape (2,)\n  at line 4 in f", 4),
        (
            "def f(x):\n    return x * 2, {'s': x.sum()}" + ARGS,
            "not tuple whose first tensor has shape (2,)\n  at line 4 in f",
            4,
        ),
        ("def f(x):\n    return 3.0" + ARGS, "not float with no tensor in it\n  at line 4 in f", 4),
        ("def f(x):\n    raise ValueError('no step')" + ARGS, "no step", 4),
        (
            "def f(x):\n    return x.sum()" + ARGS + "mesh_shape = (16,)\n",
            "mesh_shape must be a tuple of positive ints with at most 8 devices",
            7,
        ),
        (
            "def f(x):\n    return x.sum()" + ARGS + "mesh_shape = (0,)\n",
            "not (0,)",
            7,
        ),
    ],
)
def test_bad_snippets_are_blamed_on_their_line(
    tmp_path: Path, body: str, message: str, line: int
) -> None:
    snippet = tmp_path / "bad.py"
    snippet.write_text("import torch\n\n" + body)
    done = jaxscope_run(snippet, "--print", "crossings")
    assert done.returncode != 0
    assert message in done.stderr
    assert f"line {line}" in done.stderr


def test_a_long_loop_in_f_stops_marking_lines(tmp_path: Path) -> None:
    """Past 20,000 line events in a step, a crossing in f has no line (not a wrong one)."""
    snippet = tmp_path / "loop.py"
    snippet.write_text(
        "import torch\n\nw = torch.ones(4)\n\n\ndef f(x):\n    for i in range(12000):\n"
        "        i = i + 1\n    print((w * x).sum().item())\n    return (w * x).sum()\n\n\n"
        "args = (torch.arange(4.0),)\nsteps = 1\n"
    )
    done = jaxscope_run(snippet, "--json")
    assert done.returncode == 0, done.stderr[-2000:]
    events = parse_events(done.stdout)
    (step,) = steps_of(events)
    in_f = [c for c in step.crossings if c.phase == "f"]
    assert [c.method for c in in_f] == ["Compile", "ExecuteComputation", "TransferFromDevice"]
    assert {c.line for c in in_f} == {None}
    assert "past its first 20,000 lines" in in_f[0].source
    assert step.loss == 6.0
