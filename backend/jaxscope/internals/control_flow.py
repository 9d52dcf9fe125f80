"""Observe JAX's own type checks of control-flow bodies while ``f`` is traced.

JAX checks loop carries and branch outputs in plain Python functions of
``jax._src.lax.control_flow`` (jax 0.10.2), each given the *flattened* trees it compares:

* ``loops._check_carry_type(name, body_fun, in_carry, out_carry)``: ``name`` is ``'scan body'``
  or ``'while_loop body'`` (``fori_loop`` reaches it through ``scan`` with static bounds and
  through ``while_loop`` with traced ones, with its own wrapper as ``body_fun``); ``in_carry`` and
  ``out_carry`` are ``tree_util.FlatTree`` s of avals (``.tree`` the treedef, ``.paths`` the key
  paths, iteration the avals). It raises ``TypeError`` on a structure or type mismatch (the
  message names the leaf path), else returns ``None``.
* ``loops._promote_weak_typed_input(in_val, in_aval, out_aval) -> (val, changed)``: called per
  carry leaf, in leaf order, just before the final check; a weak-typed init leaf whose type does
  not match the body's output is converted (``changed``) and the body traced again.
* ``conditionals._check_branch_outputs(api_name, name1, name2, f1, f2, out_avals1,
  out_avals2)``: ``cond`` (``'true_fun'`` vs ``'false_fun'``) and ``switch`` (``'branch 0'`` vs
  each other branch), ``TypeError`` on a mismatch.

:func:`observe_control_flow` wraps those three names (module globals looked up at call time)
for the duration of a ``with`` block on this thread, and records each call as a
:class:`CarryObservation`: the avals JAX compared, the verdict JAX gave (its exception, re-raised
unchanged), ``core.typematch`` per leaf (the predicate JAX's check uses) and, for a structure
mismatch, the first key path from ``tree_util.equality_errors`` (JAX's own diff, the one its
message quotes).
"""

from __future__ import annotations

import contextlib
import sys
import threading
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from jax._src import core, source_info_util
from jax._src import tree_util as jtu
from jax._src.lax.control_flow import conditionals, loops

from jaxscope.protocol import SourceLoc
from jaxscope.snippet_model import SNIPPET_FILENAME

source_info_util.register_exclusion(__file__)

_lock = threading.RLock()


@dataclass
class CarryObservation:
    """One call of JAX's carry / branch-output check.

    ``api``: JAX's label (``'scan body'``, ``'while_loop body'``, ``'cond'``, ``'switch'``);
    ``primitive``: the jaxpr primitive it stages (``scan``, ``while``, ``cond``); ``fori``: the
    body is ``fori_loop``'s wrapper; ``labels``: the names JAX gives the two sides
    (``carry in``/``carry out``, ``true_fun``/``false_fun``, ``branch 0``/``branch1``...);
    ``functions``: the user's functions on each side; ``paths``: ``keystr`` of each leaf of the
    first side; ``avals``: the two sides' avals (``core.ShapedArray``); ``trees``: their treedef
    strings; ``initial``: for a loop, the init avals before weak-type promotion (``None`` when
    JAX promoted nothing); ``promoted``: per leaf, whether JAX promoted it; ``matches``: per leaf,
    ``core.typematch``; ``error``: what JAX raised (``None`` when it accepted);
    ``leaf_path``: the first differing leaf's key path; ``call_source``: the snippet line the
    check ran under (the ``lax.scan``/``cond``... call).
    """

    api: str
    primitive: str
    fori: bool
    labels: tuple[str, str]
    functions: tuple[Any, Any]
    paths: list[str]
    out_paths: list[str]
    avals: tuple[list[Any], list[Any]]
    trees: tuple[str, str]
    initial: list[Any] | None = None
    promoted: list[bool] = field(default_factory=list)
    matches: list[bool] = field(default_factory=list)
    error: BaseException | None = None
    leaf_path: str | None = None
    call_source: SourceLoc | None = None


