"""Test support for the PyTorch/XLA track (lazy_tensor, xla_cache, seam, torch_spmd,
dynamo_bridge, pjrt_registry): the two processes each of their tests compares.

- the **truth**: a plain script in a fresh process of the torch venv (``torch_python()``,
  ``PJRT_DEVICE=CPU`` unless the test's ``env`` says otherwise), which prints one JSON object on
  its last stdout line: what torch_xla itself says, with nothing of jaxscope in between;
- the **exhibit**: ``jaxscope run EXHIBIT FILE ...`` (the CLI in this venv), its ``--json``
  lines parsed back into events.

A fresh process for each: a PJRT client is per process and some of its failures are sticky.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from jaxscope.events import EVENT_ADAPTER
from jaxscope.protocol import EventBase
from jaxscope.sandbox.kinds import torch_python

from testkit import run_cli

# A torch import and a PJRT client start take seconds; a loaded machine, minutes.
TIMEOUT_S = 240


def run_truth(
    script: str,
    *argv: str | Path,
    env: Mapping[str, str] | None = None,
    base_env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    pjrt_device: str | None = "CPU",
) -> dict[str, Any]:
    """Run ``script`` (Python source) with ``argv`` in a fresh torch-venv process and return the
    JSON object its last stdout line prints. The environment is ``base_env`` (default: this
    process's) with ``PJRT_DEVICE=pjrt_device`` (None: left as ``base_env`` has it) and then
    ``env`` over it. Fails the test, with the process's stderr, when it exits non-zero."""
    device = {} if pjrt_device is None else {"PJRT_DEVICE": pjrt_device}
    done = subprocess.run(
        [str(torch_python()), "-c", script, *map(str, argv)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        env={**(os.environ if base_env is None else base_env), **device, **(env or {})},
        cwd=cwd,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def jaxscope_run(exhibit: str, path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """``jaxscope run exhibit path *extra``, its output captured (any exit status). The CLI's
    ``main`` runs in this process (``testkit.run_cli``): its torch worker is a fork of this
    process's warm torch template (~0.4 s a run) where a ``jaxscope`` process of its own would
    import torch_xla into a template first (~7 s a run; design 0058)."""
    return run_cli("run", exhibit, str(path), *extra)


def parse_events(text: str) -> list[EventBase]:
    """The events of a ``--json`` output, one per non-blank line."""
    return [EVENT_ADAPTER.validate_json(line) for line in text.splitlines() if line.strip()]


def events_of(exhibit: str, path: Path, ok: tuple[int, ...] = (0,)) -> list[EventBase]:
    """The events of ``jaxscope run exhibit path --json``; fails the test, with its stderr,
    when the exit status is not in ``ok`` (3: the run failed, its events still printed)."""
    done = jaxscope_run(exhibit, path, "--json")
    assert done.returncode in ok, done.stderr[-2000:]
    return parse_events(done.stdout)
