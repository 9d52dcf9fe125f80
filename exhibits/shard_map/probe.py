"""The shard_map exhibit's probe: ``jax.shard_map(f, mesh=, in_specs=, out_specs=)`` of the
user's per-device body ``f``, the checks JAX runs around it, and the assembled outputs.

The snippet defines ``mesh``, ``in_specs``, ``out_specs``, ``f`` (the body) and ``args``;
optionally ``check_vma`` (default ``True``) and ``reference`` (the same computation without
shard_map, on the global arrays). ``options.mesh``/``options.spec`` (Python expressions in the
snippet's namespace) replace ``mesh``/``in_specs``.

Real code: a snippet with no ``in_specs`` (and no ``options.spec``) is a whole program whose
``f`` calls ``jax.shard_map`` itself. ``f``'s jaxpr is searched for its ``shard_map`` eqns
(``internals.shard_map_found``); the first one whose inputs can be evaluated is checked as the
snippet form would be, with the mesh, specs, ``check_vma`` and body from the eqn's params and,
as ``args``, the global arrays ``f`` passed the call (``f``'s jaxpr evaluated up to it). Its
line is the call's line; the others are listed (``ShardMapChecked.found``).

Events, in order:

* stage ``trace``: :class:`ShardMapBodyTraced` when the body was reached — ``jax.make_jaxpr``
  of ``jax.shard_map`` of the body wrapped to record ``jax.typeof`` of its inputs and outputs
  (per-device avals with their varying manual axes), the body jaxpr (the shard_map eqn's
  ``jaxpr`` param) and its collectives;
* stage ``run``: :class:`ShardMapChecked` — each check run with JAX's own helpers
  (``internals.shard_map_checks``) and the verdict of ``jax.jit(jax.shard_map(f, ...))(*args)``
  itself; then, when it ran, :class:`ShardMapOutputsAssembled`.

A failed check is the exhibit's subject: the run ends normally with ``ok=False`` and JAX's
error. An error raised by the body itself (``check == "body"``) propagates after the verdict.
"""

from __future__ import annotations

import io
import re
import tokenize
from typing import Any, Literal

import jax
import numpy as np
from jaxscope.exhibit_api import (
    CHECK_SOURCES,
    CHECK_TITLES,
    BodyObserved,
    CheckResult,
    InvalidSnippet,
    JaxprView,
    ProbeContext,
    Snippet,
    all_checks,
    aval_view,
    blame_line,
    collective_eqns,
    communicates,
    exception_class,
    exception_text,
    explain,
    find_shard_maps,
    jaxpr_view,
    observing_shard_map,
    options_as,
    preview_value,
    setting_line,
    shard_map_body_fun,
    shard_map_eqn_body,
    shard_map_inputs,
    source_lines,
    spec_leaf_paths,
    var_vma,
)
from jaxscope.exhibit_api import finite_diff as fd

from exhibits.shard_map.events import (
    ShardMapBodyTraced,
    ShardMapCheck,
    ShardMapChecked,
    ShardMapCollective,
    ShardMapFault,
    ShardMapFound,
    ShardMapOutput,
    ShardMapOutputsAssembled,
    ShardMapReplicaDiff,
    ShardMapShard,
    ShardMapSite,
    ShardMapSpecView,
    ShardMapValueView,
)
from exhibits.sharding.options import ShardingOptions
from exhibits.sharding.settings import check_flag, check_mesh, check_spec_tree, eval_option

REPLICATION_NOTE = (
    "The replication check failed, so JAX staged no jaxpr; this body jaxpr was traced again with "
    "check_vma=False (no varying-axes types, plain psum instead of psum_invariant)."
)


def _setting(snippet: Snippet, option: str | None, option_name: str, name: str) -> tuple[Any, str]:
    """The snippet's ``name``, or ``options.<option_name>`` evaluated in its namespace; returns
    the value and the name it is reported under."""
    value = eval_option(option, option_name, dict(snippet.namespace))
    if value is not None:
        return value, f"options.{option_name}"
    if name not in snippet.namespace:
        raise InvalidSnippet(f"the shard_map exhibit needs `{name}` in the snippet")
    return snippet.namespace[name], name


