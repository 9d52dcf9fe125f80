"""The pmap exhibit's probe: ``jax.pmap(f)`` as JAX 0.10.2 builds it (a ``jit`` around a
``shard_map`` over a one-axis mesh), what each device receives and returns, the collectives as
data movement, and the same computation written with ``jax.jit`` + ``NamedSharding`` and with
``jax.shard_map``.

The snippet defines ``f`` (the function each device runs) and ``args``; optionally ``axis_name``
(pmap's; default ``None``, which JAX names ``_internal_pmap_axis_name``), ``in_axes`` (default
``0``), ``jit_version`` and ``shard_map_version`` (the same computation on the global arrays)
and ``mesh`` (where those two get their arguments placed; default pmap's own mesh).

Events, in order:

* stage ``trace``: :class:`JaxprStaged` of ``jax.make_jaxpr(jax.pmap(f, ...))(*args)``, then
  :class:`PmapTraced`: its ``jit`` eqn, the ``shard_map`` eqn inside, its body and collectives;
* stage ``run``: ``jax.pmap(f, ...)(*args)``; one ``sharding_placed`` (the sharding exhibit's)
  per flat argument placed as pmap places it (``NamedSharding(mesh, in_spec)``) and per output
  leaf as pmap returned it, then :class:`PmapDevicesRun`;
* :class:`PmapCollectivesMoved`: each collective of the body, its operand and result on every
  device (the body run up to the eqn under the same ``jit(shard_map)``);
* stage ``call``: :class:`PmapEquivalentsCompared`, when the snippet defines a version.

The errors pmap users hit (more rows than devices, an unbound axis name, nested pmap, an
argument with no axis to map, an int axis name) propagate unchanged, with the exhibit's
explanation and fix (``explain.py``); those of ``args`` (too many rows, a scalar to map) are
blamed on the ``args`` line, an int ``axis_name`` on its line. An argument with no axis to map
fails in ``jax.make_jaxpr`` with a bare IndexError, so, as for too many rows, the error shown is
the one ``jax.pmap(f)(*args)`` raises.
"""

from __future__ import annotations

import re
from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec
from jaxscope.exhibit_api import (
    InvalidSnippet,
    JaxprStaged,
    ProbeContext,
    SourceLoc,
    blame_line,
    collective_eqns,
    collective_values,
    communicates,
    compare,
    eqn_snippet_line,
    exception_text,
    find_shard_maps,
    jaxpr_view,
    plan_call,
    preview_value,
    setting_line,
    shard_map_body,
    shard_map_inputs,
    source_lines,
    tolerance,
    user_frames,
)

from exhibits.sharding.reading import placed

from .events import (
    PmapCollectiveEqn,
    PmapCollectiveMoved,
    PmapCollectivesMoved,
    PmapDevicesRun,
    PmapDeviceValues,
    PmapEquivalent,
    PmapEquivalentsCompared,
    PmapLeafShape,
    PmapTraced,
)
from .explain import attach

# Values per device sent as numbers up to this many elements (a preview beyond) to the page; a
# run that prints whole artefacts (the CLI's, ``details`` eager: issue 33 class 8, design 0060)
# gets each device's outputs whole up to WHOLE_VALUES elements (a few MB of JSON per device).
MAX_VALUES = 256
WHOLE_VALUES = 2**18
INTERNAL_AXIS = "_internal_pmap_axis_name"
VERSIONS = ("jit_version", "shard_map_version")


def _paths(prefix: str, tree: Any) -> list[str]:
    return [
        prefix + jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_flatten_with_path(tree)[0]
    ]


def _flat_in_axes(in_axes: Any, args: tuple[Any, ...]) -> list[int | None]:
    """pmap's ``in_axes`` (an int, ``None`` or a tuple prefix of ``args``) broadcast to one entry
    per flat argument leaf, as pmap broadcasts it. Raises ValueError on a tuple that is not a
    prefix of ``args``."""
    if in_axes is None or isinstance(in_axes, int):
        return [in_axes] * len(jax.tree.leaves(args))
    axes_leaves, treedef = jax.tree.flatten(tuple(in_axes), is_leaf=lambda x: x is None)
    subtrees = treedef.flatten_up_to(tuple(args))  # type: ignore[attr-defined]
    return [ax for ax, sub in zip(axes_leaves, subtrees, strict=True) for _ in jax.tree.leaves(sub)]


