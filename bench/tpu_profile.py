"""The two figures of issue 34 part 3 (design 0073), measured in one script run on the chip:

1. a compiled 12-layer transformer training step (``examples/real/gpt_stack.py`` at batch 64,
   one SGD step of its loss, the arguments on the device) run through jaxscope (``jaxscope run
   stations``: the Run station's steady-state ``blocked_ms``, the median of its warm calls) vs
   the same step in a plain script (``jax.jit``, the same warm-up and the same median of
   ``block_until_ready`` calls; and the median of 50), interleaved: plain, jaxscope, plain;
2. the instructions' measured times summed vs the step's measured time on the device, from
   jaxscope's own ``program_profiled`` event (``ops_ns`` / ``step_ns``), and vs the wall time.

Also re-records stations' default example on the chip (the stream CI replays). Every process
that opens the chip is started one after another (one holder at a time). Writes to OUT:
``gpt_step.py`` (the snippet), ``figures.json``, ``gpt_step.profile.json`` (run_started,
program_executed without outputs, program_profiled), ``stations.events.jsonl``.

Usage: ``python bench/tpu_profile.py OUT [--unsafe-no-sandbox] [--batch N]``. Nothing needs
an accelerator to run (on a CPU there is no ``program_profiled`` event), but only an
accelerator's figures are worth writing down.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
STEP = '''

loss = f


def f(params, tokens, targets):
    """One training step: the loss, its gradient, one SGD update of every parameter."""
    value, grads = jax.value_and_grad(loss)(params, tokens, targets)
    return jax.tree.map(lambda p, g: p - 1e-3 * g, params, grads), value


args = jax.device_put(args)  # a training loop keeps its state on the device
'''

PLAIN = """
import json, runpy, statistics, sys, time
import jax
ns = runpy.run_path(sys.argv[1])
f, args = jax.jit(ns["f"]), ns["args"]
jax.block_until_ready(f(*args))  # compile and a first run
jax.block_until_ready(f(*args))  # the warm call jaxscope's Run station makes first
def median_ms(n):
    ts = []
    for _ in range(n):
        t0 = time.perf_counter()
        jax.block_until_ready(f(*args))
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts) * 1e3
print(json.dumps({"median5_ms": median_ms(5), "median50_ms": median_ms(50),
                  "device": str(jax.devices()[0])}))
"""


def write_snippet(path: Path, batch: int) -> None:
    """The GPT stack's file at ``batch`` with a training step appended, as ``f``."""
    src = (ROOT / "examples/real/gpt_stack.py").read_text()
    head = src.partition('if __name__ == "__main__":')[0]
    path.write_text(head.replace("BATCH = 2\n", f"BATCH = {batch}\n").rstrip() + "\n" + STEP)


def plain(snippet: Path) -> dict[str, Any]:
    """The step in a plain script, in a process of its own."""
    t0 = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", PLAIN, str(snippet)], capture_output=True, text=True, check=True
    )
    out: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    out["wall_s"] = time.monotonic() - t0
    return out


def jaxscope(snippet: Path, unsafe: bool) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``jaxscope run stations SNIPPET --json``: the figures and the events worth keeping."""
    command = [sys.executable, "-m", "jaxscope.cli", "run", "stations", str(snippet), "--json"]
    command += ["--timeout", "300"] + (["--unsafe-no-sandbox"] if unsafe else [])
    t0 = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    wall = time.monotonic() - t0
    events = [json.loads(x) for x in done.stdout.splitlines() if x.strip()]
    kept: list[dict[str, Any]] = []
    for e in events:
        if e["type"] == "program_executed":
            kept.append({k: v for k, v in e.items() if k != "outputs"})
        elif e["type"] in ("run_started", "stage_timed", "program_profiled", "run_finished"):
            kept.append(e)
        elif e["type"] == "run_failed":
            kept.append(e)
            print(e.get("message", "")[:2000], file=sys.stderr)
    executed: dict[str, Any] = next((e for e in events if e["type"] == "program_executed"), {})
    profiled = next((e for e in events if e["type"] == "program_profiled"), None)
    figures: dict[str, Any] = {
        "exit": done.returncode,
        "wall_s": wall,
        "blocked_ms": executed.get("blocked_ms"),
        "repeats": executed.get("repeats"),
        "device": executed.get("device"),
    }
    if profiled:
        figures["step_ns"] = profiled["step_ns"]
        figures["ops_ns"] = profiled["ops_ns"]
        figures["instructions"] = len(profiled["instructions"])
    if done.returncode != 0:
        print(done.stderr[-3000:], file=sys.stderr)
    return figures, kept


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out", type=Path)
    parser.add_argument("--unsafe-no-sandbox", action="store_true")
    parser.add_argument("--batch", type=int, default=64)
    opts = parser.parse_args()
    opts.out.mkdir(parents=True, exist_ok=True)
    snippet = opts.out / "gpt_step.py"
    write_snippet(snippet, opts.batch)
    first = plain(snippet)
    print("plain", first, flush=True)
    scoped, kept = jaxscope(snippet, opts.unsafe_no_sandbox)
    print("jaxscope", scoped, flush=True)
    second = plain(snippet)
    print("plain", second, flush=True)
    (opts.out / "gpt_step.profile.json").write_text(json.dumps(kept))
    plain5 = statistics.mean([first["median5_ms"], second["median5_ms"]])
    figures: dict[str, Any] = {
        "snippet": f"examples/real/gpt_stack.py, BATCH={opts.batch}, one SGD step",
        "plain": [first, second],
        "jaxscope": scoped,
    }
    if scoped.get("blocked_ms"):
        figures["jaxscope_over_plain"] = scoped["blocked_ms"] / plain5
        print(
            f"figure 1: jaxscope {scoped['blocked_ms']:.3f} ms / plain {plain5:.3f} ms = "
            f"{figures['jaxscope_over_plain']:.4f}x",
            flush=True,
        )
    if scoped.get("step_ns"):
        figures["ops_over_step"] = scoped["ops_ns"] / scoped["step_ns"]
        figures["ops_over_wall"] = scoped["ops_ns"] / (scoped["blocked_ms"] * 1e6)
        print(
            f"figure 2: instructions summed {scoped['ops_ns'] / 1e3:.1f} us / step on the "
            f"device {scoped['step_ns'] / 1e3:.1f} us = {figures['ops_over_step']:.4f}; "
            f"/ wall {figures['ops_over_wall']:.4f}",
            flush=True,
        )
    (opts.out / "figures.json").write_text(json.dumps(figures, indent=1))
    # stations' default example, re-recorded with its profile (the stream CI replays)
    command = [
        sys.executable,
        str(ROOT / "scripts/record_accelerator.py"),
        "--out",
        str(opts.out),
        "--only",
        "stations",
    ]
    subprocess.run(
        command + (["--unsafe-no-sandbox"] if opts.unsafe_no_sandbox else []), check=False
    )


if __name__ == "__main__":
    main()
