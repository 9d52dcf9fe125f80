"""Pallas kernels on a TPU chip: compiled through Mosaic vs interpret mode vs the reference
(issue 34 part 3, design 0073). Run on a machine with a TPU, from the repository root.

For each snippet of ``recordings/tpu-v5e/pallas_chip/`` (each sets ``INTERPRET = False``): ``f``
compiled through Mosaic and run on the chip, the same ``f`` with ``INTERPRET = True`` (Pallas's
interpreter, JAX's own ops on the chip), the snippet's ``reference`` on the chip, and numpy in
float64 on the host; writes ``OUT/pallas_chip.json``: per snippet the max abs difference of
every pair, the outputs' values where they are small, and the error where one raised. Then
``jaxscope run pallas SNIPPET --json`` per snippet into ``OUT/<name>.events.jsonl`` (the exhibit's
own stream, the kernel compiled on the chip), and the default example with ``--target``
unset for comparison is the one already in ``recordings/tpu-v5e/pallas.events.jsonl``.

Usage: ``python bench/pallas_chip.py OUT [--unsafe-no-sandbox]``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

SNIPPETS = Path(__file__).resolve().parent.parent / "recordings" / "tpu-v5e" / "pallas_chip"
HOST_REFERENCE: dict[str, Callable[..., Any]] = {
    "matmul_tiled": lambda x, y: x.astype(np.float64) @ y.astype(np.float64),
    "race": lambda x: x.astype(np.float64) * 2,
}


def _load(path: Path, interpret: bool) -> dict[str, Any]:
    ns: dict[str, Any] = {"__name__": path.stem}
    exec(compile(path.read_text(), str(path), "exec"), ns)
    ns["INTERPRET"] = interpret  # f reads the global when it is called
    return ns


def _diff(a: Any, b: Any) -> float | None:
    if a is None or b is None:
        return None
    a64, b64 = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if a64.shape != b64.shape:
        return None
    return float(np.nanmax(np.abs(a64 - b64))) if a64.size else 0.0


def _run(fn: Any, args: Any) -> tuple[Any, str | None, float]:
    start = time.perf_counter()
    try:
        out = np.asarray(fn(*args))  # np.asarray waits for the chip
        return out, None, time.perf_counter() - start
    except Exception as exc:  # the chip's words
        return None, f"{type(exc).__name__}: {exc}"[:2000], time.perf_counter() - start


def measure(path: Path) -> dict[str, Any]:
    import jax

    compiled, interp = _load(path, False), _load(path, True)
    args = compiled["args"]
    outs: dict[str, Any] = {}
    errors: dict[str, str] = {}
    seconds: dict[str, float] = {}
    for name, fn in (("mosaic", compiled["f"]), ("interpret", interp["f"])):
        out, err, s = _run(fn, args)
        outs[name], seconds[name] = out, round(s, 4)
        if err:
            errors[name] = err
    if "reference" in compiled:
        outs["reference"], err, _ = _run(compiled["reference"], args)
        if err:
            errors["reference"] = err
    host = HOST_REFERENCE.get(path.stem)
    if host is not None:
        outs["host_float64"] = host(*[np.asarray(a) for a in args])
    names = list(outs)
    diffs = {
        f"{a}-{b}": _diff(outs[a], outs[b]) for i, a in enumerate(names) for b in names[i + 1 :]
    }
    small = {k: np.asarray(v).tolist() for k, v in outs.items() if v is not None and v.size <= 4096}
    nan = {
        k: int(np.isnan(np.asarray(v, np.float64)).sum()) for k, v in outs.items() if v is not None
    }
    return {
        "snippet": path.name,
        "device": str(jax.devices()[0]),
        "device_kind": jax.devices()[0].device_kind,
        "errors": errors,
        "max_abs_diff": diffs,
        "nan_count": nan,
        "first_call_s": seconds,
        "values": small,
    }


def figures(out: Path) -> None:
    """The measurements, in a process of their own (it holds the chip until it exits)."""
    import jax

    print("jax", jax.__version__, jax.devices(), flush=True)
    found = {p.stem: measure(p) for p in sorted(SNIPPETS.glob("*.py"))}
    for name, fig in found.items():
        print(name, fig["errors"], fig["max_abs_diff"], fig["nan_count"], flush=True)
    (out / "pallas_chip.json").write_text(json.dumps(found, indent=1) + "\n")


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    if "--figures" in sys.argv:
        figures(out)
        return
    unsafe = "--unsafe-no-sandbox" in sys.argv
    # one holder of the chip at a time: the figures' process exits before each exhibit's worker
    subprocess.run([sys.executable, __file__, str(out), "--figures"], timeout=200, check=False)
    for path in sorted(SNIPPETS.glob("*.py")):
        command = [sys.executable, "-m", "jaxscope.cli", "run", "pallas", str(path), "--json"]
        if unsafe:
            command.append("--unsafe-no-sandbox")
        start = time.perf_counter()
        try:
            result = subprocess.run(
                command, capture_output=True, text=True, timeout=100, check=False
            )
        except subprocess.TimeoutExpired:
            print(path.stem, "timed out", flush=True)
            continue
        (out / f"{path.stem}.events.jsonl").write_text(result.stdout)
        print(
            path.stem,
            "rc",
            result.returncode,
            round(time.perf_counter() - start, 1),
            "s",
            result.stderr[-400:],
            flush=True,
        )


if __name__ == "__main__":
    main()