def _snippet_caller() -> SourceLoc | None:
    """The innermost snippet frame on the current Python stack (the user's call line)."""
    frame: types.FrameType | None = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_filename == SNIPPET_FILENAME:
            return SourceLoc(line=frame.f_lineno, function=frame.f_code.co_name)
        frame = frame.f_back
    return None


def function_source(fun: Any) -> SourceLoc | None:
    """Where ``fun`` (a user function, after ``functools.partial``/``__wrapped__``) is defined in
    the snippet; ``None`` when it is not a snippet function."""
    import functools
    import inspect

    while isinstance(fun, functools.partial):
        fun = fun.func
    try:
        fun = inspect.unwrap(fun)
        code = fun.__code__
    except (AttributeError, ValueError):
        return None
    if code.co_filename != SNIPPET_FILENAME:
        return None
    return SourceLoc(line=code.co_firstlineno, function=getattr(fun, "__name__", None))


def fori_user_body(body_fun: Any) -> Any | None:
    """The user's ``body_fun`` inside ``fori_loop``'s wrapper (``_fori_scan_body_fun`` keeps it
    in a ``weakref`` cell, ``_fori_body_fun`` likewise); ``None`` when ``body_fun`` is not one."""
    qual = getattr(body_fun, "__qualname__", "")
    if not qual.startswith("_fori_"):
        return None
    import weakref

    for cell in getattr(body_fun, "__closure__", None) or ():
        try:
            value = cell.cell_contents
        except ValueError:
            continue
        if isinstance(value, weakref.ref):
            return value()
        if callable(value) and not qual.startswith(getattr(value, "__qualname__", "")):
            return value
    return None


def _keystrs(flat: Any) -> list[str]:
    try:
        return [jtu.keystr(p) for p in flat.paths]
    except Exception:  # a tree JAX cannot unflatten: positional paths
        return [f"[{i}]" for i in range(len(flat.vals))]


def _first_structure_difference(t1: Any, t2: Any) -> str | None:
    """The key path of the first difference ``tree_util.equality_errors`` reports."""
    try:
        diffs = list(jtu.equality_errors(t1.unflatten(), t2.unflatten()))
    except Exception:
        return None
    return jtu.keystr(diffs[0][0]) if diffs else None


def _first_type_difference(paths: list[str], matches: list[bool]) -> str | None:
    for p, m in zip(paths, matches, strict=False):
        if not m:
            return p
    return None


def _observe(
    obs: CarryObservation, first: Any, second: Any, call: Callable[[], Any]
) -> CarryObservation:
    same_tree = first.tree == second.tree
    if same_tree:
        obs.matches = [bool(core.typematch(a, b)) for a, b in zip(first, second, strict=True)]
    try:
        call()
    except BaseException as exc:  # recorded, then re-raised unchanged
        obs.error = exc
        obs.leaf_path = (
            _first_type_difference(obs.paths, obs.matches)
            if same_tree
            else _first_structure_difference(first, second)
        )
        raise
    return obs


