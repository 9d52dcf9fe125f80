"""The ``shard_map`` calls inside a user's ``f``, and the global arrays each call received.

Real code calls ``jax.shard_map`` inside ``f`` (often under ``jit``, often as a decorator made
when the module loads) instead of handing the exhibit a body and its specs. ``jax.make_jaxpr(f)``
stages each call as a ``shard_map`` eqn whose params hold what the call was given
(``jax._src.shard_map._shard_map_staging``, JAX 0.10.2): ``mesh``, ``in_specs``/``out_specs``
(one ``PartitionSpec`` per flat input/output; the body's consts are hoisted as leading inputs
with their own specs), ``check_vma`` and ``jaxpr``, the body as each device runs it.

:func:`find_shard_maps` lists those eqns in program order, looking into the jaxprs of every eqn
that holds one. :func:`shard_map_inputs` finds the arrays a call received by evaluating ``f``'s
jaxpr with the one interpreter (:func:`~jaxscope.internals.interpret.interpret`) up to the
eqn, walking into the call eqns on the way (``jit``, ``closed_call``, ``remat``, custom
derivative calls: their inputs are their bodies' inputs). A ``shard_map`` inside a ``scan``,
``while`` or ``cond`` body is listed but not evaluated to: it runs once per iteration or branch,
on values the loop makes (``reachable`` is false).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from jax._src import core

from jaxscope.internals.interpret import Env, EqnHook, call_body, interpret
from jaxscope.internals.views import snippet_source
from jaxscope.protocol import SourceLoc


@dataclass(frozen=True)
class FoundShardMap:
    """One ``shard_map`` eqn of ``f``'s jaxpr: the eqn (its params are the call's settings),
    the user's line of the call (``None``: none found), the calls it sits in as JAX names them
    (``("jit(f)",)``; empty at the top level) and whether :func:`shard_map_inputs` can evaluate
    ``f`` up to it (false inside a loop or a branch)."""

    eqn: core.JaxprEqn
    source: SourceLoc | None
    within: tuple[str, ...]
    reachable: bool


def _call_name(eqn: core.JaxprEqn) -> str:
    name = eqn.params.get("name")
    return f"{eqn.primitive.name}({name})" if name else eqn.primitive.name


def _walk(
    jaxpr: core.Jaxpr,
    within: tuple[str, ...],
    reachable: bool,
    outer: SourceLoc | None = None,
) -> Iterator[FoundShardMap]:
    """``outer``: the line of the eqn whose body this is, for an eqn whose own traceback JAX
    cut short of the user's frames (a ``cond`` branch's eqns carry none)."""
    for eqn in jaxpr.eqns:
        source = snippet_source(eqn.source_info.traceback) or outer
        if eqn.primitive.name == "shard_map":
            yield FoundShardMap(eqn, source, within, reachable)
            continue  # a shard_map nested in a body is that body's business
        body = call_body(eqn)
        for inner in core.jaxprs_in_params(eqn.params):
            runs_once = body is not None and inner is body[0]
            yield from _walk(inner, (*within, _call_name(eqn)), reachable and runs_once, source)


def find_shard_maps(closed: core.ClosedJaxpr) -> list[FoundShardMap]:
    """Every ``shard_map`` eqn of ``closed`` (``jax.make_jaxpr(f)(*args)``), in program order,
    looking into the jaxprs held in eqns' params (not into a ``shard_map``'s own body)."""
    return list(_walk(closed.jaxpr, (), True))


class _Reached(Exception):
    """Raised by the hook at the wanted eqn, with the values it reads."""

    def __init__(self, invals: list[Any]) -> None:
        super().__init__("reached")
        self.invals = invals


class _UpTo(EqnHook):
    def __init__(self, target: core.JaxprEqn) -> None:
        self.target = target

    def before(self, index: int, eqn: core.JaxprEqn, invals: list[Any], env: Env) -> bool:
        del index, env
        if eqn is self.target:
            raise _Reached(invals)
        return False

    def evaluate(
        self, index: int, eqn: core.JaxprEqn, invals: list[Any], env: Env
    ) -> Sequence[Any]:
        body = call_body(eqn)
        if body is not None and any(f.eqn is self.target for f in _walk(body[0], (), True)):
            out = interpret(body[0], body[1], invals, self).outvals
            assert out is not None  # the hook stops only by raising
            return out
        return super().evaluate(index, eqn, invals, env)


def shard_map_inputs(
    closed: core.ClosedJaxpr, found: FoundShardMap, args: Sequence[Any]
) -> list[Any] | None:
    """The global arrays ``found``'s eqn reads when ``closed`` runs on ``args`` (flat, one per
    invar): ``closed`` evaluated eqn by eqn up to it. ``None`` when it is not reachable (inside
    a loop or a branch) or ``closed`` ended without reaching it. Raises what evaluating the eqns
    before it raises."""
    if not found.reachable:
        return None
    try:
        interpret(closed.jaxpr, closed.consts, list(args), _UpTo(found.eqn))
    except _Reached as reached:
        return reached.invals
    return None


def shard_map_body_fun(found: FoundShardMap) -> Callable[..., tuple[Any, ...]]:
    """The call's body as a Python function of its flat per-device inputs, returning a tuple
    (``out_specs`` in the eqn's params is a tuple): its jaxpr evaluated with
    ``core.jaxpr_as_fun``, which binds each eqn under its own user traceback, so a body traced
    again keeps the user's lines."""
    body = core.jaxpr_as_fun(core.ClosedJaxpr(found.eqn.params["jaxpr"], ()))
    return lambda *xs: tuple(body(*xs))