def _values(x: Any, limit: int = MAX_VALUES) -> Any:
    a = np.asarray(x)
    return a.tolist() if a.size <= limit else None


def _mapped_size(flat: list[Any], axes: list[int | None]) -> int | None:
    for x, ax in zip(flat, axes, strict=True):
        if ax is not None and hasattr(x, "shape") and -np.ndim(x) <= ax < np.ndim(x):
            return int(np.shape(x)[ax])
    return None


def _unmappable(paths: list[str], flat: list[Any], axes: list[int | None]) -> list[str]:
    """The flat arguments pmap is told to map (``in_axes`` not None) that have no such axis: a
    scalar (``1.0``, ``np.float32(1)``) under ``in_axes=0``, a vector under ``in_axes=1``."""
    return [
        path
        for path, x, ax in zip(paths, flat, axes, strict=True)
        if ax is not None and not -np.ndim(x) <= ax < np.ndim(x)
    ]


_UNBOUND = re.compile(r"unbound axis name: (?P<axis>[^\s.]+)")
# A collective given an int axis (``psum(x, 0)``): an int is a positional axis of x, which a
# scalar row does not have (jax 0.10.2, ``lax._reduce_op_shape_rule``).
_POSITIONAL = re.compile(r"reduction axes \((?P<axes>[-\d, ]+)\) contains out-of-bounds indices")
_COLLECTIVES = ("psum", "pmean", "pmax", "pmin", "all_gather", "psum_scatter", "all_to_all")


def _explain(
    exc: BaseException,
    ctx: ProbeContext,
    axis_name: Any,
    rows: int | None,
    unmappable: list[str] | None = None,
) -> None:
    """Attach the explanation and fix of the errors pmap users hit; leave others alone."""
    count = jax.local_device_count()
    text = exception_text(exc)
    given = "axis_name=None" if axis_name is None else f"axis_name={axis_name!r}"
    if unmappable:
        blame_line(exc, setting_line(ctx.snippet.source, "args"))
        names = ", ".join(unmappable)
        attach(
            exc,
            f"pmap maps each argument over an axis (in_axes, 0 by default) and gives device i "
            f"row i of it, but {names} has no such axis (a scalar has no leading axis). The "
            f"error is JAX's own, raised by jax.pmap(f)(*args) as the snippet calls it.",
            f"Give {names} a leading axis of jax.local_device_count() ({count}), one value per "
            f"device: np.full(({count},), value) or jnp.broadcast_to(x, ({count},) + "
            f"jnp.shape(x)); or, for a value every device shares, leave it unmapped with "
            f"in_axes=None for it (in_axes = (0, None) in the snippet; at least one other "
            f"argument must then be mapped).",
        )
        return
    if isinstance(axis_name, int) and not isinstance(axis_name, bool):
        blame_line(exc, setting_line(ctx.snippet.source, "axis_name"))
        attach(
            exc,
            f"pmap's axis_name is the int {axis_name!r}. pmap is a jit of a shard_map over a "
            f"mesh whose one axis gets this name, with in_specs P({axis_name!r}); an axis named "
            f"by an int does not split the rows (each device got the whole argument, which pmap "
            f"then fails to squeeze to one row, as JAX's message says), and in a collective an "
            f"int is a positional axis of the operand (psum(x, 0) sums x's own axis 0).",
            'Name the axis with a string: axis_name = "i" (jax.pmap(f, axis_name="i")), and '
            'the same string in the collectives: jax.lax.psum(x, "i").',
        )
        return
    positional = _POSITIONAL.search(text)
    line = _collective_line(exc)
    if positional is not None and line is not None:
        axes = positional.group("axes").strip(", ")
        name = "i" if axis_name is None else axis_name
        attach(
            exc,
            f"A collective was given the int axis {axes} (line {line}). An int axis of a "
            f"collective is a positional axis of its operand (psum(x, 0) sums x's own axis 0, "
            f"as jnp.sum(x, 0) does), not the axis pmap maps: inside pmap x is one device's "
            f"row, which has no axis {axes}.",
            f"Name pmap's axis instead: jax.lax.psum(x, {name!r})"
            + (
                f", with jax.pmap(f, axis_name={name!r}) (axis_name = {name!r} in the snippet)."
                if axis_name is None
                else f" (the snippet's axis_name = {axis_name!r})."
            ),
        )
        return
    if rows is not None and rows > count:
        blame_line(exc, setting_line(ctx.snippet.source, "args"))
        attach(
            exc,
            f"pmap gives each device one row of the mapped axis: args have {rows} rows, and there "
            f"are {count} {jax.default_backend().upper()} devices. pmap is a jit of a shard_map "
            f"over a mesh of min({rows}, {count}) devices, so JAX's message speaks of a mesh of "
            f"{count} that does not divide {rows} rows.",
            f"Make the leading axis at most jax.local_device_count() ({count}): give each device "
            f"a slice, x.reshape({count}, -1, ...) (padding the rows to a multiple of {count}), "
            f"or use jax.jit with x placed by NamedSharding(mesh, P('i')), which splits any "
            f"multiple of {count} rows.",
        )
        return
    m = _UNBOUND.search(text)
    if isinstance(exc, NameError) and m is not None:
        axis = m.group("axis")
        bound = "no axis name" if axis_name is None else f"the axis {axis_name!r}"
        attach(
            exc,
            f"The collective names the axis {axis!r}, but pmap(f, {given}) binds {bound}: a "
            f"collective inside pmap can only name the axis_name pmap was given (JAX's message "
            f"suggests shard_map, whose mesh names the axes).",
            f"Give pmap the name the collective uses, jax.pmap(f, axis_name={axis!r}) (here: "
            f"axis_name = {axis!r} in the snippet), or name {axis_name!r} in the collective."
            if axis_name is not None
            else f"Give pmap the name: jax.pmap(f, axis_name={axis!r}) (here: axis_name = "
            f"{axis!r} in the snippet).",
        )
        return
    if "context mesh" in text and "should match the mesh passed to shard_map" in text:
        attach(
            exc,
            "A pmap inside a pmap. Each pmap is a jit of a shard_map over a one-axis mesh of its "
            "own; inside the outer one the devices are already split (its axis is Manual), and "
            "the inner shard_map's mesh is not the context mesh, so JAX refuses it (pmap's "
            "docstring still describes nested pmaps; this pmap does not run them).",
            "Map both axes at once with one jax.shard_map over a 2-D mesh: mesh = "
            "jax.make_mesh((a, b), ('i', 'j')), in_specs=P('i', 'j'), with psum(x, 'i') and "
            "psum(x, 'j') as before; or pmap the outer axis and jax.vmap(..., axis_name='j') the "
            "inner one.",
        )


