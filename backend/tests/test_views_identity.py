"""``views.jaxpr_view`` (which reuses what JAX built while printing the whole jaxpr, and caches
var views, inner-jaxpr texts, plain param texts and snippet lines) equals, field by field, a
straightforward reference kept here: JAX's whole printout, then each eqn printed again on its
own with the captured context (``core.pp_eqn``, ``core.pp_kv_pair`` per param, inner jaxprs
printed again, ``core.pp_var`` per var, the traceback's innermost snippet frame).

Jaxprs: every shipped example (``exhibits/*/examples/*.py``) that traces, and the JVP jaxpr
(``jax.jvp`` of the example's function at its arguments) of those with float inputs."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jax
import numpy as np
import pytest
from jax._src import core, source_info_util
from jaxscope.internals import views
from jaxscope.internals.calling import plan_call
from jaxscope.protocol import (
    AvalView,
    CallerFrame,
    ConstVarView,
    EqnView,
    InnerJaxprView,
    JaxprView,
    SourceLoc,
    VarView,
)
from jaxscope.sandbox.probe_api import SNIPPET_FILENAME
from jaxscope.sandbox.snippet import load_snippet
from jaxscope.summaries import least_view_bytes

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(ROOT.glob("exhibits/*/examples/*.py"))

# ------------------------------------------------------------------ the reference (no caching)


@contextlib.contextmanager
def _contexts() -> Iterator[list[Any]]:
    created: list[Any] = []
    original = core.JaxprPpContext

    class _Recorded(original):  # type: ignore[misc, valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            created.append(self)

    with views._capture_lock:
        core.JaxprPpContext = _Recorded  # type: ignore[misc]
        try:
            yield created
        finally:
            core.JaxprPpContext = original  # type: ignore[misc]


def _ref_source(tb: Any) -> SourceLoc | None:
    if tb is None:
        return None
    codes, lastis = tb.raw_frames()
    frames = [
        source_info_util.raw_frame_to_frame(code, lasti)
        for code, lasti in zip(codes, lastis, strict=True)
        if code.co_filename == SNIPPET_FILENAME
    ]
    if not frames:
        return None
    fr, callers = frames[0], frames[1:]
    return SourceLoc(
        line=fr.start_line,
        column=fr.start_column,
        end_line=fr.end_line,
        end_column=fr.end_column,
        function=fr.function_name,
        callers=[CallerFrame(line=c.start_line, function=c.function_name) for c in callers] or None,
    )


def _ref_var(v: Any, ctx: Any) -> VarView:
    aval = v.aval
    return VarView(
        name=str(core.pp_var(v, ctx)),
        aval=AvalView(
            shape=[int(d) if isinstance(d, int) else -1 for d in getattr(aval, "shape", ())],
            dtype=aval.dtype.name if getattr(aval, "dtype", None) is not None else str(aval),
            weak_type=bool(getattr(aval, "weak_type", False)),
            short=views._short(aval),
        ),
        literal=isinstance(v, core.Literal),
    )


def _ref_inner_text(jaxpr: Any, ctx: Any) -> str:
    settings = core.JaxprPpSettings()
    if jaxpr in ctx.shared_jaxprs:
        doc = core.pp_jaxpr_skeleton(
            jaxpr, lambda: core.pp_eqns(jaxpr.eqns, ctx, settings), ctx, settings
        )
        return str(doc.format())
    return str(core.pp_jaxpr(jaxpr, ctx, settings).format())


def _ref_eqn(index: int, eqn: Any, ctx: Any) -> EqnView:
    settings = core.JaxprPpSettings()
    inner: list[InnerJaxprView] = []
    name = eqn.params.get("name")
    for key in sorted(eqn.params):
        value = eqn.params[key]
        for v in value if isinstance(value, tuple) else (value,):
            if isinstance(v, (core.Jaxpr, core.ClosedJaxpr)):
                j = v.jaxpr if isinstance(v, core.ClosedJaxpr) else v
                inner.append(
                    InnerJaxprView(
                        param=key,
                        name=str(name) if name is not None else None,
                        text=_ref_inner_text(j, ctx),
                        constvars=[_ref_var(x, ctx) for x in j.constvars],
                        invars=[_ref_var(x, ctx) for x in j.invars],
                        outvars=[_ref_var(x, ctx) for x in j.outvars],
                        eqns=[_ref_eqn(i, e, ctx) for i, e in enumerate(j.eqns)],
                    )
                )
    return EqnView(
        index=index,
        primitive=eqn.primitive.name,
        params={
            k: core.pp_kv_pair(k, eqn.params[k], ctx, settings).format()[len(k) + 1 :]
            for k in sorted(eqn.params)
        },
        invars=[_ref_var(v, ctx) for v in eqn.invars],
        outvars=[_ref_var(v, ctx) for v in eqn.outvars],
        effects=sorted(str(e) for e in eqn.effects),
        source=_ref_source(eqn.source_info.traceback),
        text=core.pp_eqn(eqn, ctx, settings).format(),
        inner_jaxprs=inner,
        name_stack=str(eqn.source_info.name_stack) if eqn.source_info.name_stack.stack else "",
    )


def _ref_view(closed: Any) -> JaxprView:
    jaxpr = closed.jaxpr
    with _contexts() as created:
        text = str(jaxpr)
    ctx = created[0]
    return JaxprView(
        text=text,
        constvars=[
            ConstVarView(var=_ref_var(v, ctx), value_preview=views.preview_value(c))
            for v, c in zip(jaxpr.constvars, closed.consts, strict=True)
        ],
        invars=[_ref_var(v, ctx) for v in jaxpr.invars],
        outvars=[_ref_var(v, ctx) for v in jaxpr.outvars],
        eqns=[_ref_eqn(i, e, ctx) for i, e in enumerate(jaxpr.eqns)],
        effects=sorted(str(e) for e in closed.effects),
        arg_names=list(jaxpr.debug_info.arg_names) if jaxpr.debug_info else None,
    )


# ------------------------------------------------------------------ the jaxprs


def _jaxprs(path: Path) -> list[Any]:
    try:
        plan = plan_call(load_snippet(path.read_text()))
        primal = plan.make_jaxpr()
    except Exception:  # an example that does not trace (an error exhibit's point)
        return []
    out = [primal]
    if not plan.static_argnums and not plan.kwargs:
        leaves = jax.tree.leaves(plan.args)
        if leaves and all(np.issubdtype(np.asarray(x).dtype, np.floating) for x in leaves):
            try:
                out.append(jax.make_jaxpr(lambda *a: jax.jvp(plan.fun, a, a))(*plan.args))
            except Exception:
                pass
    return out


def _assert_same(new: JaxprView, ref: JaxprView) -> None:
    assert new.text == ref.text
    for field in ("constvars", "invars", "outvars", "effects"):
        assert getattr(new, field) == getattr(ref, field), field
    assert len(new.eqns) == len(ref.eqns)
    for a, b in zip(new.eqns, ref.eqns, strict=True):
        for field in EqnView.model_fields:
            assert getattr(a, field) == getattr(b, field), (b.index, b.primitive, field)
    assert new.model_dump_json() == ref.model_dump_json()


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: f"{p.parent.parent.name}/{p.stem}")
def test_jaxpr_view_equals_the_per_eqn_reference(path: Path) -> None:
    closed_jaxprs = _jaxprs(path)
    if not closed_jaxprs:
        pytest.skip("the example does not trace")
    for closed in closed_jaxprs:
        ref = _ref_view(closed)
        assert ref.text == str(closed)
        _assert_same(views.jaxpr_view(closed), ref)
        # Twice: the second view meets warm caches (param texts, snippet lines).
        _assert_same(views.jaxpr_view(closed), ref)
        # the runner's lower bound of a view's line (summaries.least_view_bytes, design 0082)
        assert least_view_bytes(ref) <= len(ref.model_dump_json())


def test_eqn_view_with_a_printed_context_and_with_a_fresh_one() -> None:
    """Callers (jvp_steps, batching_steps) ask ``eqn_view`` for texts with the context
    ``print_with_context`` returned; a context that printed nothing still works (no docs to
    reuse: each eqn is printed on its own)."""
    path = ROOT / "exhibits/tracing/examples/mlp_loss.py"
    closed = plan_call(load_snippet(path.read_text())).make_jaxpr()
    ref = _ref_view(closed)
    _, ctx = views.print_with_context(closed.jaxpr)
    for i, e in enumerate(closed.jaxpr.eqns):
        assert views.eqn_view(i, e, ctx) == ref.eqns[i]
    fresh = core.JaxprPpContext()
    ref_ctx = core.JaxprPpContext()
    for i, e in enumerate(closed.jaxpr.eqns):
        assert views.eqn_view(i, e, fresh) == _ref_eqn(i, e, ref_ctx)


def test_param_text_cache_keeps_types_apart() -> None:
    """``1``, ``True`` and ``(1,)``/``(True,)`` are equal and hash alike; they print apart."""
    ctx = core.JaxprPpContext()
    for value in (1, True, (1,), (True,), (1, (2, 3)), np.dtype("float32"), "x", None):
        assert views._param_text("k", value, ctx) == str(value)
    assert views._plain_key(1.0) is None and views._plain_key((1, 0.5)) is None


def test_no_recording_left_behind_after_printing() -> None:
    """``print_with_context`` puts JAX's ``pp_eqn`` and ``JaxprPpContext`` back."""
    pp_eqn, ctx_class = core.pp_eqn, core.JaxprPpContext
    closed = jax.make_jaxpr(lambda x: x * 2.0)(1.0)
    views.jaxpr_view(closed)
    assert core.pp_eqn is pp_eqn and core.JaxprPpContext is ctx_class


