"""The export exhibit's backend half: ``jax.export.export(jax.jit(f))`` of the snippet's ``f``,
its ``Exported`` fields and StableHLO module, the dimension variables JAX solved and the
constraints it asserts, and a round trip (``serialize`` -> ``deserialize`` -> ``call``) against
``jax.jit(f)`` (``events.py``).

The snippet contract beyond ``f``/``args`` (``docs/design/0030-export.md``):

- ``shapes``: ``jax.export`` shape specifications, one per positional argument (a list as long
  as ``args``; ``None`` keeps an argument's concrete shapes), or one string for every
  argument, as ``jax.export.symbolic_args_specs`` takes them: ``shapes = [None, "(b, 8)"]``.
- ``constraints``: explicit symbolic constraints (``["b <= 64"]``), ``symbolic_args_specs``'.
- ``platforms``: ``export``'s ``platforms`` (``["cpu", "cuda"]``); unset: the default backend's.

Runs inside the sandbox worker. Public ``jax.export`` here; the dimension solving reads JAX's
private ``shape_poly`` through ``jaxscope.internals.api``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import jax
import numpy as np
from jaxscope.exhibit_api import (
    CallPlan,
    InvalidSnippet,
    ProbeContext,
    aval_view,
    blame_line,
    plan_call,
    setting_line,
    solved_dims,
)

from .events import (
    ArgumentSpec,
    DimConstraintView,
    DimsSolved,
    DimVariable,
    ExportedAval,
    ExportSpecsBuilt,
    FunctionExported,
    StablehloExported,
)
from .roundtrip import dim_values_of, flat_paths, out_paths, round_trip


def run(ctx: ProbeContext) -> None:
    """Build the specifications, export, then show the module, the dimensions and the round
    trip. JAX's errors on ``f`` (a dimension that is not polymorphic) propagate to the runner,
    which reports them at the user's line."""
    plan = plan_call(ctx.snippet)
    source = ctx.snippet.source
    namespace = ctx.snippet.namespace
    dynamic = dynamic_indices(plan)
    refuse_shape_structs(plan, dynamic, source)
    specs = read_shapes(namespace.get("shapes"), plan, dynamic, setting_line(source, "shapes"))
    constraints = read_strings(namespace.get("constraints"), "constraints", source)
    platforms = read_strings(namespace.get("platforms"), "platforms", source)
    with ctx.stage("trace"):
        spec_args = build_specs(plan, dynamic, specs, constraints or [], source)
    dyn_specs = tuple(spec_args[i] for i in dynamic)
    ctx.emit(
        ExportSpecsBuilt(
            leaves=leaf_views((dyn_specs, plan.kwargs)),
            specs=[
                ArgumentSpec(index=i, spec=specs[i], static=i not in dynamic)
                for i in range(len(plan.args))
            ],
            constraints=constraints or [],
            platforms=platforms,
            shapes_line=setting_line(source, "shapes") if "shapes" in namespace else None,
            platforms_line=setting_line(source, "platforms") if platforms is not None else None,
            constraints_line=setting_line(source, "constraints") if constraints else None,
        )
    )
    jitted = jax.jit(plan.fun, static_argnums=plan.normalized_argnums())
    with ctx.stage("lower"):
        start = time.perf_counter()
        try:
            exported = jax.export.export(jitted, platforms=platforms)(*spec_args, **plan.kwargs)
        except ValueError as exc:
            # A platform JAX does not know is the `platforms` line's fault; anything else is
            # f's, and its traceback reaches the user's line.
            if platforms is not None and "platform" in str(exc).lower():
                raise blame_line(exc, setting_line(source, "platforms")) from None
            raise
        export_ms = (time.perf_counter() - start) * 1e3
        text = exported.mlir_module()
        blob_len = len(exported.serialize())
    ctx.emit(function_exported(exported, blob_len, export_ms))
    ctx.emit(
        StablehloExported(
            text=text,
            line_count=text.count("\n") + (0 if text.endswith("\n") else 1),
            byte_count=len(text.encode()),
            shape_assertions=text.count("@shape_assertion("),
        )
    )
    if exported.uses_global_constants and any(
        not isinstance(d, int) for a in exported.in_avals for d in a.shape
    ):
        ctx.emit(dims_solved(exported, plan, dynamic, text))
    with ctx.stage("call"):
        ctx.emit(round_trip(exported, plan, jitted, dynamic))