def _collective_line(exc: BaseException) -> int | None:
    """The snippet line where ``exc`` was raised when that line calls a collective."""
    frames = user_frames(exc.__traceback__)
    if not frames or frames[-1].text is None:
        return None
    deepest = frames[-1]
    assert deepest.text is not None
    return deepest.line if any(f"{c}(" in deepest.text for c in _COLLECTIVES) else None


def _collective_eqns(body: Any, lines: list[str]) -> list[tuple[Any, PmapCollectiveEqn]]:
    found = []
    for index, eqn, axes in collective_eqns(body):
        if not communicates(eqn.primitive):
            continue
        line = eqn_snippet_line(eqn)
        code = lines[line - 1].strip() if line is not None and 0 < line <= len(lines) else None
        found.append(
            (
                eqn,
                PmapCollectiveEqn(
                    eqn_index=index,
                    primitive=eqn.primitive.name,
                    axes=axes,
                    text=" ".join(str(eqn).split()),  # one line, params and all
                    source=None if line is None else SourceLoc(line=line, function="f"),
                    source_text=code,
                ),
            )
        )
    return found


def _spec(axis: Any, ax: int | None) -> PartitionSpec:
    return PartitionSpec() if ax is None else PartitionSpec(*([None] * ax), axis)  # type: ignore[no-untyped-call]


def _compare(ours: list[Any], theirs: list[Any]) -> tuple[str, float | None, bool, str | None]:
    """How a version's flat outputs compare with pmap's: whole arrays of the same shape, or
    each device's row of pmap's against the version's (a value every device holds once)."""
    if len(ours) != len(theirs):
        return "whole", None, False, f"{len(theirs)} outputs, pmap gave {len(ours)}"
    worst: float | None = None
    how = "whole"
    for p, v in zip(ours, theirs, strict=True):
        p, v = np.asarray(p), np.asarray(v)
        if p.shape == v.shape:
            pairs = [(v, p)]
        elif p.shape[1:] == v.shape:
            how = "per_device"
            pairs = [(v, row) for row in p]
        else:
            return how, None, False, f"shape {list(v.shape)} against pmap's {list(p.shape)}"
        for got, want in pairs:
            diff, ok = compare(got, want, None, tolerance(want.dtype))
            if not ok:
                return how, diff, False, None
            worst = diff if worst is None or (diff is not None and diff > worst) else worst
    return how, worst, True, None


