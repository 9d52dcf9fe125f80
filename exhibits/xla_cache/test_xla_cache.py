"""The xla_cache exhibit against torch_xla itself: the exhibit runs through the real sandbox
(`jaxscope run`, a torch worker); the truth is the same loop as a plain script in a fresh
torch-venv process that reads torch_xla's counters itself after each step's sync, and the same
loop in eager CPU torch. Skipped, with the reason, where the torch venv is not installed.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from jaxscope.protocol import EventBase, RunFinished
from jaxscope.sandbox.kinds import kind_problem

from exhibits import torch_testing
from exhibits.torch_testing import parse_events, run_truth

from .artefacts import step_rows
from .events import XlaLoopFinished, XlaStepCounted

HERE = Path(__file__).resolve().parent
EXHIBIT = HERE.name
EXAMPLES = HERE / "examples"

pytestmark = pytest.mark.skipif(
    kind_problem("torch") is not None, reason=str(kind_problem("torch"))
)

# The truth: the example as a user's loop. Modules moved with torch's own swap-on-conversion
# flag (the probe swaps tensor by tensor), counters read with torch_xla's public metrics API.
TRUTH = r"""
import json, sys, torch, torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.debug.metrics as met
from torch.utils import _pytree as pytree

def load():
    ns = {}
    exec(compile(open(sys.argv[1]).read(), "<snippet>", "exec"), ns)
    batches = ns.get("batches") or [ns["args"]] * ns.get("steps", 4)
    return ns, batches

def first(out):
    return [t for t in pytree.tree_leaves(out) if isinstance(t, torch.Tensor)][0]

# The PJRT client first: autograd's engine sizes its device queues at the first backward.
dev = torch_xla.device()
ns, batches = load()
cpu_losses = [first(ns["f"](*b)).item() for b in batches]

ns, batches = load()
torch.__future__.set_swap_module_params_on_conversion(True)
modules = [v for v in ns.values() if isinstance(v, torch.nn.Module)]
for m in modules:
    m.to(dev)
data = {id(x) for b in batches for x in b}
for k, v in list(ns.items()):
    if isinstance(v, torch.Tensor) and id(v) not in data:
        torch.utils.swap_tensors(v, v.detach().to(dev).requires_grad_(v.requires_grad))
opts = [v for v in ns.values() if isinstance(v, torch.optim.Optimizer)]
torch_xla.sync(); xm.wait_device_ops()

def read():
    out = {n: met.counter_value(n) or 0 for n in ("UncachedCompile", "CachedCompile")}
    for n in ("CompileTime", "ExecuteTime", "TransferToDeviceTime", "TransferFromDeviceTime"):
        d = met.metric_data(n)
        out[n] = d[0] if d else 0
    return out

steps, losses = [], []
for b in batches:
    before = read()
    out = ns["f"](*[x.to(dev) if isinstance(x, torch.Tensor) else x for x in b])
    tensors = [first(out)]
    for m in modules:
        for p in m.parameters():
            tensors += [p] + ([p.grad] if p.grad is not None else [])
        tensors += list(m.buffers())
    for o in opts:
        for s in o.state.values():
            tensors += [t for t in pytree.tree_leaves(s) if isinstance(t, torch.Tensor)]
    h = bytes(torch_xla._XLAC._get_graph_hash(tensors)).hex()
    torch_xla.sync(); xm.wait_device_ops()
    after = read()
    steps.append({"hash": h, **{k: after[k] - before[k] for k in after}})
    losses.append(first(out))
print(json.dumps({"steps": steps, "xla_losses": [t.cpu().item() for t in losses],
                  "cpu_losses": cpu_losses}))
