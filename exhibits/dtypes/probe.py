"""The dtypes exhibit: JAX's type promotion table and the result type of the snippet's arguments,
with ``jax_enable_x64`` off and on.

The table is ``jnp.promote_types`` over the types of JAX's promotion lattice (the 15 dtypes and
the three weak types, in the order of JAX's type promotion docs), once per x64 setting. Whether a
join is a weak type is ``jax.dtypes.result_type(a, b, return_weak_type_flag=True)`` on arrays
of the two types, made with x64 on: JAX does not canonicalize the dtype of an existing array, so
the flag is the join's at either setting. What an array of the join is under the setting is
``jax.dtypes.canonicalize_dtype`` of it. Then the snippet's argument leaves: each one's node
under either setting (its own ``result_type``), their ``result_type``, and the cells of the table
that fold them into it.

x64 is set only inside ``with jax.enable_x64(...)`` (JAX's context manager), so the run leaves
``jax.config`` as the snippet left it.

Last, the dtype changes JAX made without being asked, under the snippet's own setting
(:class:`DtypeChangesFound`): with x64 off, a numpy argument of a 64-bit type whose values
change when JAX canonicalizes it to 32 bits (what JAX holds is read back from
``jax.device_put``; a note when they are only rounded, a finding when some are corrupted:
``demotions.py``), then ``f``'s implicit promotions that last to an output (findings;
``jaxscope.internals.dtype_changes``, on ``jax.make_jaxpr(f)``), then the bfloat16/float16
results that lose what float32 keeps (``precision.py``: ``f`` run eqn by eqn as written and in
float32; findings, each with the fix its eqn takes).
"""

from __future__ import annotations

import contextlib
import functools
import warnings
from collections.abc import Iterator
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jaxscope.exhibit_api import (
    CallPlan,
    ProbeContext,
    Promotion,
    SourceLoc,
    dtype_eqn_count,
    dtype_promotions,
    plan_call,
    setting_line,
)

from .demotions import demotion
from .events import (
    ArgumentDtype,
    DtypeChange,
    DtypeChangesFound,
    JaxType,
    PromotionCell,
    PromotionStep,
    PromotionTabulated,
    ResultTypeAnswer,
    ResultTypeComputed,
)
from .precision import flat_arguments, precision_changes

# The lattice's dtypes, in the order of the table in JAX's type promotion docs; then the weak
# types, which JAX's promote_types takes as the Python types themselves.
STRONG: tuple[str, ...] = (
    "bool",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "int8",
    "int16",
    "int32",
    "int64",
    "bfloat16",
    "float16",
    "float32",
    "float64",
    "complex64",
    "complex128",
)
WEAK: tuple[type, ...] = (int, float, complex)

# Narrow dtypes JAX also defines (kept where this JAX has them): dead ends of its lattice, with no
# type above them, so promoting one with a wider type raises. The table leaves them out, as JAX's
# docs do; the event names them.
NARROW: tuple[str, ...] = (
    "int1",
    "int2",
    "int4",
    "uint1",
    "uint2",
    "uint4",
    "float4_e2m1fn",
    "float6_e2m3fn",
    "float6_e3m2fn",
    "float8_e3m4",
    "float8_e4m3",
    "float8_e4m3b11fnuz",
    "float8_e4m3fn",
    "float8_e4m3fnuz",
    "float8_e5m2",
    "float8_e5m2fnuz",
    "float8_e8m0fnu",
)

_SHORT = (("bfloat", "bf"), ("float", "f"), ("complex", "c"), ("uint", "u"), ("int", "i"))


def short_name(dtype: Any) -> str:
    """The dtype as a jaxpr writes it: ``i32``, ``u8``, ``bf16``, ``f32``, ``c64``, ``bool``."""
    name: str = jnp.dtype(dtype).name
    for long, short in _SHORT:
        if name.startswith(long):
            return short + name.removeprefix(long)
    return name


def jax_type(dtype: Any, weak: bool) -> JaxType:
    """The lattice node of ``dtype`` (weakly typed or not): a weak int, float or complex of any
    width is ``i*``, ``f*``, ``c*`` (JAX's ``_jax_type``); a bool is never weak."""
    dt = jnp.dtype(dtype)
    if weak and dt != np.bool_:
        for kind, code in ((jnp.integer, "i*"), (jnp.floating, "f*"), (jnp.complexfloating, "c*")):
            if jnp.issubdtype(dt, kind):
                return JaxType(code=code, dtype=dt.name, weak=True)
    return JaxType(code=short_name(dt), dtype=dt.name)


