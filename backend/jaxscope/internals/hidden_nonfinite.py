"""Where a NaN or an Inf is born in ``f``'s forward pass, and which later eqn hid it.

``jnp.where(x > 0, jnp.log(x), 0.0)`` returns finite values while ``log`` made ``-inf``/``nan``
for the elements the ``where`` drops: the output looks fine, and the gradient of the same code is
NaN (the cotangent of the dropped branch is 0, times log's infinite derivative). The forward value
is evaluated here eqn by eqn with the one interpreter (:func:`~jaxscope.internals.interpret.
interpret`), on ``f``'s jaxpr (``jax.make_jaxpr``) and the run's arguments: the *origin* is the
first top-level eqn whose outputs hold a NaN/Inf while none of the non-finite values it read
came from an earlier one or from a non-finite argument (a constant ``jnp.inf`` it reads does not
count: the NaN/Inf is born there), the *hider* the
first eqn after it that reads a non-finite value the origin led to and writes only finite values.
A value hidden inside a jitted library function's body (a ``jit`` eqn whose outputs are finite)
is not looked into: the walk reads top-level eqns only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from jax._src import core

from jaxscope.internals.interpret import Env, EqnHook, interpret
from jaxscope.internals.views import snippet_source
from jaxscope.protocol import SourceLoc


@dataclass(frozen=True)
class NonfiniteEqn:
    """One top-level eqn of the forward pass: ``index`` in the jaxpr, its ``primitive``, its
    user line (``None``: none), its text as JAX prints it, and ``kind`` (``nan`` when any output
    holds a NaN, else ``inf``) of the values it wrote or read."""

    index: int
    primitive: str
    source: SourceLoc | None
    text: str  # a call (``jit``) as its primitive and the called function's name
    kind: str


@dataclass(frozen=True)
class HiddenNonfinite:
    """A non-finite forward value that ``f``'s outputs do not show: where it was born
    (``origin``), the first eqn that dropped it (``hider``; ``None`` when the value was simply
    never read by an output), and how many elements were non-finite at the origin."""

    origin: NonfiniteEqn
    hider: NonfiniteEqn | None
    count: int


def _nonfinite(value: Any) -> tuple[int, str] | None:
    """``(how many elements, 'nan' or 'inf')`` of a floating value's non-finite elements."""
    try:
        arr = np.asarray(value)
    except Exception:  # a PRNG key, a token: no numbers to check
        return None
    if not np.issubdtype(arr.dtype, np.inexact) and "bfloat16" not in str(arr.dtype):
        return None
    arr = arr.astype(np.float64) if arr.dtype.kind == "V" or "bfloat16" in str(arr.dtype) else arr
    bad = ~np.isfinite(arr)
    n = int(bad.sum())
    if not n:
        return None
    return n, "nan" if bool(np.isnan(arr).any()) else "inf"


class _Watch(EqnHook):
    def __init__(self) -> None:
        self.origin: tuple[int, core.JaxprEqn, int, str] | None = None
        self.hider: tuple[int, core.JaxprEqn, str] | None = None
        self.tainted: set[core.Var] = set()

    def after(
        self, index: int, eqn: core.JaxprEqn, invals: list[Any], outvals: list[Any], env: Env
    ) -> bool:
        del env
        reads = [
            _nonfinite(x)
            for v, x in zip(eqn.invars, invals, strict=True)
            if not isinstance(v, core.Literal) and v in self.tainted
        ]
        reads_bad = [r for r in reads if r is not None]
        writes = [_nonfinite(x) for x in outvals]
        writes_bad = [w for w in writes if w is not None]
        if writes_bad:
            self.tainted.update(
                v for v, w in zip(eqn.outvars, writes, strict=True) if w is not None
            )
            # born here: no non-finite value led to it (a constant such as ``jnp.inf`` may)
            if self.origin is None and not reads_bad:
                kind = "nan" if any(k == "nan" for _, k in writes_bad) else "inf"
                self.origin = (index, eqn, sum(n for n, _ in writes_bad), kind)
        elif reads_bad and self.origin is not None and self.hider is None:
            kind = "nan" if any(k == "nan" for _, k in reads_bad) else "inf"
            self.hider = (index, eqn, kind)
        return False


def _eqn(index: int, eqn: core.JaxprEqn, kind: str) -> NonfiniteEqn:
    text = str(core.pp_eqn(eqn, core.JaxprPpContext(), core.JaxprPpSettings()))
    if "\n" in text:  # a call's whole body: its primitive and the called function's name
        text = f"{eqn.primitive.name} {eqn.params.get('name', '')}".strip()
    return NonfiniteEqn(
        index=index,
        primitive=str(eqn.primitive.name),
        source=snippet_source(eqn.source_info.traceback),
        text=text,
        kind=kind,
    )


def hidden_nonfinite(closed_jaxpr: core.ClosedJaxpr, args: Sequence[Any]) -> HiddenNonfinite | None:
    """The non-finite forward value of ``closed_jaxpr`` at ``args`` (flat, one per invar) that
    its outputs hide (module docstring); ``None`` when no eqn makes one, or when an output holds
    a NaN/Inf itself (then nothing is hidden: the output shows it)."""
    watch = _Watch()
    # an argument that comes in non-finite is not born in f: what it leads to is not an origin
    watch.tainted.update(
        v for v, x in zip(closed_jaxpr.jaxpr.invars, args, strict=True) if _nonfinite(x)
    )
    result = interpret(closed_jaxpr.jaxpr, closed_jaxpr.consts, list(args), watch)
    outs = result.outvals or []
    if watch.origin is None or any(_nonfinite(o) for o in outs):
        return None
    index, eqn, count, kind = watch.origin
    hider = _eqn(watch.hider[0], watch.hider[1], watch.hider[2]) if watch.hider else None
    return HiddenNonfinite(origin=_eqn(index, eqn, kind), hider=hider, count=count)