"""


def truth_of(example: str) -> dict[str, Any]:
    return run_truth(TRUTH, EXAMPLES / f"{example}.py")


def jaxscope_run(example: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return torch_testing.jaxscope_run(EXHIBIT, EXAMPLES / f"{example}.py", *extra)


def events_of(example: str) -> list[EventBase]:
    return torch_testing.events_of(EXHIBIT, EXAMPLES / f"{example}.py", ok=(0, 3))


def steps_of(events: list[EventBase]) -> list[XlaStepCounted]:
    return [e for e in events if isinstance(e, XlaStepCounted)]


def end_of(events: list[EventBase]) -> XlaLoopFinished:
    (end,) = [e for e in events if isinstance(e, XlaLoopFinished)]
    return end


def assert_counters_are_torch_xlas(events: list[EventBase], truth: dict[str, Any]) -> None:
    steps = steps_of(events)
    assert len(steps) == len(truth["steps"])
    for got, want in zip(steps, truth["steps"], strict=True):
        c = got.counters
        assert got.graph_hash == want["hash"]
        assert (c.uncached, c.cached, c.compiles, c.executions) == (
            want["UncachedCompile"],
            want["CachedCompile"],
            want["CompileTime"],
            want["ExecuteTime"],
        )
        assert (c.to_device, c.from_device) == (
            want["TransferToDeviceTime"],
            want["TransferFromDeviceTime"],
        )
        assert (c.compile_ns > 0) == (c.compiles > 0)
        assert (c.execute_ns > 0) == (c.executions > 0)
    end = end_of(events)
    assert end.losses == pytest.approx(truth["xla_losses"], rel=1e-6)
    assert end.losses == pytest.approx(truth["cpu_losses"], rel=1e-4)
    assert isinstance(events[-1], RunFinished)


@pytest.fixture(scope="module")
def default_events() -> list[EventBase]:
    return events_of("mlp_sgd")


def test_default_loop_compiles_once_then_hits_the_cache(default_events: list[EventBase]) -> None:
    assert_counters_are_torch_xlas(default_events, truth_of("mlp_sgd"))
    steps = steps_of(default_events)
    assert [s.counters.uncached for s in steps] == [1, 0, 0, 0]
    assert [s.counters.cached for s in steps] == [0, 1, 1, 1]
    assert [s.new_hash for s in steps] == [True, False, False, False]
    # The first step is the slow one: its compile alone outlasts the whole second step.
    assert steps[0].counters.compile_ns > steps[1].wall_ns
    assert end_of(default_events).cause == ""


def test_varying_batch_recompiles_on_its_shapes() -> None:
    events = events_of("varying_batch")
    assert_counters_are_torch_xlas(events, truth_of("varying_batch"))
    steps = steps_of(events)
    assert [s.counters.uncached for s in steps] == [1, 1, 1, 1]
    assert [s.inputs[0] for s in steps] == [f"float32[{n},4]" for n in (8, 6, 7, 5)]
    assert "%p5 = f32[6,4]{1,0} parameter(5)" in steps[1].changed
    end = end_of(events)
    source = (EXAMPLES / "varying_batch.py").read_text().splitlines()
    assert (end.cause, end.recompiling_steps) == ("shape", [1, 2, 3])
    assert end.line is not None and source[end.line - 1].startswith("batches = ")


def test_python_scalar_exponent_recompiles_and_the_fix_does_not() -> None:
    events = events_of("python_scalar")
    assert_counters_are_torch_xlas(events, truth_of("python_scalar"))
    steps = steps_of(events)
    assert [s.counters.uncached for s in steps] == [1, 1, 1, 1]
    assert "%constant = f32[] constant(3)" in steps[3].changed
    end = end_of(events)
    source = (EXAMPLES / "python_scalar.py").read_text().splitlines()
    assert end.cause == "constant"
    # The line torch_xla's IR debug metadata names for the new constant: the pow's line.
    assert end.line is not None and "decay.pow(step)" in source[end.line - 1]
    fixed = events_of("python_scalar_fixed")
    assert_counters_are_torch_xlas(fixed, truth_of("python_scalar_fixed"))
    assert [s.counters.uncached for s in steps_of(fixed)] == [1, 0, 0, 0]
    assert end_of(fixed).cause == ""


def test_python_float_multiplier_settles_after_0_and_1() -> None:
    """``lr * step`` is uploaded as data; only 0.0 (step 0) is a constant: two graphs."""
    events = events_of("lr_times_step")
    assert_counters_are_torch_xlas(events, truth_of("lr_times_step"))
    steps = steps_of(events)
    assert [s.counters.uncached for s in steps] == [1, 1, 0, 0, 0]
    assert [s.counters.cached for s in steps] == [0, 0, 1, 1, 1]
    assert (end_of(events).cause, end_of(events).recompiling_steps) == ("", [1])


def test_print_counters_and_the_finding() -> None:
    done = jaxscope_run("python_scalar", "--print", "counters")
    assert done.returncode == 3, done.stderr[-2000:]
    rows = json.loads(done.stdout)
    assert [r["uncached"] for r in rows] == [1, 1, 1, 1]
    assert list(rows[0]) == [
        "step", "graph_hash", "new_hash", "compiles", "compile_ns", "uncached", "cached",
        "executions", "execute_ns", "to_device", "to_device_ns", "from_device",
        "from_device_ns", "wall_ns",
    ]  # fmt: skip
    assert "RecompileEveryStep" in done.stderr


def test_golden_is_the_default_run() -> None:
    golden = HERE / "golden" / "mlp_sgd.events.jsonl"
    events = parse_events(golden.read_text())
    rows = step_rows(events)
    assert [r["uncached"] for r in rows] == [1, 0, 0, 0]
    assert [r["cached"] for r in rows] == [0, 1, 1, 1]


def test_bad_batches_is_blamed_on_its_line(tmp_path: Path) -> None:
    snippet = tmp_path / "bad.py"
    snippet.write_text(
        "import torch\n\ndef f(x):\n    return x.sum()\n\nargs = (torch.ones(2),)\nbatches = 3\n"
    )
    done = torch_testing.jaxscope_run(EXHIBIT, snippet, "--print", "counters")
    assert done.returncode != 0
    assert "batches must be a non-empty list of tuples of f's arguments" in done.stderr
    assert "at line 7 in <module>" in done.stderr
