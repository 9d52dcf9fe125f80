"""Contract test of :mod:`jaxscope.torch_internals`, the one module that calls torch_xla's private
``_XLAC`` bindings (design 0025): each function on a small graph, in a fresh ``.venv-torch``
process (torch and torch_xla live only there), checked against the ``_XLAC`` binding called
directly and against the format the probes parse. When torch_xla changes a binding (a new text
format, a hash of another length, a renamed function), this file fails, not every probe.

Skipped, with the reason, where the torch venv is not installed (``make torch``).

Each test's script prints one JSON object on its last line; ``run_torch`` returns it. Helpers that
add a function to ``torch_internals`` add a test here that runs it the same way.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from jaxscope.sandbox.kinds import kind_problem, torch_python
from jaxscope.sandbox.worker import package_roots

pytestmark = pytest.mark.skipif(
    kind_problem("torch") is not None, reason=str(kind_problem("torch"))
)

HEX32 = re.compile(r"[0-9a-f]{32}")


def run_torch(script: str, *, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run ``script`` in a fresh torch-venv process (``PJRT_DEVICE=CPU``, ``jaxscope`` importable)
    and return the JSON object its last stdout line prints."""
    done = subprocess.run(
        [str(torch_python()), "-c", script],
        capture_output=True,
        text=True,
        timeout=240,
        env={
            **os.environ,
            "PJRT_DEVICE": "CPU",
            "PYTHONPATH": os.pathsep.join(package_roots()),
            **(env or {}),
        },
        check=False,
        cwd=Path(__file__).resolve().parent,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


# One small graph (x * 2 + 1).sum() on device data x, read through torch_internals and through
# the bindings themselves; then the hash on new values and on a new shape; then IR debug.
GRAPH = r"""
import json, sys
import jaxscope.torch_internals as ti
out = {"imports_torch": "torch" in sys.modules}
import torch, torch_xla
import torch_xla.debug.metrics as met
X = torch_xla._XLAC
out["initialized_before"] = ti.runtime_is_initialized()
dev = torch_xla.device()
out["initialized_after"] = ti.runtime_is_initialized()
out["devices"] = ti.all_devices()
out["devices_truth"] = [str(d) for d in X._xla_get_all_devices()]
import torch_xla.runtime as xr
out["device_count"] = xr.global_runtime_device_count()

def graph(x):
    return (x * 2 + 1).sum()

x = torch.arange(6.0).reshape(2, 3).to(dev)
torch_xla.sync()
out["x_info"] = ti.tensor_debug_info(x)
out["x_info_truth"] = X._get_xla_tensor_debug_info(x)
out["x_has_ir"] = ti.has_ir(x)
y = graph(x)
runs = met.counter_value("ExecuteComputation") or 0
out["ir"] = ti.ir_text([y])
out["ir_truth"] = X._get_xla_tensors_text([y])
out["hlo"] = ti.hlo_text([y])
out["hlo_truth"] = X._get_xla_tensors_hlo([y])
out["hash"] = ti.graph_hash_hex([y])
out["hash_truth"] = bytes(X._get_graph_hash([y])).hex()
out["reads_ran"] = (met.counter_value("ExecuteComputation") or 0) - runs
out["y_has_ir"] = ti.has_ir(y)
out["y_info"] = ti.tensor_debug_info(y)
new_values = torch.linspace(-3.0, 3.0, 6).reshape(2, 3).to(dev)
torch_xla.sync()
out["hash_new_values"] = ti.graph_hash_hex([graph(new_values)])
out["hash_new_shape"] = ti.graph_hash_hex([graph(torch.ones(3, 3).to(dev))])
with ti.ir_debug():
    z = x + 1
out["ir_debug_on"] = ti.ir_text([z])
try:
    with ti.ir_debug():
        raise KeyError("inside")
except KeyError:
    pass
out["ir_debug_after_raise"] = ti.ir_text([x - 1])
torch_xla.sync()
out["value"] = y.cpu().item()
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def graph() -> dict[str, Any]:
    return run_torch(GRAPH)


def test_importing_the_module_imports_no_torch(graph: dict[str, Any]) -> None:
    # The JAX workers import jaxscope too: torch is imported by the probes, never by this module.
    assert graph["imports_torch"] is False


def test_runtime_and_devices(graph: dict[str, Any]) -> None:
    assert graph["initialized_before"] is False
    assert graph["initialized_after"] is True
    assert graph["devices"] == graph["devices_truth"]
    assert graph["devices"] == ["CPU:0"]  # PJRT_DEVICE=CPU: one device, named by its kind
    assert len(graph["devices"]) == graph["device_count"]


def test_ir_text_format(graph: dict[str, Any]) -> None:
    """The IR text the lazy_tensor probe splits into nodes: ``IR {``, one ``%N = shape op(...)``
    line per node (device data, the op names aten:: gives them), ``ROOT=0`` on the output."""
    ir = graph["ir"]
    assert ir == graph["ir_truth"]
    lines = ir.splitlines()
    assert lines[0] == "IR {" and lines[-1] == "}"
    nodes = [line.strip() for line in lines[1:-1]]
    assert all(re.fullmatch(r"%\d+ = \S+ [\w:]+\(.*", n) for n in nodes), nodes
    assert any("xla::device_data()" in n and "f32[2,3]" in n for n in nodes)
    assert [n for n in nodes if "ROOT=0" in n] == [nodes[-1]]
    assert "aten::sum(" in nodes[-1] and "aten::mul(" in ir and "aten::add(" in ir
    assert "location=" not in ir  # IR debug off
    assert graph["reads_ran"] == 0  # reading text, HLO and hash runs nothing


def test_hlo_module_text(graph: dict[str, Any]) -> None:
    hlo = graph["hlo"]
    assert hlo == graph["hlo_truth"]
    assert hlo.startswith("HloModule IrToHlo.")
    assert re.search(r"^ENTRY %IrToHlo\.\d+ \(", hlo, re.MULTILINE)
    assert "f32[2,3]" in hlo and "parameter(" in hlo and " reduce(" in hlo


def test_graph_hash_is_32_hex_and_keys_by_shape(graph: dict[str, Any]) -> None:
    assert HEX32.fullmatch(graph["hash"])
    assert graph["hash"] == graph["hash_truth"]
    # The compile cache's key: the same for new values of the same shape, new for a new shape.
    assert graph["hash_new_values"] == graph["hash"]
    assert HEX32.fullmatch(graph["hash_new_shape"])
    assert graph["hash_new_shape"] != graph["hash"]


def test_tensor_debug_info_and_has_ir(graph: dict[str, Any]) -> None:
    info = graph["x_info"]
    assert info == graph["x_info_truth"]
    assert info.startswith("XLATensor {\n") and "\nDevice: CPU:0\n" in info
    assert "\nIR: None\n" in info  # device data only: has_ir reads this line
    assert graph["x_has_ir"] is False
    assert graph["y_has_ir"] is True
    assert re.search(r"\nIR: \[\] aten::sum", graph["y_info"])


def test_ir_debug_names_the_line_and_switches_off(graph: dict[str, Any]) -> None:
    on = graph["ir_debug_on"]
    # The probes' _LOCATION pattern: location=<function>@<file>:<line> (here the -c script).
    assert re.search(r"aten::add\(.*location=<module>@<string>:\d+", on), on
    # Off again after the block, even after it raised.
    assert "location=" not in graph["ir_debug_after_raise"]
    assert graph["value"] == pytest.approx(sum(2 * v + 1 for v in range(6)))


# TraceMe: marker spans in a profiler trace, around a transfer, read back from the trace file
# torch_xla.debug.profiler writes; none recorded while no trace is being captured.
TRACE_ME = r"""
import glob, gzip, json, tempfile
import torch, torch_xla
import torch_xla.debug.profiler as xp
import jaxscope.torch_internals as ti
dev = torch_xla.device()
idle = ti.TraceMe("seam-idle"); idle.start(); idle.stop()
folder = tempfile.mkdtemp()
xp.start_trace(folder)
a = ti.TraceMe("seam-upload"); a.start()
x = torch.ones(4).to(dev)
a.stop()
b = ti.TraceMe("seam-after"); b.start(); b.stop()
xp.stop_trace()
(path,) = glob.glob(folder + "/plugins/profile/*/*.trace.json.gz")
events = [e for e in json.load(gzip.open(path, "rt"))["traceEvents"] if e.get("ph") == "X"]
spans = {e["name"]: (e["ts"], e["ts"] + e["dur"]) for e in events}
print(json.dumps({"names": sorted(n for n in spans if n.startswith("seam")),
                  "upload": spans["seam-upload"],
                  "transfer": spans["PjRtComputationClient::TransferToDevice"]}))
"""


def test_trace_me_marks_a_span_in_the_profilers_trace() -> None:
    found = run_torch(TRACE_ME)
    assert found["names"] == ["seam-after", "seam-upload"]
    (start, end), (t_start, t_end) = found["upload"], found["transfer"]
    assert start <= t_start <= t_end <= end


# cached_graph_runs (the dynamo_bridge exhibit): the hashes torch.compile(backend="openxla")'s
# bridge launches, against the hash the bridge computed for the program (read from the
# optimized_mod closure's cache, dynamo_bridge.py:479-491 at v2.9.0); the binding is put back
# after the block, even when it raises.
CACHED_RUNS = r"""
import json
import jaxscope.torch_internals as ti
import torch, torch_xla
import torch_xla._dynamo.dynamo_bridge as bridge
X = torch_xla._XLAC
out = {}
dev = torch_xla.device()
a = torch.arange(6.0).reshape(2, 3).to(dev)
torch_xla.sync()
closures = []
real = bridge.extract_internal
def extract_internal(model):
    mod = real(model)
    closures.append(mod)
    return mod
bridge.extract_internal = extract_internal
compiled = torch.compile(lambda x: torch.sin(x) * 2.0, backend="openxla")
real_run = X._run_cached_graph
with ti.cached_graph_runs() as runs:
    out["patched"] = X._run_cached_graph is not real_run
    first = compiled(a)
    second = compiled(a)
bridge.extract_internal = real
out["runs"] = runs
out["restored"] = X._run_cached_graph is real_run
cells = [c.cell_contents for c in closures[0].__closure__ if isinstance(c.cell_contents, dict)]
out["closure_hashes"] = [bytes(v[2]).hex() for cache in cells for v in cache.values()]
try:
    with ti.cached_graph_runs():
        raise RuntimeError("inside")
except RuntimeError:
    pass
out["restored_after_raise"] = X._run_cached_graph is real_run
import math
out["values"] = second.cpu().flatten().tolist()
out["expected"] = [2.0 * math.sin(v) for v in range(6)]
print(json.dumps(out))
"""


def test_cached_graph_runs_records_the_bridges_launches() -> None:
    got = run_torch(CACHED_RUNS)
    assert got["patched"] and got["restored"] and got["restored_after_raise"]
    # Two calls, one program: two launches, both under the hash the bridge compiled it under.
    assert len(got["runs"]) == 2 and HEX32.fullmatch(got["runs"][0])
    assert got["runs"] == got["closure_hashes"] * 2
    assert got["values"] == pytest.approx(got["expected"], rel=1e-5)


# SPMD (torch_spmd): set_client_env before the client (4 devices) and refused after it; the
# sharding text, the op-sharding arguments and the real devices against torch_xla's own calls.
SPMD = r"""
import json, os
import jaxscope.torch_internals as ti
ti.set_client_env({"CPU_NUM_DEVICES": "4"})
out = {"env": os.environ["CPU_NUM_DEVICES"]}
import numpy as np, torch, torch_xla
import torch_xla.distributed.spmd as xs
import torch_xla.runtime as xr
xr.use_spmd()
mesh = xs.Mesh(np.array([3, 1, 0, 2]), (2, 2), ("a", "b"))
t = torch.ones(4, 4).to("xla")
xs.mark_sharding(t, mesh, ("b", None))
out["count"] = xr.global_runtime_device_count()
out["spec"] = ti.sharding_spec(t)
out["spec_truth"] = torch_xla._XLAC._get_xla_sharding_spec(t)
out["unsharded"] = ti.sharding_spec(torch.ones(2).to("xla"))
tile, groups, repl, kind = ti.op_sharding_args(mesh, ("b", None))
truth = mesh._get_op_sharding_args(("b", None))
out["args"] = [tile, groups, repl, kind]
out["args_truth"] = [list(truth[0]), list(truth[1]), list(truth[2]), int(truth[3])]
out["real"] = ti.real_devices([str(t.device)])
out["real_truth"] = [str(d) for d in torch_xla._XLAC._xla_real_devices([str(t.device)])]
try:
    ti.set_client_env({"CPU_NUM_DEVICES": "8"})
    out["refused"] = ""
except ti.ClientExists as exc:
    out["refused"] = str(exc)
print(json.dumps(out))
"""


def test_spmd_client_env_sharding_text_and_tile_assignment() -> None:
    got = run_torch(SPMD)
    assert got["env"] == "4" and got["count"] == 4
    # The runtime's text sorts the devices of each replication group ({3, 0} -> 0,3).
    assert got["spec"] == got["spec_truth"] == "{devices=[2,1,2]0,3,1,2 last_tile_dim_replicate}"
    assert got["unsharded"] == ""
    # The logical mesh [[3, 1], [0, 2]] with axis b first: [[3, 0], [1, 2]], PARTIAL (5).
    assert got["args"] == got["args_truth"]
    assert got["args"][0] == [[3, 0], [1, 2]] and got["args"][3] == 5
    assert got["real"] == got["real_truth"] == ["SPMD:0"]
    assert "CPU_NUM_DEVICES" in got["refused"] and "exists already" in got["refused"]
