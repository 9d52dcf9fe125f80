"""The size of each program JAX lowers in this process, told before XLA compiles it.

A run's limits grow with the size of its program (``jaxscope.settings.scaled_limit``), which the
worker learns from the jaxprs an exhibit shows. An exhibit that compiles a program before it
shows one (caches: ``jit_call_observed`` carries the jaxpr after the call; the compile of the
20,000-eqn loop alone takes seconds) would otherwise compile under the snippet limit. Every jit
lowering goes through ``pxla.lower_sharding_computation`` (``pjit._pjit_lower`` looks it up as a
module attribute at call time, once per cache miss: eager primitives compile through it too),
whose first argument is the ``ClosedJaxpr`` about to be lowered: :func:`install` wraps it once
per worker, and :func:`reporting_sizes` passes each lowered jaxpr's eqn count to a listener
while a run lasts: its eqns and those of the jaxprs nested in them
(``trace_stack.count_eqns``), since a model under one ``jit`` is one eqn at the top.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from typing import Any

from jax._src import core
from jax._src.interpreters import pxla

from jaxscope.internals.trace_stack import count_eqns

_listener: list[Callable[[int], None]] = []
_installed: list[Callable[..., Any]] = []


def import_lowering() -> None:
    """Import what JAX's first lowering in a process imports lazily (jaxlib's MHLO dialect and
    its bindings, ~16 ms CPU): a warm template (``sandbox/zygote.py``) calls this once, and its
    forks find them imported (design 0074). Starts no thread and no backend."""
    import jaxlib.mlir.dialects.builtin
    import jaxlib.mlir.dialects.mhlo  # noqa: F401


def install() -> None:
    """Wrap ``pxla.lower_sharding_computation`` (once per process)."""
    if _installed:
        return
    original = pxla.lower_sharding_computation

    @functools.wraps(original)
    def lower_sharding_computation(closed_jaxpr: Any, *args: Any, **kwargs: Any) -> Any:
        if _listener:
            jaxpr = getattr(closed_jaxpr, "jaxpr", None)
            if isinstance(jaxpr, core.Jaxpr):
                _listener[-1](count_eqns(jaxpr))
        return original(closed_jaxpr, *args, **kwargs)

    _installed.append(original)
    pxla.lower_sharding_computation = lower_sharding_computation


def installed() -> bool:
    """Whether :func:`install` wrapped JAX's lowering entry point in this process."""
    return bool(_installed) and pxla.lower_sharding_computation is not _installed[0]


@contextlib.contextmanager
def reporting_sizes(listener: Callable[[int], None]) -> Iterator[None]:
    """Within the block, call ``listener(eqns)`` before each jit lowering (a cache miss), with
    the eqn count of the jaxpr being lowered, nested jaxprs included
    (``trace_stack.count_eqns``)."""
    _listener.append(listener)
    try:
        yield
    finally:
        _listener.remove(listener)


def note(eqns: int) -> None:
    """Tell the run's listener (if any, see :func:`reporting_sizes`) of a program of ``eqns``
    top-level eqns that a probe has traced and will work on without lowering it first: the
    grad jaxpr the transpose exhibit traces before its eager attempt, the JVP program
    partial_eval splits. Its limits then grow before that work, not after the first event that
    shows the program (20,000 eqns traced under a snippet's limit ran past it on a loaded
    machine)."""
    if _listener:
        _listener[-1](eqns)
