"""Flax's parameter machinery observed while a snippet's model is initialized and applied (flax
0.12.8), for the flax_params exhibit.

linen: every ``self.param`` goes through ``flax.core.scope.Scope.param``, which, when the
parameter does not exist yet, asks ``Scope.make_rng('params')`` for its key and calls the
initializer on it. ``make_rng`` does not split a key down the tree: it bumps the scope's
per-stream counter and folds ``(child scope names..., counter)`` into the stream's root key with
``flax.core.scope._fold_in_static`` (``jax.random.fold_in`` of the first 4 bytes of a SHA-1 of
that data). :func:`recording_linen` wraps ``Scope.param``, ``Scope.make_rng`` and
``Scope.get_variable`` for the block, and swaps the ``random`` module ``flax.core.scope`` calls
``fold_in`` through for a spy, so that the uint32 flax really folded in is recorded, not
recomputed.

nnx: a key is ``nnx.rnglib.RngStream.__call__``: ``fold_in(stream key, count)``, then
``count += 1``; a parameter is a ``flax.nnx.variablelib.Variable`` (``nnx.Param``) created with
its value. :func:`recording_nnx` wraps both for the block.

:func:`unused_invars` is JAX's dead-code elimination (``pe.dce_jaxpr``) of a jaxpr: which
inputs never reach an output (a parameter ``apply`` never reads).

flax is imported inside the functions: only the flax_params exhibit pays for it. Every name used
here is pinned by ``backend/tests/test_internals_contract_flax.py``.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import jax

from jaxscope.internals.jit_watch import user_call_site
from jaxscope.internals.patching import patched

# Class-level patches of flax must not interleave between threads.
PATCH_LOCK = threading.RLock()


def snippet_line() -> int | None:
    """The line of the innermost snippet frame on the current Python stack
    (:func:`jaxscope.internals.jit_watch.user_call_site`)."""
    site = user_call_site()
    return site[0] if site is not None else None


@dataclass
class LinenRng:
    """One ``Scope.make_rng`` call: ``stream`` (``params``), ``root_key`` the key the stream
    started from (``init``'s key for it), ``suffix`` the static data flax folded into it (the
    child scopes' names from the root, then the scope's counter for the stream), ``folded`` the
    uint32 ``_fold_in_static`` passed to ``jax.random.fold_in`` (None: no data, no fold), and
    ``key`` the key returned."""

    scope_path: tuple[str, ...]
    stream: str
    root_key: Any
    suffix: tuple[str | int, ...]
    folded: int | None
    key: Any


@dataclass
class LinenParam:
    """One ``Scope.param`` call: ``path`` the scope path plus the name (``('Dense_0',
    'kernel')``), the initializer and the arguments flax gives it after the key, the value it
    returned (unboxed), ``created`` (False: the parameter existed, as in ``apply``), the key of
    a created one (``rng``) and the snippet line of the call."""

    path: tuple[str, ...]
    init_fn: Any
    init_args: tuple[Any, ...]
    init_kwargs: dict[str, Any]
    value: Any
    created: bool
    rng: LinenRng | None
    line: int | None


@dataclass
class LinenRead:
    """One read of a ``params`` variable (``Scope.get_variable('params', name)``): its path and
    the object read."""

    path: tuple[str, ...]
    value: Any


@dataclass
class LinenRecorder:
    """What :func:`recording_linen` saw, in call order."""

    params: list[LinenParam] = field(default_factory=list)
    rngs: list[LinenRng] = field(default_factory=list)
    reads: list[LinenRead] = field(default_factory=list)


class _FoldInSpy:
    """Stands in for ``jax.random`` inside ``flax.core.scope``: ``fold_in`` notes the data it
    folds (into ``folds``), everything else is ``jax.random``'s."""

    def __init__(self, module: Any, folds: list[int | None]) -> None:
        self._module = module
        self._folds = folds

    def __getattr__(self, name: str) -> Any:
        return getattr(self._module, name)

    def fold_in(self, key: Any, data: Any) -> Any:
        try:
            self._folds.append(int(data))
        except Exception:  # a traced value: nothing concrete to show
            self._folds.append(None)
        return self._module.fold_in(key, data)


