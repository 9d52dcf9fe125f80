"""The pjrt_registry exhibit against torch_xla 2.9.0 itself.

1. The shipped source is the v2.9.0 tag's (git blob ids), and the branches read from it are the
   ones a reader sees in the file (a table typed from reading it).
2. A table of ``PJRT_DEVICE`` values and switches, each tried twice, one process per try: in a
   plain torch-venv process started with that environment (the truth: torch_xla's exception
   text, exactly), and through ``jaxscope run`` (the real sandbox, a fresh torch worker). The
   exhibit's outcome equals the plain process's, the branch is the one the table names, and the
   error comes from that branch (its message literals are in the text). Skipped, with the
   reason, where the torch venv is not installed (``make test`` installs it).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest
from jaxscope.sandbox.kinds import kind_problem

from exhibits import torch_testing
from exhibits.torch_testing import run_truth

from . import branches
from .events import PjrtClientTried

HERE = Path(__file__).resolve().parent
EXHIBIT = HERE.name

torch_only = pytest.mark.skipif(
    kind_problem("torch") is not None, reason=str(kind_problem("torch"))
)

# The truth: a plain process of the torch venv, started with the environment, creates the client.
TRUTH = r"""
import json, torch, torch_xla, torch_xla.runtime as xr
try:
    torch_xla.device()
    out = {"ok": True, "devices": list(torch_xla._XLAC._xla_get_all_devices()), "error": None}
except Exception as exc:
    out = {"ok": False, "error_type": type(exc).__name__, "error": str(exc)}
    # Again in the same process, with CPU: is the failure kept?
    import os
    os.environ["PJRT_DEVICE"] = "CPU"
    try:
        torch_xla.device()
        out["retry_error"] = None
    except Exception as again:
        out["retry_error"] = str(again)
print(json.dumps(out))
"""

MISS = "No PjRtPlugin registered for: {d}. Make sure the environment variable PJRT_DEVICE is "
# (PJRT_DEVICE or None for unset, switch, branch, what the error starts with; None: ok). One case
# per branch and switch, CUDA's "plugin not registered" besides (a torch_xla process and a
# worker each, ~40 s on 2 cores): the FOO tests below run FOO on and off. CUDA's case, the second
# of its branch, runs under `make test-all` only (~5 s; design 0076).
CASES: list[tuple[str | None, str, str, str | None]] = [
    ("CPU", "auto", "CPU", None),
    (None, "auto", "CPU", None),  # torch_xla's import defaults an unset PJRT_DEVICE to CPU
    ("cpu", "on", "plugin not registered", MISS.format(d="cpu")),
    ("cpu", "off", "unknown", "Unknown PJRT_DEVICE: 'cpu'"),
    ("TPU", "on", "dynamic plugin", "libtpu not found"),
    ("TPU", "off", "TPU", "Failed to open libtpu.so"),
    ("CUDA", "on", "plugin not registered", MISS.format(d="CUDA")),
    ("", "auto", "PJRT_DEVICE empty", "$PJRT_DEVICE is not set."),
]


def test_source_is_the_v2_9_0_tag() -> None:
    """git blob ids of the three files at v2.9.0 (``git ls-tree v2.9.0``)."""
    blobs = {
        "pjrt_registry.cpp": "162e6dca9d2d6ac6de0183b26bfa62dc1c5c72ed",
        "runtime.cpp": "4dced2531bd593e6dae5a090a3533a4827b15c26",
        "env_vars.h": "ee1ce63687b3e8367b9a0fa629517147ee4f2526",
    }
    for name, blob in blobs.items():
        data = (branches.SOURCE_DIR / name).read_bytes()
        assert hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest() == blob, name
    assert len(branches.source_text("pjrt_registry.cpp").splitlines()) == 173


def test_branches_read_from_the_source() -> None:
    """What a reader of pjrt_registry.cpp at v2.9.0 sees: the chain's order, lines, reads."""
    chain = [(b.name, b.lines, b.env_read, b.env_read_if) for b in branches.registry_chain()]
    coordinator = (
        "PJRT_LOCAL_PROCESS_RANK",
        "LOCAL_RANK",
        "RANK",
        "PJRT_LOCAL_PROCESS_COUNT",
        "LOCAL_WORLD_SIZE",
        "WORLD_SIZE",
        "MASTER_ADDR",
        "XLA_COORDINATOR_PORT",
    )
    dyn = "PJRT_DYNAMIC_PLUGINS"
    assert chain == [
        ("dynamic plugin", (77, 129), (dyn,), coordinator),
        ("CPU", (130, 135), (dyn, "PJRT_CPU_ASYNC_CLIENT", "CPU_NUM_DEVICES"), ()),
        ("TPU", (136, 148), (dyn, "TPU_LIBRARY_PATH", "PTXLA_TPU_LIBRARY_PATH"), ()),
        ("TPU_LEGACY", (149, 151), (dyn,), ()),
        ("XPU", (152, 156), (dyn, "XPU_LIBRARY_PATH"), ()),
        ("NEURON", (157, 162), (dyn, "NEURON_LIBRARY_PATH"), ()),
        ("unknown", (163, 166), (dyn,), ()),
    ]
    miss = branches.plugin_miss()
    assert (miss.lines, miss.condition_lines, miss.env_read) == ((49, 59), (77, 78), (dyn,))
    empty = branches.empty_device_check()
    assert (empty.file, empty.lines) == ("runtime.cpp", (31, 34))
    assert empty.env_read == ("XLA_DUMP_FATAL_STACK", "PJRT_DEVICE")
    assert branches.builtin_plugins() == ("LIBRARY",)
    lines = branches.source_text("pjrt_registry.cpp").splitlines()
    assert lines[163 - 1].strip() == "} else {"
    assert "Unknown " in lines[165 - 1] and "No PjRtPlugin registered for: " in lines[51 - 1]