_UNBOUND = re.compile(
    r"unbound axis name: (?P<axis>[^\s.]+)\.?(?: To fix this, please call (?P<prim>\w+))?"
)
# psum/pmean/... over a tuple of axes with one the mesh lacks (JAX 0.10.2, ``_psum_invariant``).
_PSUM_AXES = re.compile(
    r"jax\.lax\.(?P<prim>\w+) can only accept axis_name .*? axes: \((?P<axes>[^)]*)\)"
)


def _not_mesh_axis(axis: str, prim: str | None, mesh: Any, jax_says: str) -> str:
    axes = tuple(str(a) for a in mesh.axis_names)
    like = "like the collectives" if prim == "axis_index" else "like every collective"
    what = f"shard_map {prim} ({like})" if prim else "shard_map every collective"
    return (
        f"axis '{axis}' is not an axis of the mesh {axes}: inside {what} can only name the "
        f"mesh's axes. {jax_says}"
    )


def _unknown_collective_axis(
    smap: Any, f: Any, args: tuple[Any, ...], mesh: Any, error: BaseException | None = None
) -> str | None:
    """Why the body failed when a collective names an axis the mesh lacks, ``None`` when that
    is not the error. JAX says it in several ways (0.10.2): ``psum(x, "nope")`` with
    ``check_vma=True`` fails in ``pvary`` with a bare ``AssertionError`` (traced again with
    ``check_vma=False``, JAX's ``NameError`` names the axis and the collective);
    ``psum(x, ("x", "nope"))`` raises "psum can only accept axis_name which corresponds to one of
    varying..."; ``all_gather(x, "nope")`` a bare ``NameError: unbound axis name: nope``;
    ``axis_index("q")`` "Found an unbound axis name: q"."""
    mesh_axes = {str(a) for a in mesh.axis_names}
    if isinstance(error, NameError):
        m = _UNBOUND.search(exception_text(error))
        if m is None or m.group("axis") in mesh_axes:
            return None
        return _not_mesh_axis(
            m.group("axis"), m.group("prim"), mesh, "JAX's error names the axis, not the mesh."
        )
    if isinstance(error, ValueError):
        p = _PSUM_AXES.search(exception_text(error))
        if p is None:
            return None
        named = [a.strip().strip("'\"") for a in p.group("axes").split(",") if a.strip()]
        missing = [a for a in named if a not in mesh_axes]
        if not missing:
            return None
        return _not_mesh_axis(
            missing[0],
            p.group("prim"),
            mesh,
            "JAX's error, from its varying-axes check, speaks of varying and invarying states.",
        )
    try:
        jax.make_jaxpr(smap(f, False))(*args)
    except NameError as exc:
        m = _UNBOUND.search(exception_text(exc))
        if m is None:
            return None
        return _not_mesh_axis(
            m.group("axis"),
            m.group("prim"),
            mesh,
            "JAX's own error here, from its varying-axes check, says nothing more.",
        )
    except Exception:
        return None
    return None


# With Explicit mesh axes (``jax.make_mesh``'s default) shard_map compares ``in_specs`` with
# the sharding each input already has (``_shard_map_staging``'s check, JAX 0.10.2).
_INPUT_SPEC_MISMATCH = re.compile(
    r"in_specs passed to shard_map: (?P<spec>P\(.*?\)) does not match the specs of the input: "
    r"(?P<has>P\(.*?\)) for arg"
)


def _input_spec_hint(error: BaseException, mesh: Any) -> str | None:
    """A hint for JAX's "in_specs ... does not match the specs of the input" (an input not
    placed with its spec on a mesh with Explicit axes); ``None`` for any other error."""
    m = _INPUT_SPEC_MISMATCH.search(exception_text(error))
    if m is None:
        return None
    n = len(mesh.axis_names)
    types = ", ".join(t.name for t in mesh.axis_types)
    return (
        f"The mesh's axes are ({types}): on Explicit axes (jax.make_mesh's default) shard_map "
        f"checks in_specs against the sharding the input already has, and this input is "
        f"{m.group('has')}, not {m.group('spec')}. Either make the axes Auto, "
        f"jax.make_mesh(..., axis_types=(AxisType.Auto,) * {n}), or place the input with its "
        f"spec first: jax.device_put(x, NamedSharding(mesh, {m.group('spec')}))."
    )