@contextlib.contextmanager
def recording_linen() -> Iterator[LinenRecorder]:
    """Within the block, every linen ``Scope.param``, ``Scope.make_rng`` and read of a
    ``params`` variable is recorded; flax's classes and module are restored on exit."""
    from flax.core import scope as flax_scope

    rec = LinenRecorder()
    folds: list[int | None] = []
    orig_param = flax_scope.Scope.param
    orig_make_rng = flax_scope.Scope.make_rng
    orig_get_variable = flax_scope.Scope.get_variable
    # The make_rng calls made inside the innermost param call (its key).
    pending: list[list[LinenRng]] = []

    def make_rng(self: Any, name: str = "params") -> Any:
        # flax falls back to the params stream for a stream the scope lacks
        stream = name if self.has_rng(name) or not self.has_rng("params") else "params"
        start = len(folds)
        key = orig_make_rng(self, name)
        lazy = self.rngs[stream]
        suffix = (*lazy.suffix, self.rng_counters[stream])
        made = LinenRng(
            scope_path=tuple(self.path),
            stream=stream,
            root_key=lazy.rng,
            suffix=suffix,
            folded=folds[start] if len(folds) > start else None,
            key=key,
        )
        rec.rngs.append(made)
        if pending:
            pending[-1].append(made)
        return key

    def param(self: Any, name: str, init_fn: Any, *init_args: Any, **kwargs: Any) -> Any:
        existed = self.has_variable("params", name)
        pending.append([])
        try:
            value = orig_param(self, name, init_fn, *init_args, **kwargs)
        finally:
            made = pending.pop()
        own = [r for r in made if r.scope_path == tuple(self.path) and r.stream == "params"]
        init_kwargs = {k: v for k, v in kwargs.items() if k != "unbox"}
        rec.params.append(
            LinenParam(
                path=(*self.path, name),
                init_fn=init_fn,
                init_args=init_args,
                init_kwargs=init_kwargs,
                value=value,
                created=not existed,
                rng=own[0] if own and not existed else None,
                line=snippet_line(),
            )
        )
        return value

    def get_variable(self: Any, col: str, name: str, default: Any = None) -> Any:
        value = orig_get_variable(self, col, name, default)
        if col == "params" and self.has_variable(col, name):
            rec.reads.append(LinenRead(path=(*self.path, name), value=value))
        return value

    with (
        PATCH_LOCK,
        patched(flax_scope.Scope, param=param, make_rng=make_rng, get_variable=get_variable),
        patched(flax_scope, random=_FoldInSpy(jax.random, folds)),
    ):
        yield rec


@dataclass
class NnxDraw:
    """One ``RngStream.__call__``: the stream's ``tag``, the stream key it folded into, the
    ``count`` it folded (before the increment) and the key returned."""

    tag: str
    stream_key: Any
    count: int | None
    key: Any


@dataclass
class NnxVariable:
    """One ``nnx.Variable`` created: the object, its type's name (``Param``, ``RngKey``), the
    value it was created with, the draws made before it (an index into the recorder's draws:
    the next draw's index at creation), the callables named ``*_init`` in the creating frame
    (the module's ``__init__``: ``kernel_init``, ``bias_init``) and the snippet line."""

    variable: Any
    type_name: str
    value: Any
    draws_before: int
    init_fns: dict[str, Any]
    line: int | None


@dataclass
class NnxRecorder:
    """What :func:`recording_nnx` saw, in call order."""

    draws: list[NnxDraw] = field(default_factory=list)
    variables: list[NnxVariable] = field(default_factory=list)


@contextlib.contextmanager
def recording_nnx() -> Iterator[NnxRecorder]:
    """Within the block, every nnx ``RngStream`` draw and ``Variable`` creation is recorded;
    flax's classes are restored on exit."""
    from flax.nnx import rnglib, variablelib

    rec = NnxRecorder()
    orig_call = rnglib.RngStream.__call__
    orig_init = variablelib.Variable.__init__

    def call(self: Any) -> Any:
        stream_key = self.key[...]
        try:
            count: int | None = int(self.count[...])
        except Exception:  # a traced or batched count
            count = None
        key = orig_call(self)
        rec.draws.append(NnxDraw(tag=self.tag, stream_key=stream_key, count=count, key=key))
        return key

    def init(self: Any, value: Any, *args: Any, **kwargs: Any) -> None:
        orig_init(self, value, *args, **kwargs)
        caller = sys._getframe(1)
        # Variable subclasses call up through super().__init__: the creating frame is the
        # first one outside flax's variablelib.
        while caller is not None and caller.f_code.co_filename == variablelib.__file__:
            caller = caller.f_back  # type: ignore[assignment]
        init_fns = (
            {k: v for k, v in caller.f_locals.items() if k.endswith("_init") and callable(v)}
            if caller is not None
            else {}
        )
        rec.variables.append(
            NnxVariable(
                variable=self,
                type_name=type(self).__name__,
                value=self.get_value(),
                draws_before=len(rec.draws),
                init_fns=init_fns,
                line=snippet_line(),
            )
        )

    with (
        PATCH_LOCK,
        patched(rnglib.RngStream, __call__=call),
        patched(variablelib.Variable, __init__=init),
    ):
        yield rec


def unused_invars(closed_jaxpr: Any) -> list[bool]:
    """For each invar of ``closed_jaxpr``: True when no output depends on it (JAX's own
    dead-code elimination, ``pe.dce_jaxpr`` with every output used)."""
    from jax._src.interpreters import partial_eval as pe

    jaxpr = closed_jaxpr.jaxpr
    _, used = pe.dce_jaxpr(jaxpr, [True] * len(jaxpr.outvars))
    return [not u for u in used]
