"""The lazy_tensor exhibit against torch_xla itself: the exhibit runs through the real sandbox
(`jaxscope run`, a torch worker), and the truth is the example run as a plain script in a fresh
torch-venv process that calls torch_xla's own functions (``_get_xla_tensors_text``,
``_get_xla_tensors_hlo``, ``_get_graph_hash``) and CPU torch. Skipped, with the reason, where
the torch venv is not installed (``make test`` installs it).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from jaxscope.events import EVENT_ADAPTER
from jaxscope.protocol import EventBase, RunFinished
from jaxscope.sandbox.kinds import kind_problem, torch_python

from .events import GraphHashCompared, LazyGraphBuilt, LazyGraphSynced, LazyLineStepped

HERE = Path(__file__).resolve().parent
EXHIBIT = HERE.name
EXAMPLE = HERE / "examples" / "mlp_item.py"
JAXSCOPE = Path(sys.executable).parent / "jaxscope"

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
    done = subprocess.run(
        [str(torch_python()), "-c", TRUTH, str(EXAMPLE)],
        capture_output=True,
        text=True,
        timeout=240,
        env={**os.environ, "PJRT_DEVICE": "CPU"},
        check=True,
    )
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def jaxscope_run(*extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(JAXSCOPE), "run", EXHIBIT, str(EXAMPLE), *extra],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )


@pytest.fixture(scope="module")
def events() -> list[EventBase]:
    done = jaxscope_run("--json")
    assert done.returncode == 0, done.stderr[-2000:]
    parsed: list[EventBase] = [
        EVENT_ADAPTER.validate_json(line) for line in done.stdout.splitlines() if line.strip()
    ]
    return parsed


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
