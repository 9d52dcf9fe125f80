"""Watch one call of a jitted function: did it trace, what did JAX say about the cache miss,
what did the user's code print, and how big is the jit cache afterwards.

Sources:

* ``traced``: JAX reports ``/jax/core/compile/jaxpr_trace_duration`` through ``jax.monitoring``
  (``register_event_duration_secs_listener``) when a ``jit`` call misses its parameter cache
  (``pjit._infer_params_cached``), with ``fun_name`` the function's name (``pjit.py``); the timed
  step may still hit the tracing cache (``pe.trace_to_jaxpr``) and run nothing of ``f``. So
  ``traced`` is true only when the event fired AND JAX opened a jaxpr frame for ``fun_name``
  (``recording.watching_traces``): ``f``'s Python body really ran under tracers. A call that hits
  the C++ fast path or the Python-level caches traces nothing and reports nothing.
* ``explanation``: with ``jax.explain_cache_misses(True)`` JAX logs, at WARNING on the logger
  ``jax._src.interpreters.partial_eval`` (``pe.explain``), a ``TRACING CACHE MISS at ...``
  message for each user function it traces anew; we collect those messages during the call.
  ``pe.explain`` remembers the call sites it has reported in the module-level set
  ``pe.callsites_with_tracing_cache_miss`` to add "maybe the function is being re-defined
  repeatedly"; :func:`fresh_caches` empties it with the other caches, so that a previous run in
  the same worker does not colour this run's explanations.
* ``cache_size``: ``jitted._cache_size()``, the number of entries in the jitted function's C++
  cache (``jaxlib`` ``PjitFunction``).
* ``printed``: text written to ``sys.stdout`` during the call, cut to what one event may carry
  (``jaxscope.user_text.cut_printed``; Python ``print`` while tracing,
  ``jax.debug.print`` while running), captured by a tee that also passes it on to the stdout that
  was in place (the runner's, which reports it as ``stdout_printed``). The call waits for
  ``jax.block_until_ready`` and ``jax.effects_barrier()`` so that ``jax.debug.print``'s host
  callbacks have printed before the tee is removed.
"""

from __future__ import annotations

import contextlib
import io
import logging
import re
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, TextIO

import jax
import jax.monitoring
from jax._src import pjit, source_info_util
from jax._src.interpreters import partial_eval as pe

from jaxscope.internals.monitoring import TRACE_EVENT
from jaxscope.internals.recording import watching_traces
from jaxscope.snippet_model import SNIPPET_FILENAME
from jaxscope.user_text import EVENT_PRINT_BYTES, cut_printed

source_info_util.register_exclusion(__file__)

EXPLAIN_LOGGER = "jax._src.interpreters.partial_eval"


def fresh_caches() -> None:
    """Empty JAX's tracing caches, so that the next ``jit`` call of a function that
    ``make_jaxpr`` has just traced traces it again, as a first call in a fresh process does.

    ``make_jaxpr(f)`` runs ``jit(f).trace``, which fills ``pjit._infer_params_cached`` and
    ``pe.trace_to_jaxpr`` (both ``weakref_lru_cache``, keyed by the function); a later
    ``jax.jit(f)(...)`` would hit them and trace nothing. We clear these two only (not
    ``jax.clear_caches()``, which would also throw away every compiled executable, so that eager
    ``jnp``/``jax.random`` calls of the next run compile again). Also forgets the call sites
    ``pe.explain`` has reported cache misses at.
    """
    pjit._infer_params_cached.cache_clear()
    pe.trace_to_jaxpr.cache_clear()
    pe.callsites_with_tracing_cache_miss.clear()


def cache_size(jitted: Any) -> int:
    """``jitted._cache_size()``: entries in the jitted function's C++ cache."""
    return int(jitted._cache_size())


# Streams that were sys.stdout for a while (see ``observe_call``'s ``finally``).
SWAPPED_OUT_STREAMS: list[object] = []


