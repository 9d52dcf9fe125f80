"""Stage durations from ``jax.monitoring`` (public), as :class:`StageTimed` events.

JAX reports, through ``jax.monitoring.register_event_duration_secs_listener`` callbacks
``(event, duration_secs, **kwargs)`` (emitted by ``jax._src.dispatch.LogElapsedTimeContextManager``;
names are the constants in ``jax/_src/dispatch.py``):

* ``/jax/core/compile/jaxpr_trace_duration`` (``fun_name="f"``): tracing ``f`` to a jaxpr; fired
  only for a top-level trace (not for a jit nested in another trace);
* ``/jax/core/compile/jaxpr_to_mlir_module_duration`` (``fun_name="jit(f)"``): lowering;
* ``/jax/core/compile/backend_compile_duration`` (``fun_name="jit(f)"``): XLA compilation.

Eager operations (``jnp.ones`` outside jit) trace and compile small programs of their own and
fire the same events with their own ``fun_name``: :func:`stage_timers` keeps only the events of
the function it is told about (``fun_name`` or ``jit(fun_name)``) when one is given.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import jax.monitoring

from jaxscope.protocol import Stage, StageTimed

TRACE_EVENT = "/jax/core/compile/jaxpr_trace_duration"
LOWER_EVENT = "/jax/core/compile/jaxpr_to_mlir_module_duration"
COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"
STAGE_OF_EVENT: dict[str, Stage] = {
    TRACE_EVENT: "trace",
    LOWER_EVENT: "lower",
    COMPILE_EVENT: "compile",
}


def _matches(event_fun_name: Any, fun_name: str | None) -> bool:
    return fun_name is None or event_fun_name in (fun_name, f"jit({fun_name})")


@contextlib.contextmanager
def stage_timers(
    on_timed: Callable[[StageTimed], None], fun_name: str | None = None
) -> Iterator[list[StageTimed]]:
    """Within the block, call ``on_timed`` with a :class:`StageTimed` for each trace, lower and
    compile duration JAX reports (of ``fun_name`` only, when given). Yields the events so far.
    The listener is unregistered on exit, also on exceptions."""
    seen: list[StageTimed] = []

    def listener(event: str, duration_secs: float, **kwargs: Any) -> None:
        stage = STAGE_OF_EVENT.get(event)
        name = kwargs.get("fun_name")
        if stage is None or not _matches(name, fun_name):
            return
        timed = StageTimed(
            stage=stage,
            event=event,
            duration_ms=float(duration_secs) * 1e3,
            fun_name=str(name) if name is not None else None,
        )
        seen.append(timed)
        on_timed(timed)

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        yield seen
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)
