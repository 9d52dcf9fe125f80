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

from .artefacts import SHOWN_ERRORS, step_rows
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

# The cuts inside a step, by another instrument than the exhibit's wrappers: a line tracer on
# the snippet's frames that reads torch_xla's metrics (after wait_device_ops) at each line
# event, so a line that ran or compiled a graph shows as [line, compiles, uncached, runs].
def counts():
    xm.wait_device_ops()
    c, e = met.metric_data("CompileTime"), met.metric_data("ExecuteTime")
    return (c[0] if c else 0, met.counter_value("UncachedCompile") or 0, e[0] if e else 0)

def traced(fn, *a):
    cuts, state = [], {"line": None, "at": counts()}
    def mark(line):
        now = counts()
        if now != state["at"]:
            cuts.append([state["line"], *[n - b for n, b in zip(now, state["at"])]])
        state["line"], state["at"] = line, now
    def local(frame, event, arg):
        if event == "line":
            mark(frame.f_lineno)
        elif event == "return":
            back = frame.f_back
            mark(back.f_lineno if back and back.f_code.co_filename == "<snippet>" else None)
        return local
    def tracer(frame, event, arg):
        if frame.f_code.co_filename != "<snippet>":
            return None
        mark(frame.f_lineno)
        return local
    sys.settrace(tracer)
    try:
        return fn(*a), cuts
    finally:
        sys.settrace(None)

steps, losses = [], []
for b in batches:
    before = read()
    out, cuts = traced(ns["f"], *[x.to(dev) if isinstance(x, torch.Tensor) else x for x in b])
    tensors = [t for t in pytree.tree_leaves(out) if isinstance(t, torch.Tensor)]
    for m in modules:
        for p in m.parameters():
            tensors += [p] + ([p.grad] if p.grad is not None else [])
        tensors += list(m.buffers())
    for o in opts:
        for s in o.state.values():
            tensors += [t for t in pytree.tree_leaves(s) if isinstance(t, torch.Tensor)]
    tensors = list({id(t): t for t in tensors if t.device.type == "xla"}.values())
    h = bytes(torch_xla._XLAC._get_graph_hash(tensors)).hex()
    at_end = counts()
    torch_xla.sync(); xm.wait_device_ops()
    ended = counts()
    if ended != at_end:
        cuts.append([None, *[n - b for n, b in zip(ended, at_end)]])
    after = read()
    steps.append({"hash": h, "cuts": cuts, **{k: after[k] - before[k] for k in after}})
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


def assert_counters_are_torch_xlas(
    events: list[EventBase], truth: dict[str, Any], *, random: bool = False
) -> None:
    """Every count and loss against the plain loop's; ``random``: the loop draws on the device,
    whose RNG is not the CPU's, so the eager CPU losses are not its truth."""
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
        # Each cut that ran a program: its line and counts, as the plain loop's line tracer
        # saw them; together they are the step's.
        assert [[x.line, x.compiles, x.uncached, x.executions] for x in got.cuts] == want["cuts"]
        assert sum(x.compiles for x in got.cuts) == c.compiles
        assert sum(x.executions for x in got.cuts) == c.executions
    end = end_of(events)
    assert end.losses == pytest.approx(truth["xla_losses"], rel=1e-6)
    if not random:
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


def line_of(example: str, text: str) -> int:
    """The 1-based line of ``example`` that contains ``text``."""
    lines = (EXAMPLES / f"{example}.py").read_text().splitlines()
    (found,) = [i for i, line in enumerate(lines, 1) if text in line]
    return found


def finding_of(events: list[EventBase]) -> tuple[str, int | None] | None:
    """The finding the CLI prints (exit 3), as (error class, line), or None."""
    shown = SHOWN_ERRORS(events)
    return (shown[0].error_class, shown[0].line) if shown else None


# Issue 33, class 4: compiles counted per cut inside a step, each example broken and fixed,
# every count checked against the plain loop's (assert_counters_are_torch_xlas).


