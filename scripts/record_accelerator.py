"""Record every JAX exhibit's default example on this machine's accelerator (issue 34, part 5).

Run by ``scripts/on-accelerator.sh`` on a machine with an accelerator (a TPU VM, a GPU host):
for each JAX exhibit of the registry, ``jaxscope run ID DEFAULT_EXAMPLE --json`` in a fresh
process, each run's NDJSON event stream written to ``OUT/<id>.events.jsonl``, and one summary
``OUT/summary.json``: per exhibit the terminal event's type and kind, the backend and devices
the worker reported (its ``run_started``), the exit status and the wall seconds. The streams are
the recordings that CI replays (``backend/tests/test_accelerator_recordings.py``); nothing here
needs an accelerator to run, but only an accelerator's recording is worth committing.

Usage: ``python scripts/record_accelerator.py --out DIR [--only ID ...] [--unsafe-no-sandbox]
[--timeout S]``. ``--unsafe-no-sandbox`` where the machine cannot make namespaces (the lent TPU
host runs under gVisor: design 0056).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from exhibits.registry import EXHIBITS


def _summary(lines: list[str]) -> dict[str, Any]:
    """What a recorded stream says: its terminal event and the worker's device."""
    events = [json.loads(line) for line in lines if line.strip()]
    terminal = next(
        (e for e in reversed(events) if e.get("type") in ("run_finished", "run_failed")), None
    )
    started = next((e for e in events if e.get("type") == "run_started"), {})
    return {
        "events": len(events),
        "terminal": terminal.get("type") if terminal else None,
        "kind": terminal.get("kind") if terminal else None,
        "message": (terminal.get("message") or "")[:300] if terminal else None,
        "backend": started.get("backend"),
        "devices": started.get("devices"),
    }


def record(exhibit_id: str, out: Path, unsafe: bool, timeout_s: float) -> dict[str, Any]:
    """Run one exhibit's default example through the CLI; write its stream; summarise it."""
    exhibit = EXHIBITS[exhibit_id]
    command = [sys.executable, "-m", "jaxscope.cli", "run", exhibit_id, exhibit.default_example]
    command += ["--json", "--timeout", str(int(timeout_s))]
    if unsafe:
        command.append("--unsafe-no-sandbox")
    t0 = time.monotonic()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s + 60)
        status, stdout, stderr = done.returncode, done.stdout, done.stderr
    except subprocess.TimeoutExpired as exc:
        status, stdout, stderr = None, str(exc.stdout or ""), str(exc.stderr or "")
    wall = time.monotonic() - t0
    (out / f"{exhibit_id}.events.jsonl").write_text(stdout)
    lines = stdout.splitlines()
    try:
        summary = _summary(lines)
    except ValueError:
        summary = {"events": None, "terminal": None}
    return {
        "exhibit": exhibit_id,
        "example": exhibit.default_example,
        "status": status,
        "wall_s": round(wall, 2),
        **summary,
        "stderr_tail": stderr[-600:],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--only", nargs="*", default=None, help="exhibit ids (default: all JAX)")
    parser.add_argument("--unsafe-no-sandbox", action="store_true")
    parser.add_argument("--timeout", type=float, default=120.0, help="each run's wall limit (s)")
    ns = parser.parse_args()
    ns.out.mkdir(parents=True, exist_ok=True)
    ids = ns.only or [i for i, e in EXHIBITS.items() if e.worker == "jax"]
    results = []
    for exhibit_id in ids:
        result = record(exhibit_id, ns.out, ns.unsafe_no_sandbox, ns.timeout)
        results.append(result)
        print(
            f"{exhibit_id:16} {result['terminal']!s:13} {result['kind']!s:16} "
            f"{result['backend']!s:6} {result['wall_s']:6.1f} s",
            flush=True,
        )
    (ns.out / "summary.json").write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