@pytest.mark.parametrize(
    ("value", "env", "expected"),
    [
        ("1", {}, True),
        ("0", {}, False),
        ("true", {}, True),
        ("false", {}, False),
        ("yes", {}, False),  # atoi("yes") == 0
        (None, {}, False),
    ],
)
def test_env_bool_is_getenvbool(value: str | None, env: dict[str, str], expected: bool) -> None:
    assert branches.env_bool(value, False) is expected


def _snippet(tmp: Path, device: str | None, switch: str) -> Path:
    path = tmp / f"try_{device}_{switch}.py".replace("/", "_")
    path.write_text(f"pjrt_device = {device!r}\ndynamic_plugins = {switch!r}\n")
    return path


def _truth(device: str | None, switch: str) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k not in ("PJRT_DEVICE", "PJRT_DYNAMIC_PLUGINS")}
    if device is not None:
        env["PJRT_DEVICE"] = device
    if switch == "off":
        env["XLA_REGISTER_INSTALLED_PLUGINS"] = "0"
    # No PJRT_DEVICE default here: which device is set (or not) is what is tried.
    return run_truth(TRUTH, base_env=env, pjrt_device=None)


def _exhibit(path: Path) -> PjrtClientTried:
    events = torch_testing.events_of(EXHIBIT, path)
    (tried,) = [e for e in events if isinstance(e, PjrtClientTried)]
    return tried


@torch_only
@pytest.mark.parametrize(
    ("device", "switch", "branch", "error"),
    [pytest.param(*c, marks=pytest.mark.full) if c[0] == "CUDA" else c for c in CASES],
)
def test_each_try_equals_a_fresh_plain_process(
    tmp_path: Path, device: str | None, switch: str, branch: str, error: str | None
) -> None:
    truth = _truth(device, switch)
    tried = _exhibit(_snippet(tmp_path, device, switch))
    # The exhibit's outcome is the plain process's, text for text.
    assert tried.ok == truth["ok"]
    assert tried.error == truth["error"]
    if not truth["ok"]:
        assert tried.error_type == truth["error_type"]
        assert error is not None and truth["error"].startswith(error)
        # A second try with CPU in the same process, as in the plain process: the C++
        # failures are kept, the TPU plugin's Python OSError is not.
        assert tried.retry_error == truth["retry_error"]
        assert (tried.retry_error is None) == (branch == "dynamic plugin")
        assert tried.retry_error in (None, truth["error"])
    else:
        assert error is None and tried.devices == truth["devices"] == ["CPU:0"]
        assert tried.device_count == 1
    # The branch the table names, read from the source, and the error is that branch's.
    assert tried.branch.name == branch
    text = branches.source_text(tried.branch.file).splitlines()
    body = "\n".join(text[tried.branch.lines[0] - 1 : tried.branch.lines[1]])
    if branch in ("plugin not registered", "unknown", "PJRT_DEVICE empty"):
        literal = {
            "plugin not registered": '"No PjRtPlugin registered for: "',
            "unknown": '"Unknown "',
            "PJRT_DEVICE empty": '"$PJRT_DEVICE is not set."',
        }[branch]
        assert literal in body and truth["error"].startswith(literal.strip('"'))
    elif branch == "TPU":
        assert '"libtpu.so"' in body  # the default library the error names
    assert tried.source == branches.source_text(tried.branch.file)


@torch_only
def test_print_branch_format(tmp_path: Path) -> None:
    path = _snippet(tmp_path, "FOO", "off")
    done = torch_testing.jaxscope_run(EXHIBIT, path, "--print", "branch")
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout) == {
        "pjrt_device": "FOO",
        "branch": "unknown",
        "lines": [163, 166],
        "env_read": ["PJRT_DYNAMIC_PLUGINS"],
        "ok": False,
        "error": "Unknown PJRT_DEVICE: 'FOO'",
    }
    assert done.stdout == json.dumps(json.loads(done.stdout)) + "\n"


@torch_only
def test_option_overrides_the_snippet_and_bad_setting_blames_its_line(tmp_path: Path) -> None:
    path = _snippet(tmp_path, "FOO", "on")
    done = torch_testing.jaxscope_run(EXHIBIT, path, "--print", "branch", "--pjrt-device", "CPU")
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout)["branch"] == "CPU"
    bad = tmp_path / "bad.py"
    bad.write_text("# a comment\npjrt_device = 3\n")
    done = torch_testing.jaxscope_run(EXHIBIT, bad, "--json")
    failed = [json.loads(line) for line in done.stdout.splitlines() if '"run_failed"' in line]
    assert failed and failed[0]["source"]["line"] == 2, done.stdout[-2000:]
    assert "pjrt_device must be a string or None" in failed[0]["message"]


def test_golden_is_the_default_example() -> None:
    golden = HERE / "golden" / "foo_unknown.events.jsonl"
    events = torch_testing.parse_events(golden.read_text())
    (tried,) = [e for e in events if isinstance(e, PjrtClientTried)]
    assert (tried.pjrt_device, tried.dynamic_plugins, tried.branch.name) == (
        "FOO",
        "on",
        "plugin not registered",
    )
    assert tried.error == MISS.format(d="FOO") + (
        "set to a correct device name. See https://github.com/pytorch/xla/blob/master/docs/"
        "source/contribute/plugins.md for more information on implementing and registering a "
        "new plugin."
    )
    assert tried.source == branches.source_text("pjrt_registry.cpp")
