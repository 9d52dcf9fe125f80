"""shard_map's checks, run one at a time with JAX's own helpers (``jax/_src/shard_map.py``).

``jax.shard_map(f, mesh=, in_specs=, out_specs=)(*args)`` checks, in this order (0.10.2):

1. ``unknown_axis``  — every name in ``in_specs``/``out_specs`` is a manual mesh axis
   (``_shmap_checks`` -> ``_check_specs``; ValueError, or TypeError for a non-``P`` leaf);
2. ``in_arity``      — ``in_specs`` is a tree prefix of ``args`` (``broadcast_prefix``, error
   text from ``prefix_errors(...)('shard_map in_specs')``);
3. ``spec_rank``     — no ``in_specs`` entry is longer than its argument's rank and
4. ``divisibility``  — each sharded array axis divides by the mesh axes named for it (both in
   ``_check_specs_vs_args``; messages ``_spec_rank_error`` / ``_spec_divisibility_error``);
   then the body is traced at the per-device avals (``_shard_map_staging``) and
5. ``out_arity``     — ``out_specs`` is a tree prefix of the body's outputs;
6. ``out_rank``      — no ``out_specs`` entry is longer than its output's rank (``_check_names``);
7. ``replication``   — with ``check_vma=True``, an output is not varying over a mesh axis its
   ``out_specs`` entry leaves unmentioned (``_check_mats`` -> ``_valid_repeats``, message
   ``_inout_vma_error``);
8. ``duplicate_axis`` — when ``jax.jit`` lowers it, each spec names a mesh axis at most once
   (``NamedSharding`` -> ``_check_unique_resources``, ``DuplicateSpecError``).

The first failure is the one JAX raises; later checks are ``not_reached``. The varying manual
axes of a value are ``aval.mat.varying`` (``core.ManualAxisType``; 0.10.2 has no ``aval.vma``).
Every private name here has a contract test (``tests/test_internals_contract_shard_map.py``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from math import prod
from typing import Any, Literal

import jax
from jax._src import core
from jax._src import shard_map as sm
from jax._src.tree_util import (
    FlatTree,
    broadcast_prefix,
    generate_key_paths,
    keystr,
    prefix_errors,
    tree_flatten,
)
from jax.sharding import PartitionSpec as P

from jaxscope.user_text import cut_message, exception_class, exception_text

# Which specs a fault is in, and what became of a check: the records' words, the same as the
# wire's (``exhibits/shard_map/events.py``; the contract test holds them equal), from which the
# shard_map probe builds its events (design 0059).
SpecsName = Literal["in_specs", "out_specs"]
CheckStatus = Literal["passed", "failed", "not_reached", "off"]

CHECK_NAMES = (
    "unknown_axis",
    "in_arity",
    "spec_rank",
    "divisibility",
    "out_arity",
    "out_rank",
    "replication",
    "duplicate_axis",
)

CHECK_TITLES = {
    "unknown_axis": "every spec names only manual mesh axes",
    "in_arity": "in_specs is a tree prefix of args",
    "spec_rank": "no in_specs entry is longer than its argument's rank",
    "divisibility": "each sharded array axis divides by its mesh axes",
    "out_arity": "out_specs is a tree prefix of the body's outputs",
    "out_rank": "no out_specs entry is longer than its output's rank",
    "replication": "outputs do not vary over axes their out_specs leave out (check_vma)",
    "duplicate_axis": "no spec names a mesh axis at two positions (checked when lowering)",
}

CHECK_SOURCES = {
    "unknown_axis": "_shmap_checks -> _check_specs",
    "in_arity": "broadcast_prefix / prefix_errors",
    "spec_rank": "_check_specs_vs_args -> _spec_rank_error",
    "divisibility": "_check_specs_vs_args -> _spec_divisibility_error",
    "out_arity": "broadcast_prefix / prefix_errors",
    "out_rank": "_check_names -> _spec_rank_error",
    "replication": "_check_mats -> _valid_repeats / _inout_vma_error",
    "duplicate_axis": "lowering: NamedSharding(mesh, spec) -> _check_unique_resources",
}

# Collective primitives: the ``core.Primitive`` objects defined in ``jax._src.lax.parallel``
# (psum, psum_invariant, all_gather, ppermute, all_to_all, reduce_scatter, axis_index, pvary,
# ...); their mesh axis names are in the ``axes`` or ``axis_name`` param.
_AXIS_PARAMS = ("axes", "axis_name")


def parallel_primitives() -> frozenset[core.Primitive]:
    """Every primitive object of ``jax._src.lax.parallel`` (JAX's collectives), plus
    ``core.pvary_p`` (the cast that marks a value varying, inserted by auto_pcast)."""
    from jax._src.lax import parallel

    prims = {v for v in vars(parallel).values() if isinstance(v, core.Primitive)}
    return frozenset(prims | {core.pvary_p})


@dataclass
class Fault:
    """A spec entry at fault: ``specs`` is ``in_specs``/``out_specs``, ``path`` the key path of
    the ``P`` in that tree (``keystr``, ``""`` for a bare ``P``), ``spec`` its ``str``, ``entries``
    the positions inside the ``P`` at fault (empty: the whole spec or tree), ``axes`` the mesh
    axes involved (the unknown name, the non-dividing axes, the unmentioned varying axes)."""

    specs: SpecsName
    path: str
    spec: str
    entries: list[int] = field(default_factory=list)
    axes: list[str] = field(default_factory=list)


@dataclass
class CheckResult:
    """One check: ``status`` is ``passed``, ``failed``, ``not_reached`` or ``off``."""

    name: str
    status: CheckStatus
    error_class: str | None = None
    message: str | None = None
    faults: list[Fault] = field(default_factory=list)


@dataclass
class BodyObserved:
    """What the body saw: the avals of its inputs and outputs (per device, with ``mat``) and
    the pytree of its outputs. Filled by :func:`observing` while JAX traces the body."""

    in_avals: list[Any] = field(default_factory=list)
    out_avals: list[Any] = field(default_factory=list)
    in_vma: list[list[str]] = field(default_factory=list)
    out_vma: list[list[str]] = field(default_factory=list)
    out_tree: Any = None
    out_value: Any = None
    reached: bool = False


def axis_names_of(mesh: Any) -> frozenset[Any]:
    """The manual axes of a full shard_map (``axis_names=frozenset()``), computed as
    ``_shmap_checks`` does (the same frozenset, so JAX's messages print it in the same order)."""
    explicit: frozenset[Any] = core.get_axis_env().explicit_mesh_axis_names
    return frozenset(mesh.axis_names) - explicit


def varying_axes(aval: Any, mesh: Any) -> list[str]:
    """The varying manual axes of ``aval`` (``aval.mat.varying``), in mesh order as JAX
    prints them (``{V:(x,y)}``), as strings."""
    mat = getattr(aval, "mat", None)
    if mat is None:
        return []
    return [str(n) for n in mesh.axis_names if n in mat.varying]


def observing(f: Callable[..., Any], seen: BodyObserved, mesh: Any) -> Callable[..., Any]:
    """``f`` wrapped (``functools.wraps``: same name and signature in JAX's messages) to record
    ``jax.typeof`` of the body's inputs and outputs while ``shard_map`` traces it."""

    @functools.wraps(f)
    def body(*args: Any) -> Any:
        seen.reached = True
        seen.in_avals = [jax.typeof(a) for a in jax.tree.leaves(args)]
        seen.in_vma = [varying_axes(a, mesh) for a in seen.in_avals]
        out = f(*args)
        leaves, seen.out_tree = tree_flatten(out)
        seen.out_value = out
        seen.out_avals = [jax.typeof(o) for o in leaves]
        seen.out_vma = [varying_axes(a, mesh) for a in seen.out_avals]
        return out

    return body


def _error(check: str, exc: BaseException) -> CheckResult:
    # cut as run_failed's are (a spec tree or f's name can make JAX's message any length)
    return CheckResult(check, "failed", exception_class(exc), exception_text(exc))


def _spec_paths(specs: Any) -> list[tuple[str, Any]]:
    return [(keystr(k), p) for k, p in generate_key_paths(specs)]


def _unknown_faults(which: SpecsName, specs: Any, manual: frozenset[Any]) -> list[Fault]:
    faults = []
    for path, p in _spec_paths(specs):
        if not isinstance(p, P):
            faults.append(Fault(which, path, str(p)))
            continue
        bad = [
            (i, n)
            for i, names in enumerate(p)
            for n in (names if isinstance(names, tuple) else (names,))
            if n is not None and n not in manual
        ]
        if bad:
            faults.append(
                Fault(which, path, str(p), sorted({i for i, _ in bad}), [str(n) for _, n in bad])
            )
    return faults


class _Marked:
    """A spec with its key path, opaque to pytrees (as JAX's ``Tup`` in ``_iter_paths``)."""

    def __init__(self, path: str, spec: Any) -> None:
        self.path, self.spec = path, spec


def spec_leaf_paths(specs: Any, tree: Any) -> list[tuple[str, Any]]:
    """(spec path, spec) for every leaf of ``tree``, in leaf order (the prefix broadcast)."""
    marked = jax.tree.unflatten(
        jax.tree.structure(specs, is_leaf=lambda x: x is None),
        [_Marked(keystr(k), p) for k, p in generate_key_paths(specs)],
    )
    flat = broadcast_prefix(marked, tree, is_leaf=lambda x: x is None)
    return [(m.path, m.spec) if m is not None else ("", None) for m in flat]


def check_before_body(
    f: Callable[..., Any], mesh: Any, in_specs: Any, out_specs: Any, args: tuple[Any, ...]
) -> list[CheckResult]:
    """Checks 1-4 (before the body is traced), with JAX's helpers; a failed check makes the
    later ones ``not_reached``."""
    manual = axis_names_of(mesh)
    results: list[CheckResult] = []

    # 1. unknown axis (in_specs, then out_specs), exactly as _shmap_checks calls it.
    try:
        sm._check_specs(sm.SpecErrorType.input, in_specs, manual)
        sm._check_specs(sm.SpecErrorType.out, out_specs, manual)
        results.append(CheckResult("unknown_axis", "passed"))
    except (ValueError, TypeError) as exc:
        r = _error("unknown_axis", exc)
        r.faults = _unknown_faults("in_specs", in_specs, manual) or _unknown_faults(
            "out_specs", out_specs, manual
        )
        return [*results, r]

    # 2. in_specs arity / tree prefix.
    try:
        in_specs_flat = broadcast_prefix(in_specs, args, is_leaf=lambda x: x is None)
        results.append(CheckResult("in_arity", "passed"))
    except ValueError:
        e, *_ = prefix_errors(in_specs, args)
        r = _error("in_arity", e("shard_map in_specs"))
        r.faults = [Fault("in_specs", "", str(in_specs))]
        return [*results, r]

    # 3./4. rank and divisibility, one call as in JAX.
    args_flat, in_tree = tree_flatten(args)
    which_dyn = [s is not None for s in in_specs_flat]
    dyn_args = [x for x, d in zip(args_flat, which_dyn, strict=True) if d]
    specs_dyn = tuple(s for s, d in zip(in_specs_flat, which_dyn, strict=True) if d)
    dyn_argnums = [i for i, d in enumerate(which_dyn) if d]
    try:
        sm._check_specs_vs_args(f, mesh, in_tree, in_specs, dyn_argnums, specs_dyn, dyn_args)
        results.append(CheckResult("spec_rank", "passed"))
        results.append(CheckResult("divisibility", "passed"))
        return results
    except ValueError as exc:
        avals = [core.shaped_abstractify(x) for x in dyn_args]
        paths = [pp for pp, d in zip(spec_leaf_paths(in_specs, args), which_dyn, strict=True) if d]
        rank_bad = any(
            isinstance(p, P) and len(p) > a.ndim for p, a in zip(specs_dyn, avals, strict=True)
        )
        if rank_bad:
            r = _error("spec_rank", exc)
            for (path, p), a in zip(paths, avals, strict=True):
                if isinstance(p, P) and len(p) > a.ndim:
                    r.faults.append(Fault("in_specs", path, str(p), list(range(a.ndim, len(p)))))
            return [*results, r]
        results.append(CheckResult("spec_rank", "passed"))
        r = _error("divisibility", exc)
        for (path, p), a in zip(paths, avals, strict=True):
            if not isinstance(p, P):
                continue
            bad = {
                d: ns
                for d, ns in sm._spec_to_names(p).items()
                if a.shape[d] % prod(mesh.shape[n] for n in ns)
            }
            if bad:
                axes = [str(n) for ns in bad.values() for n in ns]
                r.faults.append(Fault("in_specs", path, str(p), sorted(bad), axes))
        return [*results, r]


def check_after_body(
    f: Callable[..., Any], mesh: Any, out_specs: Any, seen: BodyObserved, check_vma: bool
) -> list[CheckResult]:
    """Checks 5-7 on the outputs the body returned (``seen``), with JAX's helpers."""
    results: list[CheckResult] = []
    out = seen.out_value
    try:
        specs_flat = tuple(broadcast_prefix(out_specs, out))
        results.append(CheckResult("out_arity", "passed"))
    except ValueError:
        e, *_ = prefix_errors(out_specs, out)
        r = _error("out_arity", e("shard_map out_specs"))
        r.faults = [Fault("out_specs", "", str(out_specs))]
        return [*results, r]
    avals = FlatTree(seen.out_avals, seen.out_tree, (None,) * len(seen.out_avals))
    spec_paths = spec_leaf_paths(out_specs, out)
    try:
        sm._check_names(specs_flat, avals)
        results.append(CheckResult("out_rank", "passed"))
    except sm._SpecError as exc:
        fails, out_tree = exc.args
        msg = sm._spec_rank_error(sm.SpecErrorType.out, f, out_tree, out_specs, fails)
        if any(fail is not sm.no_fail and not fail.shape for fail in fails):
            msg += (
                " In particular, for rank 0 outputs which are not constant "
                "over the mesh, add at least one (singleton) axis to them so "
                "that they can be concatenated using out_specs."
            )
        r = CheckResult("out_rank", "failed", "ValueError", cut_message(msg))
        for (path, p), fail in zip(spec_paths, fails, strict=True):
            if fail is not sm.no_fail:
                r.faults.append(Fault("out_specs", path, str(p), list(range(fail.ndim, len(p)))))
        return [*results, r]
    if not check_vma:
        return [*results, CheckResult("replication", "off")]
    try:
        sm._check_mats(mesh, specs_flat, avals)
        results.append(CheckResult("replication", "passed"))
    except sm._RepError as exc:
        fails, out_tree = exc.args
        msg = sm._inout_vma_error(f, mesh, out_tree, out_specs, fails)
        r = CheckResult("replication", "failed", "ValueError", cut_message(msg))
        for (path, p), fail in zip(spec_paths, fails, strict=True):
            if fail is not sm.no_fail:
                axes = [str(n) for n in sm._unmentioned(mesh, p) if n in fail.varying]
                r.faults.append(Fault("out_specs", path, str(p), [], axes))
        results.append(r)
    return results


def check_duplicates(mesh: Any, in_specs: Any, out_specs: Any) -> CheckResult:
    """Check 8, made when ``jax.jit`` lowers the shard_map (after the body was traced): each
    spec names a mesh axis at most once, as ``NamedSharding(mesh, spec)`` requires (it raises
    JAX's ``DuplicateSpecError``)."""
    trees: tuple[tuple[SpecsName, Any], ...] = (("in_specs", in_specs), ("out_specs", out_specs))
    for which, specs in trees:
        for path, p in _spec_paths(specs):
            if not isinstance(p, P):
                continue
            try:
                jax.sharding.NamedSharding(mesh, p)
            except Exception as exc:  # DuplicateSpecError is not a ValueError
                if type(exc).__name__ != "DuplicateSpecError":
                    raise
                r = _error("duplicate_axis", exc)
                named = [
                    (i, str(n))
                    for i, names in enumerate(p)
                    for n in (names if isinstance(names, tuple) else (names,))
                    if n is not None
                ]
                twice = sorted({n for _, n in named if [m for _, m in named].count(n) > 1})
                entries = sorted({i for i, n in named if n in twice})
                r.faults = [Fault(which, path, str(p), entries, twice)]
                return r
    return CheckResult("duplicate_axis", "passed")


def _last_failed(results: list[CheckResult]) -> bool:
    """Whether the last check run failed (JAX stops there). A function, not ``results[-1]``
    twice in one body: mypy would keep the first comparison's narrowing after ``results``
    grows."""
    return results[-1].status == "failed"


def all_checks(
    f: Callable[..., Any],
    mesh: Any,
    in_specs: Any,
    out_specs: Any,
    args: tuple[Any, ...],
    seen: BodyObserved,
    check_vma: bool,
) -> list[CheckResult]:
    """Every check in JAX's order; those after the first failure are ``not_reached``."""
    results = check_before_body(f, mesh, in_specs, out_specs, args)
    if not _last_failed(results) and seen.reached and seen.out_tree is not None:
        results += check_after_body(f, mesh, out_specs, seen, check_vma)
        if not _last_failed(results):
            results.append(check_duplicates(mesh, in_specs, out_specs))
    done = {r.name for r in results}
    return results + [CheckResult(n, "not_reached") for n in CHECK_NAMES if n not in done]


def shard_map_eqn_body(closed: core.ClosedJaxpr) -> core.ClosedJaxpr | None:
    """The body jaxpr of the (first) ``shard_map`` eqn of ``closed``, closed with no consts
    (shard_map's staging turns the body's consts into leading inputs)."""
    for eqn in closed.jaxpr.eqns:
        if eqn.primitive.name == "shard_map":
            return core.ClosedJaxpr(eqn.params["jaxpr"], ())
    return None


def body_in_specs(closed: core.ClosedJaxpr) -> list[str]:
    """``in_specs`` of the shard_map eqn as staged (hoisted consts first), one ``str`` each."""
    for eqn in closed.jaxpr.eqns:
        if eqn.primitive.name == "shard_map":
            return [str(s) for s in eqn.params["in_specs"]]
    return []


def communicates(primitive: core.Primitive) -> bool:
    """Whether a collective moves data between devices (``pvary`` only changes the type)."""
    return primitive is not core.pvary_p


def collective_eqns(body: core.ClosedJaxpr) -> list[tuple[int, Any, list[str]]]:
    """``(index, eqn, axis names)`` of every eqn of the body (top level) whose primitive is one
    of :func:`parallel_primitives` (psum, psum_invariant, all_gather, ppermute, ...)."""
    found = []
    collectives = parallel_primitives()
    for i, eqn in enumerate(body.jaxpr.eqns):
        if eqn.primitive not in collectives:
            continue
        for key in _AXIS_PARAMS:
            if key in eqn.params:
                names = eqn.params[key]
                names = names if isinstance(names, (tuple, list, frozenset, set)) else (names,)
                found.append((i, eqn, [str(n) for n in names]))
                break
    return found


def var_vma(var: Any, mesh: Any) -> list[str]:
    """The varying manual axes of a jaxpr variable's aval (``aval.mat.varying``)."""
    return varying_axes(var.aval, mesh)