@contextlib.contextmanager
def observe_control_flow() -> Iterator[list[CarryObservation]]:
    """Record every carry / branch-output check JAX runs inside the block (this thread only).

    Yields the list the observations are appended to, in the order JAX ran the checks (a body
    nested in another body is checked first)."""
    records: list[CarryObservation] = []
    me = threading.get_ident()
    orig_carry = loops._check_carry_type
    orig_promote = loops._promote_weak_typed_input
    orig_branch = conditionals._check_branch_outputs
    pending: list[tuple[Any, Any, bool]] = []

    def promote(in_val: Any, in_aval: Any, out_aval: Any) -> tuple[Any, bool]:
        val, changed = orig_promote(in_val, in_aval, out_aval)
        if threading.get_ident() == me:
            pending.append((in_aval, out_aval, bool(changed)))
        return val, changed

    def check_carry(name: str, body_fun: Any, in_carry: Any, out_carry: Any) -> Any:
        if threading.get_ident() != me:
            return orig_carry(name, body_fun, in_carry, out_carry)
        promos = list(pending)
        pending.clear()
        user_body = fori_user_body(body_fun)
        obs = CarryObservation(
            api=name,
            primitive="scan" if name.startswith("scan") else "while",
            fori=user_body is not None,
            labels=("carry in", "carry out"),
            functions=(user_body or body_fun, user_body or body_fun),
            paths=_keystrs(in_carry),
            out_paths=_keystrs(out_carry),
            avals=(list(in_carry), list(out_carry)),
            trees=(str(in_carry.tree), str(out_carry.tree)),
            call_source=_snippet_caller(),
        )
        if len(promos) == len(obs.paths) and any(c for _, _, c in promos):
            obs.initial = [a for a, _, _ in promos]
            obs.promoted = [c for _, _, c in promos]
        else:
            obs.promoted = [False] * len(obs.paths)
        records.append(obs)
        return _observe(
            obs, in_carry, out_carry, lambda: orig_carry(name, body_fun, in_carry, out_carry)
        )

    def check_branches(
        api_name: str, name1: str, name2: str, f1: Any, f2: Any, out_avals1: Any, out_avals2: Any
    ) -> None:
        args = (api_name, name1, name2, f1, f2, out_avals1, out_avals2)
        if threading.get_ident() != me:
            orig_branch(*args)
            return
        obs = CarryObservation(
            api=api_name,
            primitive="cond",
            fori=False,
            labels=(name1, name2),
            functions=(f1, f2),
            paths=_keystrs(out_avals1),
            out_paths=_keystrs(out_avals2),
            avals=(list(out_avals1), list(out_avals2)),
            trees=(str(out_avals1.tree), str(out_avals2.tree)),
            promoted=[False] * len(out_avals1.vals),
            call_source=_snippet_caller(),
        )
        records.append(obs)
        _observe(obs, out_avals1, out_avals2, lambda: orig_branch(*args))

    with _lock:
        loops._check_carry_type = check_carry
        loops._promote_weak_typed_input = promote
        conditionals._check_branch_outputs = check_branches
        try:
            yield records
        finally:
            loops._check_carry_type = orig_carry
            loops._promote_weak_typed_input = orig_promote
            conditionals._check_branch_outputs = orig_branch


def iter_eqns(jaxpr: core.Jaxpr, top: int | None = None) -> Iterator[tuple[int, core.JaxprEqn]]:
    """Every eqn of ``jaxpr`` and of the jaxprs nested in its params, depth first, each with the
    index of the top-level eqn that contains it."""
    for i, eqn in enumerate(jaxpr.eqns):
        index = i if top is None else top
        yield index, eqn
        for inner in core.jaxprs_in_params(eqn.params):
            yield from iter_eqns(inner, index)


def carry_avals(eqn: core.JaxprEqn) -> tuple[list[Any], list[Any]]:
    """The carry avals of a ``scan``/``while`` eqn as its params define them: ``scan``:
    ``jaxpr.in_avals[num_consts:num_consts + num_carry]`` and ``jaxpr.out_avals[:num_carry]``;
    ``while``: ``body_jaxpr.in_avals[body_nconsts:]`` and ``body_jaxpr.out_avals``. Others:
    ``([], [])``."""
    p = eqn.params
    if eqn.primitive.name == "scan":
        j, nc, nk = p["jaxpr"], p["num_consts"], p["num_carry"]
        return list(j.in_avals[nc : nc + nk]), list(j.out_avals[:nk])
    if eqn.primitive.name == "while":
        j, nc = p["body_jaxpr"], p["body_nconsts"]
        return list(j.in_avals[nc:]), list(j.out_avals)
    return [], []


def branch_out_avals(eqn: core.JaxprEqn) -> list[list[Any]]:
    """The output avals of each branch of a ``cond`` eqn, in ``params['branches']`` order
    (``cond`` stores ``(false_fun, true_fun)``)."""
    if eqn.primitive.name != "cond":
        return []
    return [list(b.out_avals) for b in eqn.params["branches"]]


def eqn_snippet_line(eqn: core.JaxprEqn) -> int | None:
    """The innermost snippet line of ``eqn.source_info``."""
    from jaxscope.internals.views import snippet_source

    loc = snippet_source(eqn.source_info.traceback)
    return loc.line if loc is not None else None