def test_seed_carried_by_host_reads_compiles_at_every_read() -> None:
    events = events_of("seed_float")
    assert_counters_are_torch_xlas(events, truth_of("seed_float"), random=True)
    steps = steps_of(events)
    at = line_of("seed_float", "total += float(")
    reads = [c for c in steps[0].cuts if c.kind == "host_read"]
    # Five reads of one line in one step, five graphs compiled, each carrying one more seed
    # update (GetRngSeed's b + k * seed); the next steps replay all five from the cache.
    assert [(c.line, c.call, c.uncached, c.seeds) for c in reads] == [
        (at, "float()", 1, n) for n in range(1, 6)
    ]
    assert len({c.graph_hash for c in reads}) == 5
    assert [s.counters.uncached for s in steps[1:]] == [0, 0]
    assert [c.graph_hash for c in steps[1].cuts if c.kind == "host_read"] == [
        c.graph_hash for c in reads
    ]
    end = end_of(events)
    assert (end.cause, end.line) == ("seed", at)
    assert "step 0 compiled 5 graphs" in end.detail
    assert finding_of(events) == ("CompilesInsideStep", at)
    fixed = events_of("seed_float_fixed")
    assert [s.counters.uncached for s in steps_of(fixed)] == [1, 0, 0]
    assert all(c.kind == "step_end" for s in steps_of(fixed) for c in s.cuts)
    assert finding_of(fixed) is None


def test_read_of_a_growing_pending_graph_compiles_at_every_read() -> None:
    events = events_of("grad_norm_accum")
    assert_counters_are_torch_xlas(events, truth_of("grad_norm_accum"))
    at = line_of("grad_norm_accum", "norms.append(model[0].weight.grad.norm().item())")
    steps = steps_of(events)
    # Four reads of one line in step 0, four graphs (each with one more accumulated
    # backward), no seed updates; then the step's end: five compiles in one step.
    assert [[c.line, c.uncached, c.seeds] for c in steps[0].cuts] == [[at, 1, 0]] * 4 + [
        [None, 1, 0]
    ]
    assert steps[0].counters.compiles == 5
    assert [s.counters.uncached for s in steps[1:]] == [0, 0]
    end = end_of(events)
    assert (end.cause, end.line) == ("repeat", at)
    assert finding_of(events) == ("CompilesInsideStep", at)
    fixed = events_of("grad_norm_accum_fixed")
    assert [s.counters.compiles for s in steps_of(fixed)] == [1, 0, 0]
    assert finding_of(fixed) is None


def test_host_read_before_the_update_splits_the_step() -> None:
    events = events_of("item_in_step")
    assert_counters_are_torch_xlas(events, truth_of("item_in_step"))
    at = line_of("item_in_step", "logged.append(loss.item())")
    steps = steps_of(events)
    assert [[c.line, c.call, c.uncached, c.executions] for c in steps[0].cuts] == [
        [at, ".item()", 1, 1],
        [None, "step end", 1, 1],
    ]
    assert [s.counters.executions for s in steps] == [2, 2, 2, 2]
    assert finding_of(events) == ("HostReadSplitsStep", at)
    fixed = events_of("item_in_step_fixed")
    assert [s.counters.executions for s in steps_of(fixed)] == [1, 1, 1, 1]
    assert finding_of(fixed) is None


def test_pad_on_the_device_is_named_with_its_line() -> None:
    events = events_of("device_pad")
    assert_counters_are_torch_xlas(events, truth_of("device_pad"))
    assert [s.counters.uncached for s in steps_of(events)] == [1, 1, 1, 1]
    at = line_of("device_pad", "F.pad(")
    end = end_of(events)
    # Not "pad the batches" (it is padded): where the padding happens is the fix.
    assert (end.cause, end.line) == ("device_pad", at)
    assert "pad on the host" in end.fix
    assert finding_of(events) == ("RecompileEveryStep", at)
    fixed = events_of("device_pad_fixed")
    assert [s.counters.uncached for s in steps_of(fixed)] == [1, 0, 0, 0]
    assert finding_of(fixed) is None


# The fixed loops against the plain loop's counts, cut by cut (the tests above check their
# counts by construction and that they have no finding): a truth process each, so in
# `make test-all`.
@pytest.mark.full
@pytest.mark.parametrize(
    "example",
    ["seed_float_fixed", "item_in_step_fixed", "device_pad_fixed", "grad_norm_accum_fixed"],
)
def test_fixed_loops_are_torch_xlas(example: str) -> None:
    events = events_of(example)
    assert_counters_are_torch_xlas(events, truth_of(example), random=example.startswith("seed"))
    assert finding_of(events) is None


def test_print_counters_and_the_finding() -> None:
    done = jaxscope_run("python_scalar", "--print", "counters")
    assert done.returncode == 3, done.stderr[-2000:]
    rows = json.loads(done.stdout)
    assert [r["uncached"] for r in rows] == [1, 1, 1, 1]
    assert list(rows[0]) == [
        "step", "graph_hash", "new_hash", "compiles", "compile_ns", "uncached", "cached",
        "executions", "execute_ns", "to_device", "to_device_ns", "from_device",
        "from_device_ns", "wall_ns", "cuts",
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