@contextlib.contextmanager
def x64_set(x64: bool) -> Iterator[None]:
    """``jax_enable_x64`` set to ``x64`` inside (JAX's own context manager). With x64 off JAX
    warns when it canonicalizes a 64-bit dtype to 32 bits: that is what the exhibit shows, so
    the warning is not repeated to the user (the filters are restored on exit)."""
    with jax.enable_x64(x64), warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        yield


def lattice_types() -> list[Any]:
    """The 18 types as ``jnp.promote_types`` takes them: dtypes, then Python int/float/complex."""
    return [*(jnp.dtype(name) for name in STRONG), *WEAK]


@functools.cache
def representatives() -> tuple[jax.Array, ...]:
    """A 0-d array of each lattice type, made with x64 on (a Python scalar makes a weakly typed
    one). JAX keeps an existing array's dtype whatever x64 says."""
    with jax.enable_x64(True):
        strong = [jnp.zeros((), name) for name in STRONG]
        weak = [jnp.asarray(t(0)) for t in WEAK]
    return (*strong, *weak)


def tabulate(x64: bool) -> PromotionTabulated:
    """``jnp.promote_types`` of every pair of lattice types with x64 set to ``x64``."""
    types = lattice_types()
    reps = representatives()
    nodes = [jax_type(np.dtype(t), i >= len(STRONG)) for i, t in enumerate(types)]
    with x64_set(x64):
        cells = []
        for a, ra in zip(types, reps, strict=True):
            row = []
            for b, rb in zip(types, reps, strict=True):
                join = jnp.promote_types(a, b)
                _, weak = jax.dtypes.result_type(ra, rb, return_weak_type_flag=True)
                result = jax.dtypes.canonicalize_dtype(join)
                row.append(PromotionCell(join=jax_type(join, weak), result=result.name))
            cells.append(row)
        unpromoted = [name for name in NARROW if hasattr(jnp, name)]
        error = ""
        if unpromoted:
            try:
                jnp.promote_types(getattr(jnp, unpromoted[0]), jnp.float32)
            except jax.dtypes.TypePromotionError as exc:
                error = str(exc)
    return PromotionTabulated(
        x64=x64, types=nodes, cells=cells, unpromoted=unpromoted, unpromoted_error=error
    )


def leaf_paths(prefix: str, tree: Any) -> list[tuple[str, Any]]:
    """``(key path, leaf)`` of each leaf of ``tree`` in JAX's flattening order."""
    leaves, _ = jax.tree_util.tree_flatten_with_path(tree)
    return [(prefix + jax.tree_util.keystr(path), leaf) for path, leaf in leaves]


def argument_leaves(plan: CallPlan) -> list[tuple[str, Any]]:
    """The leaves of the positional arguments that are not static, then of the keywords; a
    typed PRNG key (``jax.random.key``: an extended dtype, outside the promotion lattice, which
    ``result_type`` refuses) is left out."""
    n = len(plan.args)
    static = {i % n for i in plan.static_argnums} if n else set()
    leaves = [
        leaf
        for i, a in enumerate(plan.args)
        if i not in static
        for leaf in leaf_paths(f"args[{i}]", a)
    ]
    return [
        (path, leaf)
        for path, leaf in leaves + leaf_paths("kwargs", plan.kwargs)
        if not jnp.issubdtype(getattr(leaf, "dtype", float), jax.dtypes.extended)
    ]


def python_type(leaf: Any) -> str:
    """What the leaf is, as the user wrote it: ``jax.Array``, ``numpy.ndarray``,
    ``numpy.int8`` (a numpy scalar), ``float``."""
    if isinstance(leaf, jax.Array):
        return "jax.Array"
    cls = type(leaf)
    module = cls.__module__.split(".")[0]
    return cls.__name__ if module == "builtins" else f"{module}.{cls.__name__}"


def node_of(leaf: Any, x64: bool) -> JaxType:
    """The lattice node JAX promotes ``leaf`` as, with x64 set to ``x64``."""
    with x64_set(x64):
        dtype, weak = jax.dtypes.result_type(leaf, return_weak_type_flag=True)
    return jax_type(dtype, weak)


def answer(leaves: list[Any], nodes: list[JaxType], table: PromotionTabulated) -> ResultTypeAnswer:
    """The result type of ``leaves`` with ``table``'s x64 setting, and the table's cells that
    fold ``nodes`` into it, left to right."""
    with x64_set(table.x64):
        dtype, weak = jax.dtypes.result_type(*leaves, return_weak_type_flag=True)
    index = {t.code: i for i, t in enumerate(table.types)}
    steps: list[PromotionStep] = []
    acc = nodes[0].code
    for node in nodes[1:]:
        join = table.cells[index[acc]][index[node.code]].join.code
        steps.append(PromotionStep(row=acc, col=node.code, join=join))
        acc = join
    result = jax_type(dtype, weak)
    return ResultTypeAnswer(
        x64=table.x64, dtype=result.dtype, weak=result.weak, code=result.code, steps=steps
    )