def run(ctx: ProbeContext) -> None:
    """Run the pmap exhibit on ``ctx.snippet`` (user exceptions propagate unchanged)."""
    plan = plan_call(ctx.snippet)
    ns = ctx.snippet.namespace
    if plan.kwargs:
        raise InvalidSnippet("the pmap exhibit maps positional args only (no kwargs)")
    axis_name = ns.get("axis_name")
    in_axes = ns.get("in_axes", 0)
    args = plan.args
    flat = jax.tree.leaves(args)
    try:
        axes = _flat_in_axes(in_axes, args)
    except ValueError as exc:
        raise blame_line(
            InvalidSnippet(f"in_axes {in_axes!r} does not match args: {exc}"),
            setting_line(ctx.snippet.source, "in_axes"),
        ) from None
    rows = _mapped_size(flat, axes)
    unmappable = _unmappable(_paths("args", args), flat, axes)
    pf = jax.pmap(plan.fun, axis_name=axis_name, in_axes=in_axes)
    try:
        with ctx.stage("trace"):
            closed = jax.make_jaxpr(pf)(*args)
    except Exception as exc:
        failure: BaseException = exc
        if unmappable or (rows is not None and rows > jax.local_device_count()):
            # Traced, pmap fails in shard_map's divisibility check (too many rows) or in an
            # IndexError (an argument without the mapped axis); called, as the user calls it,
            # in placing the rows (IndivisibleError) or in its own check of the mapped axes:
            # show the user's error.
            try:
                with ctx.stage("run"):
                    pf(*args)
            except Exception as called:
                failure = called
        _explain(failure, ctx, axis_name, rows, unmappable)
        raise failure from None
    ctx.emit(JaxprStaged(fun_name="pmap(f)", jaxpr=jaxpr_view(closed)))
    (found, *_) = find_shard_maps(closed)
    sm = found.eqn
    jit_eqn = closed.jaxpr.eqns[0]
    body = shard_map_body(sm)
    mesh = sm.params["mesh"]
    (axis,) = mesh.axis_names
    collectives = _collective_eqns(body, source_lines(ctx.snippet.source))
    ctx.emit(
        PmapTraced(
            jit_name=str(jit_eqn.params.get("name", "")),
            axis_name=str(axis),
            axis_name_given=axis_name is not None,
            mesh_size=int(mesh.size),
            device_ids=[int(d.id) for d in np.asarray(mesh.devices).flat],
            device_count=jax.local_device_count(),
            in_specs=[str(s) for s in sm.params["in_specs"]],
            out_specs=[str(s) for s in sm.params["out_specs"]],
            check_vma=bool(sm.params["check_vma"]),
            in_axes=axes,
            squeezes=sum(1 for e in body.jaxpr.eqns if e.primitive.name == "squeeze"),
            expands=sum(1 for e in body.jaxpr.eqns if e.primitive.name == "broadcast_in_dim"),
            body=jaxpr_view(body),
            collectives=[view for _, view in collectives],
        )
    )

    try:
        with ctx.stage("run"):
            out = pf(*args)
            jax.block_until_ready(out)  # type: ignore[no-untyped-call]
    except Exception as exc:
        _explain(exc, ctx, axis_name, rows)
        raise
    in_paths = _paths("args", args)
    out_paths = _paths("out", out)
    outs = jax.tree.leaves(out)
    # Each flat argument placed as pmap places it (its in_global_shardings: NamedSharding over
    # the mesh with the eqn's in_spec), then each output as pmap returned it.
    for path, x, spec in zip(in_paths, flat, sm.params["in_specs"], strict=True):
        ctx.emit(placed(path, jax.device_put(x, NamedSharding(mesh, spec))))
    for path, o in zip(out_paths, outs, strict=True):
        ctx.emit(placed(path, o))
    limit = MAX_VALUES if ctx.on_demand else WHOLE_VALUES
    ctx.emit(_devices_run(mesh, in_paths, flat, axes, out_paths, outs, limit))

    if collectives:
        inputs = shard_map_inputs(closed, found, flat)
        if inputs is not None:
            moved = []
            for eqn, view in collectives:
                # a collective of several operands (psum of a tuple) moves each one
                for operand in range(len(eqn.invars)):
                    before, after = collective_values(sm, inputs, view.eqn_index, operand)
                    moved.append(
                        PmapCollectiveMoved(
                            eqn=view,
                            operand=operand,
                            operand_shape=list(before[0].shape),
                            result_shape=list(after[0].shape),
                            before=[_values(b) for b in before],
                            after=[_values(a) for a in after],
                        )
                    )
            ctx.emit(
                PmapCollectivesMoved(
                    device_ids=[int(d.id) for d in np.asarray(mesh.devices).flat], moved=moved
                )
            )

    defined = [name for name in VERSIONS if callable(ns.get(name))]
    if defined:
        with ctx.stage("call"):
            ctx.emit(_equivalents(ns, closed, args, axes, outs, mesh, defined))