def _is_leaf(x: Any) -> bool:
    return x is None


def _spec_views(which: Literal["in_specs", "out_specs"], specs: Any) -> list[ShardMapSpecView]:
    out = []
    for path, p in jax.tree_util.tree_flatten_with_path(specs, is_leaf=_is_leaf)[0]:
        key = jax.tree_util.keystr(path)
        if isinstance(p, jax.sharding.PartitionSpec):
            out.append(
                ShardMapSpecView(specs=which, path=key, spec=str(p), entries=[repr(e) for e in p])
            )
        else:
            out.append(
                ShardMapSpecView(specs=which, path=key, spec=repr(p), entries=[], is_spec=False)
            )
    return out


def _check_view(r: CheckResult) -> ShardMapCheck:
    return ShardMapCheck(
        name=r.name,
        title=CHECK_TITLES[r.name],
        source=CHECK_SOURCES[r.name],
        status=r.status,
        error_class=r.error_class,
        message=r.message,
        faults=[
            ShardMapFault(specs=f.specs, path=f.path, spec=f.spec, entries=f.entries, axes=f.axes)
            for f in r.faults
        ],
    )


def _paths(tree: Any) -> list[str]:
    return [jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_flatten_with_path(tree)[0]]


def _code_of(line: str) -> str:
    """A snippet line without its comment, stripped (Python's tokenizer finds the comment, so a
    ``#`` inside a string stays)."""
    try:
        for tok in tokenize.generate_tokens(io.StringIO(line).readline):
            if tok.type == tokenize.COMMENT:
                return line[: tok.start[1]].strip()
    except (tokenize.TokenError, SyntaxError):  # a line that opens a bracket: keep it whole
        pass
    return line.strip()


def _body_event(
    mesh: Any,
    in_specs: Any,
    out_specs: Any,
    args: tuple[Any, ...],
    seen: BodyObserved,
    body: Any,
    note: str | None,
    source: str = "",
) -> ShardMapBodyTraced:
    in_spec_paths = spec_leaf_paths(in_specs, args)
    leaves = jax.tree.leaves(args)
    inputs = [
        ShardMapValueView(
            name="args" + path,
            spec=str(sp[1]),
            global_shape=list(np.shape(leaf)),
            aval=aval_view(aval),
            vma=vma,
        )
        for path, sp, leaf, aval, vma in zip(
            _paths(args), in_spec_paths, leaves, seen.in_avals, seen.in_vma, strict=True
        )
    ]
    try:
        out_spec_strs = [str(p) for _, p in spec_leaf_paths(out_specs, seen.out_value)]
    except ValueError:  # out_specs is not a prefix of the outputs (the out_arity check)
        out_spec_strs = [None] * len(seen.out_avals)  # type: ignore[list-item]
    outputs = [
        ShardMapValueView(name="out" + path, spec=spec, aval=aval_view(aval), vma=vma)
        for path, spec, aval, vma in zip(
            _paths(seen.out_value), out_spec_strs, seen.out_avals, seen.out_vma, strict=True
        )
    ]
    values: list[ShardMapValueView] = []
    collectives: list[ShardMapCollective] = []
    view: JaxprView | None = None
    if body is not None:
        view = jaxpr_view(body)
        jaxpr = body.jaxpr
        for v_view, var in zip(view.invars, jaxpr.invars, strict=True):
            values.append(
                ShardMapValueView(name=v_view.name, aval=v_view.aval, vma=var_vma(var, mesh))
            )
        for e_view, eqn in zip(view.eqns, jaxpr.eqns, strict=True):
            for v_view, var in zip(e_view.outvars, eqn.outvars, strict=True):
                values.append(
                    ShardMapValueView(name=v_view.name, aval=v_view.aval, vma=var_vma(var, mesh))
                )
        lines = [line.rstrip("\r\n") for line in source_lines(source)]
        for i, eqn, axes in collective_eqns(body):
            loc = view.eqns[i].source
            collectives.append(
                ShardMapCollective(
                    eqn_index=i,
                    primitive=eqn.primitive.name,
                    axes=axes,
                    text=view.eqns[i].text,
                    source=loc,
                    source_text=(
                        _code_of(lines[loc.line - 1])
                        if loc is not None and 0 < loc.line <= len(lines)
                        else None
                    ),
                )
            )
    return ShardMapBodyTraced(
        inputs=inputs,
        outputs=outputs,
        values=values,
        collectives=collectives,
        jaxpr=view,
        jaxpr_note=note,
    )


