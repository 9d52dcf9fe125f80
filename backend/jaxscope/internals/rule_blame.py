"""Which of the user's custom derivative rules a gradient element's cotangent passes through.

When ``jax.grad``'s value for an argument disagrees with the finite differences, JAX's own rules
(tested in JAX) are not the first suspects: a ``custom_vjp`` backward rule the user wrote is. In
the linear jaxpr ``jax.linearize`` gives, the user's ``bwd`` is a ``custom_lin`` eqn
(``params["bwd"]``). Its transpose sends cotangents to exactly the linear inputs it reads, so a
``custom_lin`` eqn lies on an argument's path when it reads a variable that depends on that
argument's tangent (forward reachability over the eqns, descending into ``jit``'s inner jaxpr).
Each rule found is named with the line where it returns (``custom_rules.return_source``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from jax._src import core

from jaxscope.internals.nan_walk import _bwd_function, custom_bwd_return
from jaxscope.protocol import SourceLoc


@dataclass(frozen=True)
class RuleOnPath:
    """A user's ``custom_vjp`` backward rule on an argument's path: its function name and where
    it returns (``None`` when it is not defined in the snippet)."""

    name: str
    source: SourceLoc | None


def _inner(eqn: core.JaxprEqn) -> core.Jaxpr | None:
    inner: Any = eqn.params.get("jaxpr")
    if isinstance(inner, core.ClosedJaxpr):
        inner = inner.jaxpr
    return inner if isinstance(inner, core.Jaxpr) else None


def _walk(jaxpr: core.Jaxpr, reached: set[core.Var], found: list[RuleOnPath]) -> set[core.Var]:
    """Adds to ``reached`` every variable of ``jaxpr`` that depends on one already in it, and to
    ``found`` every ``custom_lin`` eqn that reads one; returns the outvars reached."""

    def reads(atoms: Iterable[Any]) -> list[bool]:
        return [isinstance(a, core.Var) and a in reached for a in atoms]

    for eqn in jaxpr.eqns:
        hit = reads(eqn.invars)
        if not any(hit):
            continue
        if eqn.primitive.name == "custom_lin":
            fn = _bwd_function(eqn)
            name = str(getattr(fn, "__name__", None) or "bwd")
            rule = RuleOnPath(name, custom_bwd_return(eqn))
            if rule not in found:
                found.append(rule)
        inner = _inner(eqn)
        if inner is not None and len(inner.invars) == len(eqn.invars):
            inside = {v for v, h in zip(inner.invars, hit, strict=True) if h}
            out = _walk(inner, inside, found)
            reached.update(o for o, v in zip(eqn.outvars, inner.outvars, strict=True) if v in out)
        else:
            reached.update(eqn.outvars)
    return {v for v in jaxpr.outvars if isinstance(v, core.Var) and v in reached}


def custom_rules_on_path(jaxpr: core.Jaxpr, invar_index: int) -> list[RuleOnPath]:
    """The user's ``custom_vjp`` backward rules (``custom_lin`` eqns) that read a value depending
    on ``jaxpr.invars[invar_index]`` (a linear jaxpr's tangent input), in eqn order."""
    found: list[RuleOnPath] = []
    _walk(jaxpr, {jaxpr.invars[invar_index]}, found)
    return found
