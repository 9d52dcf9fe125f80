"""Regenerate ``exhibits/config/golden/options.json`` from plain JAX (never from the probe).

Records, for the config exhibit's default example, whether a ``jax.jit(f)`` call traces ``f``
again inside each option context of the probe's experiment, observed through ``jax.monitoring``
(the trace-duration event JAX fires when it traces), plus the jaxlib version.
Run: ``.venv/bin/python exhibits/config/golden/regen.py``.
"""

from __future__ import annotations

import importlib.metadata
import json
from pathlib import Path
from typing import Any

import jax
import jax.monitoring

HERE = Path(__file__).resolve().parent
EXAMPLE = HERE.parent / "examples" / "options.py"
TRACE_EVENT = "/jax/core/compile/jaxpr_trace_duration"
# The probe's experiment (exhibits/config/probe.py FLIPS), as public context managers.
FLIPS: tuple[tuple[str, Any], ...] = (
    ("jax_enable_x64", True),
    ("jax_default_matmul_precision", "highest"),
    ("jax_numpy_rank_promotion", "warn"),
    ("jax_debug_nans", True),
    ("jax_log_compiles", True),
)


def retraced() -> dict[str, bool]:
    namespace: dict[str, Any] = {"__name__": "snippet"}
    exec(compile(EXAMPLE.read_text(), "<snippet>", "exec"), namespace)
    f, args = namespace["f"], tuple(namespace["args"])
    fired: list[str] = []

    def on(event: str, duration_secs: float, **kwargs: str | int) -> None:
        if event == TRACE_EVENT and kwargs.get("fun_name") == "f":
            fired.append(event)

    jitted = jax.jit(f)
    jax.monitoring.register_event_duration_secs_listener(on)
    out: dict[str, bool] = {}
    try:
        jitted(*args).block_until_ready()
        for option, value in FLIPS:
            before = len(fired)
            with getattr(jax, option.removeprefix("jax_"))(value):
                jitted(*args).block_until_ready()
            out[option] = len(fired) > before
    finally:
        jax.monitoring.unregister_event_duration_listener(on)
    return out


def main() -> None:
    record = {"jaxlib": importlib.metadata.version("jaxlib"), "retraced": retraced()}
    out = HERE / "options.json"
    out.write_text(json.dumps(record, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