def _index(index: tuple[slice, ...], shape: tuple[int, ...]) -> list[list[int]]:
    return [list(s.indices(n)[:2]) for s, n in zip(index, shape, strict=True)]


def _reference(
    ns: dict[str, Any], f: Any, args: tuple[Any, ...], uses_collectives: bool, found: bool
) -> tuple[str, str, list[Any] | None]:
    if found:  # the snippet's reference, if any, is of its f, not of this call
        return "none", FOUND_NOTE, None
    if callable(ns.get("reference")):
        return (
            "reference",
            "the snippet's reference(*args)",
            jax.tree.leaves(ns["reference"](*args)),
        )
    if uses_collectives:
        return (
            "none",
            "the body uses collectives, whose axis names are bound only inside shard_map: "
            "define reference(*args) in the snippet to compare",
            None,
        )
    try:
        out = jax.tree.leaves(f(*args))
    except Exception as exc:  # f is not meaningful on the global arrays
        return "none", f"f(*args) on the global arrays raised {exception_class(exc)}", None
    return (
        "f",
        "f(*args) on the global arrays (equal only when f acts blockwise)",
        out,
    )


def _against(
    got: np.ndarray, want: np.ndarray
) -> tuple[bool, float | None, tuple[list[int], float, float] | None]:
    """``(matches, max abs difference, first element past tolerance)`` of an output against the
    reference, at the precision of the narrower dtype of the two (a bfloat16 body is not held to
    float32 digits); a shape mismatch never matches; integer and boolean outputs compare exactly."""
    if got.shape != want.shape:
        return False, None, None
    floats = [d for d in (got.dtype, want.dtype) if jax.numpy.issubdtype(d, jax.numpy.inexact)]
    if len(floats) == 2:
        tol = fd.tolerance(fd.narrower(*floats))
    elif floats:
        tol = fd.tolerance(floats[0])
    else:  # integers and booleans compare exactly
        tol = 0.0
    diff, within = fd.compare(got, want, None, tol)
    first = None if within else fd.first_difference(got, want, tol)
    return within, diff, first


def _replicas_differ(leaf: Any) -> ShardMapReplicaDiff | None:
    """The first pair of devices holding the same block of ``leaf`` (``addressable_shards``
    with equal ``index``) with values past the dtype's tolerance of each other."""
    blocks: dict[str, Any] = {}
    for s in sorted(leaf.addressable_shards, key=lambda s: s.device.id):
        block = _index(s.index, leaf.shape)
        key = repr(block)
        data = np.asarray(s.data)
        if key not in blocks:
            blocks[key] = (s.device, data)
            continue
        device, first = blocks[key]
        within, _, where = _against(data, first)
        if not within and where is not None:
            index, value, other_value = where
            return ShardMapReplicaDiff(
                device=str(device),
                other=str(s.device),
                block=block,
                index=index,
                value=other_value,
                other_value=value,
            )
    return None


def _outputs_event(
    ns: dict[str, Any],
    f: Any,
    args: tuple[Any, ...],
    out: Any,
    out_specs: Any,
    uses_collectives: bool,
    found: bool = False,
) -> ShardMapOutputsAssembled:
    kind, note, ref = _reference(ns, f, args, uses_collectives, found)
    leaves = jax.tree.leaves(out)
    specs = [str(p) for _, p in spec_leaf_paths(out_specs, out)]
    if ref is not None and len(ref) != len(leaves):
        kind, note, ref = (
            "none",
            f"the reference returned {len(ref)} arrays, not {len(leaves)}",
            None,
        )
    outputs = []
    for i, (path, leaf, spec) in enumerate(zip(_paths(out), leaves, specs, strict=True)):
        shards = [
            ShardMapShard(
                device=str(s.device),
                index=_index(s.index, leaf.shape),
                shape=list(s.data.shape),
            )
            for s in sorted(leaf.addressable_shards, key=lambda s: s.device.id)
        ]
        got = np.asarray(leaf)
        match: bool | None = None
        diff: float | None = None
        ref_preview: str | None = None
        first: tuple[list[int], float, float] | None = None
        if ref is not None:
            want = np.asarray(ref[i])
            ref_preview = preview_value(want)
            match, diff, first = _against(got, want)
        outputs.append(
            ShardMapOutput(
                path="out" + path,
                spec=spec,
                shape=list(leaf.shape),
                dtype=str(leaf.dtype),
                shards=shards,
                preview=preview_value(got),
                reference_preview=ref_preview,
                matches_reference=match,
                max_abs_diff=diff,
                first_diff_index=first[0] if first else None,
                first_diff_got=first[1] if first else None,
                first_diff_want=first[2] if first else None,
                replicas_differ=_replicas_differ(leaf),
            )
        )
    return ShardMapOutputsAssembled(outputs=outputs, reference=kind, reference_note=note)  # type: ignore[arg-type]