class _Tee:
    """Write to a buffer and to the stream that was ``sys.stdout`` before. A plain object (no
    IOBase finaliser that closes it): a user thread may still be inside ``print`` on it after
    the probe put ``sys.stdout`` back (hostile suite, ``test_a_thread_that_keeps_printing...``)."""

    def __init__(self, passthrough: TextIO) -> None:
        self.passthrough = passthrough
        self.buffer_ = io.StringIO()
        self._kept = 0
        self._lock = threading.Lock()

    def writable(self) -> bool:
        return True

    def write(self, s: str) -> int:
        with self._lock:
            # Keep no more than one event can carry (cut_printed cuts it; a character is at
            # least one byte): a print loop's whole output is not held in memory.
            room = EVENT_PRINT_BYTES + 1 - self._kept
            if room > 0:
                kept = s[:room]
                self.buffer_.write(kept)
                self._kept += len(kept)
        self.passthrough.write(s)
        return len(s)

    def flush(self) -> None:
        self.passthrough.flush()

    @property
    def encoding(self) -> str:
        return getattr(self.passthrough, "encoding", "utf-8")

    def isatty(self) -> bool:
        return False


class _ListHandler(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


_MISS_AT = re.compile(r"^TRACING CACHE MISS at ([^\n]*?):?\n")


def tidy_explanation(messages: list[str]) -> str:
    """JAX's cache-miss messages for one call, as the user should read them.

    JAX names the call site of the jitted call (``TRACING CACHE MISS at <file>:<line>``); that
    site is jaxscope's probe, not the user's code, so a site outside the snippet is dropped
    (``TRACING CACHE MISS:``). JAX logs one message per cache that missed (the jit call and its
    trace); after that, identical messages are kept once.
    """
    tidy: list[str] = []
    for message in messages:
        m = _MISS_AT.match(message)
        if m and SNIPPET_FILENAME not in m.group(1):
            message = "TRACING CACHE MISS:\n" + message[m.end() :]
        if message not in tidy:
            tidy.append(message)
    return "\n".join(tidy)


@dataclass
class CallObservation:
    """What one observed call did (filled in when the ``observe_call`` block exits)."""

    traced: bool = False
    trace_events: int = 0
    traced_functions: list[str] = field(default_factory=list)
    printed: str = ""
    explanation: str = ""
    messages: list[str] = field(default_factory=list)


@contextlib.contextmanager
def observe_call(fun_name: str) -> Iterator[CallObservation]:
    """Observe the block (one call of ``jax.jit(f)``, with ``f.__name__ == fun_name``).

    The caller should block on the outputs inside the block (``jax.block_until_ready``);
    on exit we also run ``jax.effects_barrier()``. ``traced`` is true when JAX reported a trace
    of ``fun_name`` and opened a jaxpr frame for it; ``explanation`` joins JAX's cache-miss
    messages (empty on a hit).
    """
    obs = CallObservation()

    def on_duration(event: str, duration_secs: float, **kwargs: Any) -> None:
        del duration_secs
        if event == TRACE_EVENT and kwargs.get("fun_name") == fun_name:
            obs.trace_events += 1

    handler = _ListHandler()
    logger = logging.getLogger(EXPLAIN_LOGGER)
    tee = _Tee(sys.stdout)
    jax.monitoring.register_event_duration_secs_listener(on_duration)
    # Capture JAX's messages here only (not also on stderr through the root logger), and make
    # sure WARNING passes whatever level the process configured.
    saved_logger = (logger.level, logger.propagate)
    logger.addHandler(handler)
    logger.propagate = False
    if logger.getEffectiveLevel() > logging.WARNING:
        logger.setLevel(logging.WARNING)
    previous_stdout = sys.stdout
    sys.stdout = tee
    try:
        with jax.explain_cache_misses(True), watching_traces(obs.traced_functions):
            yield obs
            jax.effects_barrier()
    finally:
        sys.stdout = previous_stdout
        # CPython 3.11's print() holds sys.stdout as a borrowed reference: a user thread still
        # inside print() on the tee would write into freed memory (the worker crashed with
        # SIGSEGV). Keep it alive; a worker serves one run, so this never grows.
        SWAPPED_OUT_STREAMS.append(tee)
        logger.removeHandler(handler)
        logger.setLevel(saved_logger[0])
        logger.propagate = saved_logger[1]
        jax.monitoring.unregister_event_duration_listener(on_duration)
        obs.traced = obs.trace_events > 0 and fun_name in obs.traced_functions
        obs.printed = cut_printed(tee.buffer_.getvalue())
        obs.messages = list(handler.messages)
        obs.explanation = tidy_explanation(handler.messages)
