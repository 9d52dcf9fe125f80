"""Regenerate ``exhibits/recompile_hunt/golden/<example>.json`` from plain JAX (never from the
probe): JAX's own compile log and explain-cache-miss messages, per call of the snippet's ``step``.

For each ``exhibits/recompile_hunt/examples/<name>.py``, in a fresh process: execute it under the
file name ``<snippet>``, rebind ``step`` to a plain counting wrapper, run ``f(*args)`` with
``jax.log_compiles(True)`` and ``jax.explain_cache_misses(True)``, and record per top-level call
of ``step`` the ``Finished XLA compilation of <fun_name>`` lines (logger ``jax._src.dispatch``)
and the ``TRACING CACHE MISS`` messages (logger ``jax._src.interpreters.partial_eval``; ids
normalised to ``id=<N>``). A snippet without ``step`` records totals only.
Run: ``.venv/bin/python exhibits/recompile_hunt/golden/regen.py``.
"""

from __future__ import annotations

import json
import logging
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
EXAMPLES = HERE.parent / "examples"
COMPILED = re.compile(r"^Finished XLA compilation of (.+) in [0-9.]+ sec$")
ID = re.compile(r"id=\d+")


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.records: list[tuple[str, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append((record.name, record.getMessage()))


def plain_run(source: str, steps: int | None = None) -> dict[str, Any]:
    """Run a snippet with plain JAX (in this process, after ``jax.clear_caches()``): per call of
    ``step``, the functions XLA compiled (from JAX's compile log) and JAX's explain messages."""
    import jax

    ns: dict[str, Any] = {"__name__": "snippet"}
    exec(compile(source, "<snippet>", "exec"), ns)
    args = tuple(ns["args"])
    if steps is not None:
        args = (steps,)
    jax.clear_caches()  # type: ignore[no-untyped-call]
    handler = _Lines()
    names = ("jax._src.dispatch", "jax._src.interpreters.partial_eval")
    loggers = [logging.getLogger(n) for n in names]
    saved = [(lg.level, lg.propagate) for lg in loggers]
    for lg in loggers:
        lg.addHandler(handler)
        lg.propagate = False
        lg.setLevel(logging.WARNING)
    per_step: list[dict[str, Any]] = []
    depth = [0]
    if "step" in ns:
        real = ns["step"]

        def step(*a: Any, **k: Any) -> Any:
            if depth[0]:
                return real(*a, **k)
            depth[0] += 1
            start = len(handler.records)
            try:
                return jax.block_until_ready(real(*a, **k))  # type: ignore[no-untyped-call]
            finally:
                depth[0] -= 1
                new = handler.records[start:]
                per_step.append(
                    {
                        "compiled": [
                            m.group(1)
                            for n, msg in new
                            if n == names[0] and (m := COMPILED.match(msg))
                        ],
                        "explain": [ID.sub("id=<N>", msg) for n, msg in new if n == names[1]],
                    }
                )

        ns["step"] = step
    try:
        with jax.log_compiles(True), jax.explain_cache_misses(True):
            ns["f"](*args)
    finally:
        for lg, (level, propagate) in zip(loggers, saved, strict=True):
            lg.removeHandler(handler)
            lg.setLevel(level)
            lg.propagate = propagate
    compiled_all = [
        m.group(1) for n, msg in handler.records if n == names[0] and (m := COMPILED.match(msg))
    ]
    return {
        "steps": per_step,
        "compiled_steps": [i for i, s in enumerate(per_step) if s["compiled"]],
        "compiled": compiled_all,
        "explain": [ID.sub("id=<N>", msg) for n, msg in handler.records if n == names[1]],
    }


def main() -> None:
    if len(sys.argv) == 2:  # the child: one example, in a fresh process
        print(json.dumps(plain_run(Path(sys.argv[1]).read_text()), indent=1, sort_keys=True))
        return
    for path in sorted(EXAMPLES.glob("*.py")):
        out = subprocess.run(
            [sys.executable, __file__, str(path)], check=True, capture_output=True, text=True
        ).stdout
        (HERE / f"{path.stem}.json").write_text(out)
        print("wrote", path.stem)


if __name__ == "__main__":
    main()