def dynamic_indices(plan: CallPlan) -> list[int]:
    """The positions of ``args`` that are traced (not in ``static_argnums``)."""
    static = set(plan.normalized_argnums())
    return [i for i in range(len(plan.args)) if i not in static]


def refuse_shape_structs(plan: CallPlan, dynamic: Sequence[int], source: str) -> None:
    """Refuse, at the ``args`` line, a ``jax.ShapeDtypeStruct`` argument (what the JAX docs
    export with, ``symbolic_shape("a, b")`` included): the export would work, but the round trip
    calls the module and ``jax.jit(f)`` on the arguments, which needs data. The message gives
    the snippet form of the same export: an example array, its specification in ``shapes``."""
    leaves = jax.tree_util.tree_flatten_with_path(tuple(plan.args[i] for i in dynamic))[0]
    for path, leaf in leaves:
        if isinstance(leaf, jax.ShapeDtypeStruct):
            dims = ", ".join(str(d) for d in leaf.shape)
            sizes = ", ".join(str(d) if isinstance(d, int) else "3" for d in leaf.shape)
            sizes += "," if len(leaf.shape) == 1 else ""
            where = "args" + jax.tree_util.keystr(path)
            raise blame_line(
                InvalidSnippet(
                    f"{where} is a jax.ShapeDtypeStruct ({dims}): this exhibit also calls the"
                    " exported module and jax.jit(f) on args, which needs data. Give an array of"
                    f" an example size, e.g. np.ones(({sizes}), np.{np.dtype(leaf.dtype).name}),"
                    f' and its symbolic shape in `shapes`, e.g. shapes = ["({dims})"] (one entry'
                    " per argument, None for one kept concrete)"
                ),
                setting_line(source, "args"),
            )


def read_shapes(
    value: Any, plan: CallPlan, dynamic: Sequence[int], line: int | None
) -> list[str | None]:
    """The snippet's ``shapes`` as one entry per positional argument (None: concrete)."""
    n = len(plan.args)
    if value is None:
        return [None] * n
    if isinstance(value, str):
        return [value if i in dynamic else None for i in range(n)]
    if not isinstance(value, (list, tuple)) or not all(
        v is None or isinstance(v, str) for v in value
    ):
        raise blame_line(
            InvalidSnippet(
                "`shapes` must be a str (for every argument) or a list with one str or None"
                f" per positional argument, got {value!r}"
            ),
            line,
        )
    if len(value) != n:
        raise blame_line(
            InvalidSnippet(f"`shapes` has {len(value)} entries but `args` has {n} arguments"),
            line,
        )
    for i, v in enumerate(value):
        if v is not None and i not in dynamic:
            raise blame_line(
                InvalidSnippet(f"`shapes[{i}]` is {v!r} but args[{i}] is static: use None"), line
            )
    return list(value)


def read_strings(value: Any, name: str, source: str) -> list[str] | None:
    """``platforms`` or ``constraints``: a list of str (one str is a list of one), or None."""
    if value is None:
        return None
    if isinstance(value, str):
        return [value]
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, str) for v in value):
        return list(value)
    raise blame_line(
        InvalidSnippet(f"`{name}` must be a non-empty list of str, got {value!r}"),
        setting_line(source, name),
    )


def build_specs(
    plan: CallPlan,
    dynamic: Sequence[int],
    specs: Sequence[str | None],
    constraints: Sequence[str],
    source: str,
) -> tuple[Any, ...]:
    """``args`` with each argument that has a shape specification replaced by
    ``jax.export.symbolic_args_specs`` of it (one symbolic scope for all, so that a ``b`` in two
    arguments is one variable); the others are passed as they are (their own avals: a Python
    scalar stays weakly typed). JAX's error on a bad specification is the ``shapes`` line's."""
    polymorphic = [i for i in dynamic if specs[i] is not None]
    if not polymorphic:
        return tuple(plan.args)
    try:
        symbolic = jax.export.symbolic_args_specs(
            tuple(plan.args[i] for i in polymorphic),
            tuple(specs[i] for i in polymorphic),
            constraints=tuple(constraints),
        )
    except Exception as exc:  # JAX's parser raises ValueError, TokenError, IndexError (rank)
        # A constraint JAX cannot parse ("b >= ") fails with a message that names no
        # constraint: the shapes are at fault only if they fail on their own too.
        at_fault = "shapes"
        if constraints and ("constraint" in str(exc) or _parse(plan, polymorphic, specs)):
            at_fault = "constraints"
        raise blame_line(exc, setting_line(source, at_fault)) from None
    by_index = dict(zip(polymorphic, symbolic, strict=True))
    return tuple(by_index.get(i, a) for i, a in enumerate(plan.args))


