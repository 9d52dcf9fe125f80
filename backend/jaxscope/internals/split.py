"""The partial_eval exhibit's splitter: the JVP jaxpr of the user's ``f``, split by JAX's own
partial evaluator into a known (forward) jaxpr and an unknown (linear) one.

Sources:

* the JVP jaxpr is ``jax.make_jaxpr(lambda primals, tangents: jax.jvp(g, primals,
  tangents))(primals, tangents)`` where ``g(dyn_args, kwargs)`` calls ``f`` with the static
  arguments put back in place (:class:`jaxscope.internals.calling.CallPlan`): its invars are the
  leaves of ``primals`` then those of ``tangents``. Tangents are abstract
  (``jax.ShapeDtypeStruct``): the aval of each primal with its tangent dtype (``float0`` for
  integer, bool and key leaves, as ``jax.jvp`` requires);
* the split is ``jax._src.interpreters.partial_eval.partial_eval_jaxpr_nounits(jvp, unknowns,
  instantiate=False)`` ``[PRIVATE]`` -> ``(known, unknown, out_unknowns, res_avals)``: ``known``
  takes the known inputs and returns the known outputs then the residuals; ``unknown`` takes the
  residuals then the unknown inputs and returns the unknown outputs;
* a residual's origin is read off the known jaxpr: the eqn whose outvar it is (its user line from
  ``eqn.source_info``), or the known invar (an argument) it forwards, a constvar or a literal.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax._src import api_util, core, source_info_util
from jax._src.interpreters import partial_eval as pe

from jaxscope.internals.calling import CallPlan
from jaxscope.internals.views import aval_view, jaxpr_view, snippet_source
from jaxscope.protocol import AvalView, JaxprView, SourceLoc

source_info_util.register_exclusion(__file__)


def tangent_dtype(aval: Any) -> Any:
    """The dtype ``jax.jvp`` wants for the tangent of a primal of ``aval``: the same dtype for
    floating and complex primals, ``jax.dtypes.float0`` otherwise (integers, bools, keys)."""
    if jnp.issubdtype(aval.dtype, np.inexact):
        return aval.dtype
    return jax.dtypes.float0


def _aval_of(leaf: Any) -> Any:
    if isinstance(leaf, jax.ShapeDtypeStruct):
        return core.ShapedArray(leaf.shape, leaf.dtype, weak_type=bool(leaf.weak_type))
    return jax.typeof(leaf)


def nbytes(aval: Any) -> int:
    """Bytes of an array of ``aval`` (``float0`` counts 0: it holds no data). An extended dtype
    (a typed PRNG key, ``key<fry>``) is no numpy dtype: its own ``itemsize`` (8 bytes for
    ``key<fry>``, the ``uint32[2]`` it holds; ``jax.Array.nbytes`` counts the same)."""
    size = int(np.prod(aval.shape, dtype=np.int64))
    if jnp.issubdtype(aval.dtype, jax.dtypes.extended):
        return size * int(aval.dtype.itemsize)
    dtype: np.dtype[Any] = np.dtype(aval.dtype)
    if dtype == jax.dtypes.float0:
        return 0
    return size * dtype.itemsize


@dataclass(frozen=True)
class JvpProgram:
    """The JVP of the user's call as one jaxpr.

    ``jaxpr`` is the ``ClosedJaxpr``; ``labels`` name its invars (``primal args[0]['w1']``,
    ``tangent kwargs['x']``); ``n_primals`` leaves are primals, the rest tangents;
    ``fun(primals, tangents)`` is the function traced (``jax.jvp`` of the user's call);
    ``primals``/``tangents`` the pytrees it was traced with.
    """

    jaxpr: core.ClosedJaxpr
    labels: list[str]
    n_primals: int
    fun: Callable[..., Any]
    primals: tuple[Any, Any]
    tangents: tuple[Any, Any]


def _labels(plan: CallPlan) -> list[str]:
    """``args[i]...``/``kwargs['k']...`` for each leaf of ``(dyn_args, kwargs)``, in leaf order,
    with ``i`` the argument's position in the user's ``args`` (static ones counted)."""
    static = set(plan.normalized_argnums())
    positions = [i for i in range(len(plan.args)) if i not in static]
    tree = (plan.dynamic_args(), plan.kwargs)
    out: list[str] = []
    for path, _ in jax.tree_util.tree_flatten_with_path(tree)[0]:
        head, key, rest = path[0], path[1], path[2:]
        if getattr(head, "idx", None) == 0:
            name = f"args[{positions[getattr(key, 'idx', 0)]}]"
        else:
            name = f"kwargs[{getattr(key, 'key', '?')!r}]"
        out.append(name + jax.tree_util.keystr(tuple(rest)))
    return out


def call_with_statics(plan: CallPlan) -> Callable[..., Any]:
    """``g(args, kwargs)``: the user's call on the dynamic positional arguments ``args``, with
    the static ones put back at their positions (static keyword arguments are already in
    ``plan.fun``). JAX names residuals that are arguments after ``g``'s parameters
    (``from the argument args[0]['w1']``)."""
    static = plan.normalized_argnums()

    def g(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        it = iter(args)
        full = [plan.args[i] if i in static else next(it) for i in range(len(plan.args))]
        return plan.fun(*full, **kwargs)

    return g


def jvp_program(plan: CallPlan) -> JvpProgram:
    """Trace ``jax.jvp`` of the user's call (primals = ``args``/``kwargs`` without the static
    ones; tangents abstract) to a ``ClosedJaxpr`` with ``jax.make_jaxpr``."""
    g = call_with_statics(plan)
    primals = (plan.dynamic_args(), dict(plan.kwargs))
    leaves, treedef = jax.tree.flatten(primals)
    tangent_leaves = []
    for leaf in leaves:
        aval = _aval_of(leaf)
        tangent_leaves.append(
            jax.ShapeDtypeStruct(aval.shape, tangent_dtype(aval), weak_type=aval.weak_type)
        )
    tangents = jax.tree.unflatten(treedef, tangent_leaves)

    def jvp_fun(p: tuple[Any, Any], t: tuple[Any, Any]) -> Any:
        return jax.jvp(g, p, t)

    try:
        closed = jax.make_jaxpr(jvp_fun)(primals, tangents)
    except Exception as exc:
        in_user_terms(exc, plan, jvp_fun, (primals, tangents))
        raise
    labels = _labels(plan)
    return JvpProgram(
        jaxpr=closed,
        labels=[f"primal {x}" for x in labels] + [f"tangent {x}" for x in labels],
        n_primals=len(leaves),
        fun=jvp_fun,
        primals=primals,
        tangents=tangents,
    )


def in_user_terms(
    exc: BaseException, plan: CallPlan, wrapper: Callable[..., Any], wrapper_args: tuple[Any, ...]
) -> None:
    """Rewrite, in place, the part of a tracer error's message (``TracerBoolConversionError``
    and friends, ``DynamicJaxprTracer._origin_msg``) that names the function JAX traced when
    that function is jaxscope's ``wrapper`` (``jvp_fun``) and not the user's ``f``: "tracing
    the function jvp_fun at .../split.py:124" becomes JAX's own words for ``f`` ("f at
    <snippet>:2", ``api_util.fun_sourceinfo``), and the wrapper's argument names (``p[0][0]``,
    ``t[0][1]['w']``: its primals and tangents) become ``f``'s (``x``, ``w`` 's tangent), as
    ``api_util.debug_info`` names them for ``jax.jit(f)``. Any other message is left as is."""
    msg = exc.args[0] if exc.args and isinstance(exc.args[0], str) else None
    wrapper_src = api_util.fun_sourceinfo(wrapper)
    if msg is None or f"tracing the function {wrapper_src} " not in msg:
        return
    try:
        user = api_util.debug_info(
            "jit",
            plan.f,
            plan.args,
            {**plan.kwargs, **plan.static_kwargs},
            static_argnums=plan.static_argnums,
            static_argnames=plan.static_argnames,
        )
        ours = api_util.debug_info("jit", wrapper, wrapper_args, {})
    except Exception:  # no names to map: JAX's message stays as it is
        return
    head, sep, tail = msg.partition(f"tracing the function {wrapper_src} ")
    renamed: dict[str, str] = {}
    user_names = list(user.arg_names or ())
    wrapper_names = list(ours.arg_names or ())
    n = len(user_names)
    if len(wrapper_names) == 2 * n:  # primals' leaves, then tangents' (jvp_program)
        for i, name in enumerate(user_names):
            primal, tangent = wrapper_names[i], wrapper_names[n + i]
            if name is not None and primal is not None and tangent is not None:
                renamed[primal] = name
                renamed[tangent] = f"{name}'s tangent"
    if renamed:
        names = "|".join(re.escape(k) for k in sorted(renamed, key=len, reverse=True))
        tail = re.sub(rf"(?<![\w\[\]'])({names})(?![\w\[])", lambda m: renamed[m[1]], tail)
    exc.args = (
        head + sep.replace(wrapper_src, user.func_src_info or wrapper_src) + tail,
        *exc.args[1:],
    )


def default_known(n_inputs: int, n_primals: int) -> list[bool]:
    """Primals known, tangents unknown (what ``jax.linearize`` and ``jax.vjp`` do)."""
    return [i < n_primals for i in range(n_inputs)]


def check_known(known: Sequence[bool], labels: Sequence[str]) -> None:
    """Raise ``ValueError`` unless there is one flag per JVP-jaxpr input."""
    if len(known) != len(labels):
        n = len(labels)
        raise ValueError(
            f"options.known has {len(known)} flag(s), but the JVP jaxpr of this f has {n} "
            f"inputs ({n // 2} primals then {n // 2} tangents): give one bool per input, in the "
            f"order {', '.join(labels[:4])}{', ...' if n > 4 else ''}"
        )


@dataclass(frozen=True)
class Split:
    """What ``pe.partial_eval_jaxpr_nounits`` returned, as JAX objects."""

    known: core.ClosedJaxpr
    unknown: core.ClosedJaxpr
    out_unknowns: list[bool]
    res_avals: list[Any]


def split_jaxpr(closed: core.ClosedJaxpr, known: Sequence[bool]) -> Split:
    """``pe.partial_eval_jaxpr_nounits(closed, unknowns=[not k for k in known],
    instantiate=False)``."""
    unknowns = [not k for k in known]
    jk, ju, out_uk, res = pe.partial_eval_jaxpr_nounits(closed, unknowns, instantiate=False)
    return Split(known=jk, unknown=ju, out_unknowns=list(out_uk), res_avals=list(res))


def _describe_eqn(eqn: core.JaxprEqn) -> str:
    """As ``ad_checkpoint._saved_residuals`` words it (without the location)."""
    if eqn.primitive.name == "name":
        return f"named '{eqn.params['name']}'"
    if eqn.primitive.name == "jit":
        return f"output of jitted function '{eqn.params.get('name')}'"
    return f"output of {eqn.primitive.name}"


@dataclass(frozen=True)
class Residual:
    """One value that crosses from the forward (known) side to the linear (unknown) one, or
    that the backward pass keeps (``remat``): its aval, the snippet line that made it, where it
    comes from in words, its size in bytes, and the known jaxpr's eqn that made it (``None``
    for an argument, a literal, a constant, or a residual ``saved_residuals`` listed). The
    partial_eval probe makes its ``ResidualView`` of it (design 0059)."""

    aval: AvalView
    source: SourceLoc | None
    description: str
    bytes: int
    known_eqn: int | None = None


@dataclass(frozen=True)
class SplitRecord:
    """A JVP program split by JAX's partial evaluator with ``known_inputs``: its inputs (labels,
    avals, how many are primals), the JVP, known and unknown jaxprs, which outputs are unknown,
    and the residuals. The partial_eval probe makes its ``jaxpr_split`` event of it, with what
    it adds (the calls split across both sides, the eqns dropped) (design 0059: the walker
    returns records, the exhibit builds its events)."""

    input_labels: list[str]
    input_avals: list[AvalView]
    known_inputs: list[bool]
    n_primals: int
    jvp: JaxprView
    known: JaxprView
    unknown: JaxprView
    out_unknowns: list[bool]
    residuals: list[Residual]


def residual_views(split: Split, known_labels: Sequence[str]) -> list[Residual]:
    """One :class:`Residual` per residual (the last ``len(res_avals)`` outvars of the known
    jaxpr, the first invars of the unknown one), with where it comes from in the known jaxpr."""
    jk = split.known.jaxpr
    n_res = len(split.res_avals)
    res_vars = jk.outvars[len(jk.outvars) - n_res :] if n_res else []
    producer: dict[Any, tuple[int, core.JaxprEqn]] = {}
    for i, eqn in enumerate(jk.eqns):
        for v in eqn.outvars:
            producer[v] = (i, eqn)
    invar_index = {v: i for i, v in enumerate(jk.invars)}
    constvars = set(jk.constvars)
    out: list[Residual] = []
    for v, aval in zip(res_vars, split.res_avals, strict=True):
        source = None
        known_eqn = None
        if isinstance(v, core.Literal):
            description = f"the literal {v.val}"
        elif v in producer:
            known_eqn, eqn = producer[v]
            description = _describe_eqn(eqn)
            source = snippet_source(eqn.source_info.traceback)
        elif v in invar_index:
            description = f"the argument {known_labels[invar_index[v]]}"
        elif v in constvars:
            description = "a constant"
        else:  # pragma: no cover - every known outvar is one of the above
            description = "unknown origin"
        out.append(
            Residual(
                aval=aval_view(aval),
                source=source,
                description=description,
                bytes=nbytes(aval),
                known_eqn=known_eqn,
            )
        )
    return out


def split_program(program: JvpProgram, known: Sequence[bool]) -> tuple[SplitRecord, Split]:
    """Split ``program`` with ``known`` (one flag per input): the record and JAX's split."""
    check_known(known, program.labels)
    split = split_jaxpr(program.jaxpr, known)
    known_labels = [lab for lab, k in zip(program.labels, known, strict=True) if k]
    record = SplitRecord(
        input_labels=program.labels,
        input_avals=[aval_view(v.aval) for v in program.jaxpr.jaxpr.invars],
        known_inputs=list(known),
        n_primals=program.n_primals,
        jvp=jaxpr_view(program.jaxpr),
        known=jaxpr_view(split.known),
        unknown=jaxpr_view(split.unknown),
        out_unknowns=split.out_unknowns,
        residuals=residual_views(split, known_labels),
    )
    return record, split