def run(ctx: ProbeContext) -> None:
    """The table with x64 off, then on; then the result type of the snippet's arguments."""
    config: Any = jax.config  # untyped in JAX
    user_x64 = bool(config.read("jax_enable_x64"))
    tables = [tabulate(False), tabulate(True)]
    for table in tables:
        ctx.emit(table)
    plan = plan_call(ctx.snippet)
    leaves = argument_leaves(plan)
    args = [
        ArgumentDtype(
            path=path,
            python_type=python_type(leaf),
            x64_off=node_of(leaf, False),
            x64_on=node_of(leaf, True),
        )
        for path, leaf in leaves
    ]
    answers = []
    if leaves:
        values = [leaf for _, leaf in leaves]
        answers = [
            answer(values, [a.x64_on if t.x64 else a.x64_off for a in args], t) for t in tables
        ]
    ctx.emit(ResultTypeComputed(args=args, answers=answers, user_x64=user_x64))
    changes = [] if user_x64 else demotions(leaves, setting_line(ctx.snippet.source, "args"))
    closed = plan.make_jaxpr()
    changes += [promoted(p) for p in dtype_promotions(closed)]
    lost, unchecked = precision_changes(closed, flat_arguments(plan.dynamic_args(), plan.kwargs))
    changes += lost
    ctx.emit(
        DtypeChangesFound(
            x64=user_x64,
            changes=changes,
            eqns_read=dtype_eqn_count(closed),
            precision_unchecked=unchecked,
        )
    )


def promoted(p: Promotion) -> DtypeChange:
    """A promotion as a change: a finding, unless its wider operand was made wide on purpose
    (``deliberate``: an explicit upcast, ``preferred_element_type``, ``dtype=``); then a note
    whose fix upcasts the narrow side, since narrowing the other would undo the upcast
    (``docs/design/0062``)."""
    fields = {k: v for k, v in vars(p).items() if k != "deliberate"}
    if not p.deliberate:
        return DtypeChange(kind="promoted", **fields)
    return DtypeChange(
        kind="promoted",
        **fields,
        finding=False,
        fix=f"upcast the {p.from_dtype} operand on purpose where it meets the {p.to_dtype} value"
        f" (`x.astype(jnp.{p.to_dtype})`) and keep the {p.to_dtype} side as it is: it was made"
        f" {p.to_dtype} on purpose, and narrowing it to {p.from_dtype} would undo that",
    )


def _at(path: str, index: tuple[int, ...]) -> str:
    return path + ("[" + ", ".join(map(str, index)) + "]" if index else "")


def demotions(leaves: list[tuple[str, Any]], line: int | None) -> list[DtypeChange]:
    """The numpy leaves (arrays and scalars; a ``jax.Array`` is already what JAX holds, a
    Python scalar is weakly typed) whose values change when JAX takes them with x64 off: what
    JAX holds is ``jax.device_put(leaf)``, compared with the leaf in the leaf's dtype. A leaf
    whose values are only rounded is a note; one with values corrupted (overflow, underflow,
    a whole number lost, an integer wrapped: ``demotions.py``) is a finding."""
    out: list[DtypeChange] = []
    for path, leaf in leaves:
        if isinstance(leaf, jax.Array) or not isinstance(leaf, (np.ndarray, np.generic)):
            continue
        before = np.asarray(leaf)
        with x64_set(False), np.errstate(over="ignore"):  # numpy warns of the cast's overflow
            held = np.asarray(jax.device_put(before))
        if held.dtype == before.dtype:
            continue
        found = demotion(before, held)
        changed = np.argwhere(found.changed)
        if not len(changed):
            continue
        index = tuple(int(i) for i in changed[0])
        corrupted = np.argwhere(found.corrupted)
        bad = tuple(int(i) for i in corrupted[0]) if len(corrupted) else None
        out.append(
            DtypeChange(
                kind="demoted",
                api=path,
                source=SourceLoc(line=line) if line else None,
                from_dtype=before.dtype.name,
                to_dtype=held.dtype.name,
                from_type=f"{short_name(before.dtype)}{list(before.shape)}".replace(" ", ""),
                to_type=f"{short_name(held.dtype)}{list(held.shape)}".replace(" ", ""),
                changed=len(changed),
                total=int(before.size),
                example=f"{_at(path, index)}: {before[index].item()!r} -> {held[index].item()!r}",
                corrupted=len(corrupted),
                corruption=found.first_corruption,
                corrupt_example=None
                if bad is None
                else f"{_at(path, bad)}: {before[bad].item()!r} -> {held[bad].item()!r}",
                finding=bad is not None,
            )
        )
    return out