FOUND_NOTE = (
    "the call's inputs are arrays f made: to compare with a reference, give the exhibit the "
    "snippet form (the body as f, with mesh, in_specs, out_specs and reference)"
)


def _found_call(ctx: ProbeContext) -> tuple[Any, tuple[Any, ...], Any, ShardMapFound]:
    """The first ``shard_map`` call inside ``f`` whose inputs can be evaluated: its body as a
    function of flat per-device inputs (returning a tuple, as ``out_specs`` is one), the global
    arrays ``f`` passes it, its eqn, and what :class:`ShardMapFound` reports. A snippet whose
    ``f`` makes none is :class:`InvalidSnippet`."""
    snippet = ctx.snippet
    flat, _ = jax.tree.flatten((tuple(snippet.args), dict(snippet.kwargs)))
    closed = jax.make_jaxpr(snippet.f)(*snippet.args, **snippet.kwargs)
    found = find_shard_maps(closed)
    sites = [
        ShardMapSite(
            line=c.source.line if c.source else None, within=list(c.within), reachable=c.reachable
        )
        for c in found
    ]
    for i, call in enumerate(found):
        inputs = shard_map_inputs(closed, call, flat)
        if inputs is None:
            continue
        return (
            shard_map_body_fun(call),
            tuple(inputs),
            call.eqn,
            ShardMapFound(sites=sites, shown=i),
        )
    if found:
        raise InvalidSnippet(
            "the shard_map calls in f are all inside a loop or a branch (lines "
            + ", ".join(str(s.line) for s in sites)
            + "): their inputs change per iteration; give the exhibit the body as f, with "
            "mesh, in_specs, out_specs and args"
        )
    raise InvalidSnippet(
        "the shard_map exhibit needs `in_specs` in the snippet (f is then the per-device body), "
        "or an f that calls jax.shard_map: this f makes no shard_map call"
    )


