"""Stream the eqns JAX records while it traces the user's function, as they are recorded.

Source: ``jax._src.interpreters.partial_eval.JaxprStackFrame``. Each trace to a jaxpr creates
one ``JaxprStackFrame``; ``JaxprStackFrame.add_eqn(eqn: pe.TracingEqn)`` appends each eqn as the
tracer records it (``TracingEqn.in_tracers``/``.outvars``/``.primitive``/``.params``/
``.source_info``). ``jnp`` helpers are ``jit(inline=True)`` functions: each is traced in a frame
of its own (``debug_info.func_src_info`` like ``sin at .../ufuncs.py:584``) and then inlined, eqn
by eqn, into the enclosing frame.

We keep the eqns of the OUTERMOST frame only: the first ``JaxprStackFrame`` created while
recording is the one of the traced function itself (``make_jaxpr``/``jit(...).trace`` creates it
before calling ``f``), so its eqns are exactly the top-level eqns of the final jaxpr, in order
(``make_jaxpr`` and a top-level ``jit`` trace run with ``auto_dce=False``, so nothing recorded is
dropped; see the contract tests). Nested frames (jnp helpers, inner ``jax.jit`` functions, scan
bodies) are not streamed: they appear as the inner jaxprs of their eqn.

While recording, ``JaxprStackFrame.__init__`` and ``.add_eqn`` are patched; the originals are
restored on exit, also when tracing raises.
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from jax._src import core, source_info_util
from jax._src.interpreters import partial_eval as pe

from jaxscope.internals.interpret import Env, EqnHook, bind_eqn
from jaxscope.internals.patching import patched
from jaxscope.internals.views import _param_text, aval_view, snippet_source
from jaxscope.protocol import AvalView, SourceLoc

source_info_util.register_exclusion(__file__)

# Re-entrant: recording_eqns and watching_traces may nest (each restores what it replaced).
# One lock for every patch of JaxprStackFrame (recording here, jvp_steps counting eqns).
PATCH_LOCK = threading.RLock()


# The text of a param holding one jaxpr (``pjit``'s ``jaxpr=``, ``custom_jvp_call``'s
# ``call_jaxpr=``), printed alone with a fresh context, per jaxpr object while it lives: it
# depends on nothing else then. A ``jnp`` helper's inner jaxpr is one object for as long as JAX
# caches the helper's trace, so a trace that hits that cache (every fork of a template that
# traced the shipped examples, ``warm_traces``) finds its text here (design 0080).
_ONE_JAXPR_TEXTS: weakref.WeakKeyDictionary[core.Jaxpr, dict[str, str]] = (
    weakref.WeakKeyDictionary()
)


def _prints_jaxpr(value: Any) -> bool:
    # What ``core.pp_kv_pair`` prints with the context: a jaxpr, or a tuple of them.
    if isinstance(value, (core.Jaxpr, core.ClosedJaxpr)):
        return True
    return type(value) is tuple and any(
        isinstance(j, (core.Jaxpr, core.ClosedJaxpr)) for j in value
    )


def _param_texts(params: dict[str, Any]) -> dict[str, str]:
    """Param values printed with ``core.pp_kv_pair`` (fresh names: the final jaxpr's names are
    not known yet while tracing; the staged jaxpr's ``EqnView.params`` has the final ones)."""
    ctx = core.JaxprPpContext()
    settings = core.JaxprPpSettings()
    holding = [k for k in params if _prints_jaxpr(params[k])]
    one = holding[0] if len(holding) == 1 else None
    texts: dict[str, str] = {}
    for k in sorted(params):
        value = params[k]
        if k == one and isinstance(value, (core.Jaxpr, core.ClosedJaxpr)):
            jaxpr = value.jaxpr if isinstance(value, core.ClosedJaxpr) else value
            by_key = _ONE_JAXPR_TEXTS.setdefault(jaxpr, {})
            text = by_key.get(k)
            if text is None:
                text = by_key[k] = core.pp_kv_pair(k, value, ctx, settings).format()[len(k) + 1 :]
            texts[k] = text
        elif k in holding:
            texts[k] = core.pp_kv_pair(k, value, ctx, settings).format()[len(k) + 1 :]
        else:  # printed without the context (``views._param_text`` keeps the common ones)
            texts[k] = _param_text(k, value, ctx)
    return texts


@dataclass(frozen=True)
class RecordedEqn:
    """One eqn as JAX recorded it in the traced function's own frame: ``index`` its place
    there (its index in the staged jaxpr), its primitive, its params printed, the avals in and
    out, the snippet line that made it. The tracing exhibit's ``EqnRecorded`` event is made of
    it by the probes (design 0059: the walker returns records, the exhibit builds its events)."""

    index: int
    primitive: str
    params: dict[str, str]
    in_avals: list[AvalView]
    out_avals: list[AvalView]
    source: SourceLoc | None


def recorded_eqn(index: int, eqn: Any) -> RecordedEqn:
    """The :class:`RecordedEqn` of a ``pe.TracingEqn`` (or a ``core.JaxprEqn``)."""
    in_avals = [aval_view(t.aval) for t in eqn.invars]
    return RecordedEqn(
        index=index,
        primitive=eqn.primitive.name,
        params=_param_texts(eqn.params),
        in_avals=in_avals,
        out_avals=[aval_view(v.aval) for v in eqn.outvars],
        source=snippet_source(eqn.source_info.traceback),
    )


@contextlib.contextmanager
def recording_eqns(on_eqn: Callable[[RecordedEqn], None]) -> Iterator[list[RecordedEqn]]:
    """Within the block, call ``on_eqn`` for each eqn recorded in the outermost traced frame,
    as JAX records it. Yields the list of records sent so far (for tests and the caller).

    Exceptions raised by ``on_eqn`` propagate out of JAX's tracing (and out of the block).
    """
    sent: list[RecordedEqn] = []
    frames: list[Any] = []  # frames created while recording; frames[0] is the outermost
    orig_init = pe.JaxprStackFrame.__init__
    orig_add_eqn = pe.JaxprStackFrame.add_eqn

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        orig_init(self, *args, **kwargs)
        if not frames:
            frames.append(self)

    def add_eqn(self: Any, eqn: Any) -> None:
        orig_add_eqn(self, eqn)
        if frames and self is frames[0]:
            record = recorded_eqn(len(sent), eqn)
            sent.append(record)
            on_eqn(record)

    with PATCH_LOCK, patched(pe.JaxprStackFrame, __init__=__init__, add_eqn=add_eqn):
        yield sent


@contextlib.contextmanager
def watching_traces(names: list[str] | None = None) -> Iterator[list[str]]:
    """Within the block, collect the ``debug_info.func_name`` of every jaxpr frame JAX opens
    (``pe.JaxprStackFrame.__init__``): the functions whose Python bodies are traced, ``jnp``
    helpers and nested ``jit`` functions included. A cache hit opens no frame. Appends to
    ``names`` when given (so the caller holds the list even if the block raises)."""
    if names is None:
        names = []
    orig_init = pe.JaxprStackFrame.__init__

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        orig_init(self, *args, **kwargs)
        info = self.debug_info
        names.append(str(info.func_name) if info is not None else "")

    with PATCH_LOCK, patched(pe.JaxprStackFrame, __init__=__init__):
        yield names


@contextlib.contextmanager
def counting_outer_eqns(origin: list[int | None], current: list[int | None]) -> Iterator[None]:
    """While inside: for each eqn added to the outermost ``pe.JaxprStackFrame`` created in the
    block, append ``current[0]`` (the eqn being interpreted, or ``None``) to ``origin``: which
    interpreted eqn emitted each eqn of the result (``jvp_steps``, ``batching_steps``)."""
    frames: list[Any] = []
    orig_init = pe.JaxprStackFrame.__init__
    orig_add_eqn = pe.JaxprStackFrame.add_eqn

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        orig_init(self, *args, **kwargs)
        if not frames:
            frames.append(self)

    def add_eqn(self: Any, eqn: Any) -> None:
        orig_add_eqn(self, eqn)
        if frames and self is frames[0]:
            origin.append(current[0])

    with PATCH_LOCK, patched(pe.JaxprStackFrame, __init__=__init__, add_eqn=add_eqn):
        yield


class CountingHook(EqnHook):
    """The :func:`~jaxscope.internals.interpret.interpret` hook of a walk run inside
    :func:`counting_outer_eqns`: each eqn bound as ``core.eval_jaxpr`` binds it, with
    ``current[0]`` naming it meanwhile, so that the eqns its rule emits are attributed to it
    (``jvp_steps`` and ``batching_steps`` record around it in ``before``/``after``)."""

    def __init__(self, current: list[int | None]) -> None:
        self.current = current

    def evaluate(self, index: int, eqn: Any, invals: list[Any], env: Env) -> list[Any]:
        self.current[0] = index
        try:
            return bind_eqn(eqn, invals)
        finally:
            self.current[0] = None