def _devices_run(
    mesh: Mesh,
    in_paths: list[str],
    flat: list[Any],
    axes: list[int | None],
    out_paths: list[str],
    outs: list[Any],
    limit: int = MAX_VALUES,
) -> PmapDevicesRun:
    inputs = []
    for path, x, ax in zip(in_paths, flat, axes, strict=True):
        shape = [int(d) for d in np.shape(x)]
        local = shape if ax is None else shape[:ax] + shape[ax + 1 :]
        inputs.append(
            PmapLeafShape(
                path=path,
                global_shape=shape,
                shape=local,
                dtype=str(np.asarray(x).dtype) if not hasattr(x, "dtype") else str(x.dtype),
                mapped=ax is not None,
            )
        )
    out_leaves = [
        PmapLeafShape(
            path=p, global_shape=list(o.shape), shape=list(o.shape[1:]), dtype=str(o.dtype)
        )
        for p, o in zip(out_paths, outs, strict=True)
    ]
    # each output's block per device (pmap's out_axes=0: a leading axis of 1, squeezed off)
    blocks = [{s.device.id: np.asarray(s.data)[0] for s in o.addressable_shards} for o in outs]
    devices = []
    for index, device in enumerate(np.asarray(mesh.devices).flat):
        mine = [b[device.id] for b in blocks]
        devices.append(
            PmapDeviceValues(
                device_id=int(device.id),
                device=str(device),
                index=index,
                inputs=inputs,
                outputs=out_leaves,
                values=[_values(v, limit) for v in mine],
                previews=[preview_value(v) for v in mine],
            )
        )
    return PmapDevicesRun(devices=devices, outputs=out_leaves)


def _equivalents(
    ns: dict[str, Any],
    closed: Any,
    args: tuple[Any, ...],
    axes: list[int | None],
    outs: list[Any],
    pmap_mesh: Mesh,
    defined: list[str],
) -> PmapEquivalentsCompared:
    user_mesh = ns.get("mesh")
    mesh = user_mesh if isinstance(user_mesh, Mesh) else pmap_mesh
    axis = mesh.axis_names[0]
    flat, tree = jax.tree.flatten(args)
    specs = [_spec(axis, ax) for ax in axes]
    placed_args = jax.tree.unflatten(
        tree,
        [jax.device_put(x, NamedSharding(mesh, s)) for x, s in zip(flat, specs, strict=True)],
    )
    paths = _paths("args", args)
    versions = [
        PmapEquivalent(
            name="pmap(f)",
            call="jax.pmap(f)(*args)",
            jaxpr=jaxpr_view(closed),
            previews=[preview_value(o) for o in outs],
            compared="self",
        )
    ]
    for name in defined:
        fun = jax.jit(ns[name])
        version_jaxpr = jax.make_jaxpr(fun)(*placed_args)
        got = jax.tree.leaves(fun(*placed_args))
        how, diff, equal, note = _compare(outs, got)
        versions.append(
            PmapEquivalent(
                name=name,
                call=f"jax.jit({name})(*placed_args)",
                jaxpr=jaxpr_view(version_jaxpr),
                previews=[preview_value(g) for g in got],
                compared=how,  # type: ignore[arg-type]
                max_abs_diff=diff,
                equal=equal,
                note=note,
            )
        )
    return PmapEquivalentsCompared(
        mesh_text=str(mesh),
        placements=[f"{p}: NamedSharding(mesh, {s})" for p, s in zip(paths, specs, strict=True)],
        versions=versions,
    )