def test_the_examples_cover_inner_and_shared_jaxprs() -> None:
    """The comparison above meets eqns holding jaxprs (jit, scan, while, custom_jvp/vjp) and
    jaxprs JAX prints once at the top (``let _name = { lambda ... } in``)."""
    closed_jaxprs = [c for p in EXAMPLES for c in _jaxprs(p)]
    primitives = {
        e.primitive.name
        for c in closed_jaxprs
        for e in c.jaxpr.eqns
        if views._inner_jaxprs(e, core.JaxprPpContext())
    }
    assert {"jit", "scan", "while"} <= primitives
    assert any(str(c).startswith("let ") for c in closed_jaxprs)


def test_a_binders_type_is_its_avals_short_text() -> None:
    """``print_with_context`` asks JAX's ``pp_aval`` once per aval object while it prints: it
    reads the aval alone, and ``pp_vars`` looks it up by its module name at each call (the texts
    above are equal to unpatched printing either way)."""
    import inspect

    assert "return a.str_short(short_dtypes=True)" in inspect.getsource(core.pp_aval)
    assert "pp_aval(v.aval, context)" in inspect.getsource(core.pp_vars)
    pp_aval = core.pp_aval
    closed = jax.make_jaxpr(lambda x: (x * 2.0).sum())(np.ones((2, 3), np.float32))
    text, _ = views.print_with_context(closed.jaxpr)
    assert text == str(closed.jaxpr) and core.pp_aval is pp_aval