def _parse(plan: CallPlan, polymorphic: Sequence[int], specs: Sequence[str | None]) -> bool:
    """Whether the shape specifications alone (no constraints) are ones JAX accepts."""
    try:
        jax.export.symbolic_args_specs(
            tuple(plan.args[i] for i in polymorphic), tuple(specs[i] for i in polymorphic)
        )
    except Exception:
        return False
    return True


def leaf_views(tree: Any) -> list[ExportedAval]:
    """The flat leaves of ``(args, kwargs)`` (dynamic only) with their avals and key paths as
    JAX's messages name them (``args[1]``, ``kwargs['y']``)."""
    leaves = jax.tree_util.tree_leaves(tree)
    paths = flat_paths(jax.tree_util.tree_structure(tree))
    # jax.typeof reads an array's aval and a ShapeDtypeStruct's (symbolic dimensions included).
    return [aval_row(p, jax.typeof(leaf)) for p, leaf in zip(paths, leaves, strict=True)]


def aval_row(path: str, aval: Any) -> ExportedAval:
    """One flat argument or result with its aval (a ``ShapedArray``)."""
    return ExportedAval(path=path, aval=aval_view(aval), dims=[str(d) for d in aval.shape])


def function_exported(exported: Any, blob_len: int, export_ms: float) -> FunctionExported:
    """The ``Exported``'s public fields."""
    in_paths = flat_paths(exported.in_tree)

    def hlo(s: Any) -> str | None:
        return None if s is None else str(s)

    return FunctionExported(
        fun_name=exported.fun_name,
        in_avals=[aval_row(p, a) for p, a in zip(in_paths, exported.in_avals, strict=True)],
        out_avals=[
            aval_row(p, a)
            for p, a in zip(out_paths(exported.out_tree), exported.out_avals, strict=True)
        ],
        platforms=list(exported.platforms),
        calling_convention_version=exported.calling_convention_version,
        nr_devices=exported.nr_devices,
        module_kept_var_idx=list(exported.module_kept_var_idx),
        uses_global_constants=exported.uses_global_constants,
        disabled_safety_checks=[str(c) for c in exported.disabled_safety_checks],
        ordered_effects=[str(e) for e in exported.ordered_effects],
        unordered_effects=[str(e) for e in exported.unordered_effects],
        in_shardings_hlo=[hlo(s) for s in exported.in_shardings_hlo],
        out_shardings_hlo=[hlo(s) for s in exported.out_shardings_hlo],
        serialized_bytes=blob_len,
        export_ms=round(export_ms, 1),
    )


def dims_solved(exported: Any, plan: CallPlan, dynamic: Sequence[int], text: str) -> DimsSolved:
    """The dimension variables as JAX solves them, their values at ``args``, the constraints."""
    solved = solved_dims(exported.in_avals, exported.in_tree)
    try:
        values: dict[str, int | None] = dict(dim_values_of(exported, plan, dynamic))
    except ValueError:  # args break a constraint: the round trip shows JAX's refusal
        values = dict.fromkeys(solved.solution)
    return DimsSolved(
        variables=[
            DimVariable(name=v, solved_as=e, value=values[v]) for v, e in solved.solution.items()
        ],
        constraints=[
            DimConstraintView(
                text=c.text,
                left=c.left,
                comparator=c.comparator,
                right=c.right,
                message=c.message,
                message_inputs=list(c.message_inputs),
            )
            for c in solved.constraints
        ],
        shape_assertions=text.count("@shape_assertion("),
    )