def run(ctx: ProbeContext) -> None:
    """Run the shard_map exhibit on ``ctx.snippet`` (see the module docstring)."""
    ns = ctx.snippet.namespace
    found: ShardMapFound | None = None
    axis_names: Any = frozenset()
    call_line: int | None = None
    if (
        "in_specs" not in ns
        and eval_option(options_as(ctx.options, ShardingOptions).spec, "spec", dict(ns)) is None
    ):
        with ctx.stage("trace"):
            f, args, eqn, found = _found_call(ctx)
        mesh = eqn.params["mesh"]
        in_specs, in_specs_name = eqn.params["in_specs"], "in_specs"
        out_specs = eqn.params["out_specs"]
        check_vma = bool(eqn.params["check_vma"])
        if set(eqn.params["newly_manual_axes"]) != set(mesh.axis_names):
            axis_names = frozenset(eqn.params["newly_manual_axes"])  # a partly manual call
        call_line = found.sites[found.shown].line
    else:
        f = ctx.snippet.f
        args = tuple(ctx.snippet.args)
        mesh = check_mesh(
            ctx.snippet,
            *_setting(ctx.snippet, options_as(ctx.options, ShardingOptions).mesh, "mesh", "mesh"),
        )
        in_specs_value, in_specs_name = _setting(
            ctx.snippet, options_as(ctx.options, ShardingOptions).spec, "spec", "in_specs"
        )
        in_specs = check_spec_tree(ctx.snippet, in_specs_value, in_specs_name)
        out_specs = check_spec_tree(ctx.snippet, *_setting(ctx.snippet, None, "", "out_specs"))
        check_vma = check_flag(ctx.snippet, ns.get("check_vma", True), "check_vma")

    def smap(fun: Any, vma: bool = check_vma) -> Any:
        return jax.shard_map(
            fun,
            mesh=mesh,
            in_specs=in_specs,
            out_specs=out_specs,
            axis_names=axis_names,
            check_vma=vma,
        )

    with ctx.stage("trace"):
        seen = BodyObserved()
        body = None
        note = None
        try:
            body = shard_map_eqn_body(
                jax.make_jaxpr(smap(observing_shard_map(f, seen, mesh)))(*args)
            )
        except Exception:  # the verdict below is JAX's own call; this trace only observes
            pass
        checks = all_checks(f, mesh, in_specs, out_specs, args, seen, check_vma)
        failed = next((c for c in checks if c.status == "failed"), None)
        if body is None and failed is not None and failed.name == "replication":
            try:
                body = shard_map_eqn_body(jax.make_jaxpr(smap(f, False))(*args))
                note = REPLICATION_NOTE
            except Exception:
                body = None
        if seen.reached and seen.out_tree is not None:
            ctx.emit(
                _body_event(mesh, in_specs, out_specs, args, seen, body, note, ctx.snippet.source)
            )

    with ctx.stage("run"):
        error: Exception | None = None
        out = None
        try:
            out = jax.jit(smap(f))(*args)
        except Exception as exc:  # the verdict: shown beside the checks, or re-raised below
            error = exc
    check: str | None = None
    hint = None if error is None else _input_spec_hint(error, mesh)
    if error is not None:
        if (
            failed is not None
            and failed.error_class == exception_class(error)
            and failed.message == exception_text(error)
        ):
            check = failed.name
        elif failed is None and hint is None:  # that one is shard_map's, before the body
            check = "body"
    explanation = hint
    if check == "body" and isinstance(error, (AssertionError, NameError, ValueError)):
        explanation = _unknown_collective_axis(smap, f, args, mesh, error)
        if explanation is not None:  # the error panel says it too, at the collective's line
            explain(error, explanation)
    # A failed spec check (an out_specs naming an axis the mesh lacks, ...) is blamed on the line
    # of the specs at fault.
    line: int | None = None
    if failed is not None and check == failed.name and failed.faults:
        which = failed.faults[0].specs
        name = in_specs_name if which == "in_specs" else "out_specs"
        line = setting_line(ctx.snippet.source, name) if name in ("in_specs", "out_specs") else None
        if found is not None:  # the specs are the call's arguments
            line = call_line
    if error is not None and hint is not None:  # no line of f raised it: the in_specs line
        source = ctx.snippet.source
        line = setting_line(source, in_specs_name) if in_specs_name == "in_specs" else None
        line = call_line if found is not None else line
        blame_line(error, line or setting_line(source, "mesh"), explanation=hint)
    ctx.emit(
        ShardMapChecked(
            mesh_axes=[str(a) for a in mesh.axis_names],
            mesh_shape=[int(n) for n in mesh.axis_sizes],
            axis_types=[t.name for t in mesh.axis_types],
            check_vma=check_vma,
            in_specs=repr(in_specs),
            out_specs=repr(out_specs),
            specs=_spec_views("in_specs", in_specs) + _spec_views("out_specs", out_specs),
            arg_shapes=[list(np.shape(a)) for a in jax.tree.leaves(args)],
            checks=[_check_view(c) for c in checks],
            ok=error is None,
            # cut, and read without raising (the user's f may raise its own exception)
            error_class=None if error is None else exception_class(error),
            message=None if error is None else exception_text(error),
            check=check,
            explanation=explanation,
            line=line,
            found=found,
        )
    )
    if error is not None:
        if check in (None, "body"):
            raise error
        return
    uses_collectives = body is not None and any(
        communicates(eqn.primitive) for _, eqn, _ in collective_eqns(body)
    )
    assembled = _outputs_event(ns, f, args, out, out_specs, uses_collectives, found is not None)
    assembled.out_specs_line = (
        call_line if found is not None else setting_line(ctx.snippet.source, "out_specs")
    )
    ctx.emit(assembled)