def test_var_name_is_pp_vars_text() -> None:
    """``views.var_name`` (a var's name in a printout, from its view or the var itself) is
    ``str(core.pp_var(v, ctx))`` for every var, dropped var and literal of a printed jaxpr."""
    path = ROOT / "exhibits/tracing/examples/mlp_loss.py"
    closed = plan_call(load_snippet(path.read_text())).make_jaxpr()
    _, ctx = views.print_with_context(closed.jaxpr)
    atoms = [v for e in closed.jaxpr.eqns for v in (*e.invars, *e.outvars)]
    assert any(isinstance(v, core.Literal) for v in atoms)
    fresh = core.JaxprPpContext()
    for v in atoms:
        assert views.var_name(v, ctx) == str(core.pp_var(v, ctx))
        assert views.var_name(v, fresh) == str(core.pp_var(v, fresh))


def _tanh_loss(x: jax.Array, w: jax.Array) -> jax.Array:
    return jax.numpy.sum(jax.numpy.tanh(x @ w) ** 2)


def test_constructed_is_model_construct() -> None:
    """``views.constructed`` (the views' eqns, vars and inner jaxprs, set without pydantic's
    per-field look-ups: design 0082) gives the instance ``model_construct`` gives: the same
    ``__dict__`` in the same order, fields set, no extra, no private; a field left to its
    default, or a class with private attributes, goes through ``model_construct`` itself."""
    from jaxscope.protocol import ValueView

    args = (np.ones((2, 3), np.float32), np.full((3, 4), 0.5, np.float32))
    view = views.jaxpr_view(jax.make_jaxpr(jax.grad(jax.jit(_tanh_loss)))(*args))
    eqn = next(e for e in view.eqns if e.inner_jaxprs)
    inner = eqn.inner_jaxprs[0]
    literal = next(v for e in inner.eqns for v in e.invars if v.literal)
    models: list[Any] = [eqn, inner, *inner.eqns[:5], eqn.invars[0], literal]
    for model in models:
        cls = type(model)
        values = {name: getattr(model, name) for name in cls.model_fields}
        ours, theirs = views.constructed(cls, **values), cls.model_construct(**values)
        assert type(ours) is cls
        assert list(ours.__dict__.items()) == list(theirs.__dict__.items())
        assert ours.model_fields_set == theirs.model_fields_set == set(cls.model_fields)
        assert ours.__pydantic_extra__ is theirs.__pydantic_extra__ is None
        assert ours.__pydantic_private__ is theirs.__pydantic_private__ is None
        assert ours == theirs and ours.model_dump_json() == theirs.model_dump_json()
    partial = views.constructed(VarView, name="a", aval=literal.aval)
    assert partial.literal is False and partial.model_fields_set == {"name", "aval"}
    assert ValueView.__private_attributes__  # left to pydantic, which sets them
    value = views.constructed(ValueView, role="primal", aval=literal.aval)
    assert value.__pydantic_private__ == {"_pending": None}
