"""The wrapped_fun exhibit's tests.

Truth is an independent plain run in the test of the same transformation on the same snippet
functions, watched by the test's own, simpler hooks on ``jax._src.linear_util`` (truth may use
private JAX): ``WrappedFun.__init__`` counting the objects built around the snippet's functions,
``call_wrapped`` reading ``self.transforms``/``self.stores``, and a ``sys.setprofile`` of the
test's own recording the generators' call/return order. The outputs are compared with the
plain transformation's; the golden stream with the probe; the ``--print`` artefacts' formats.
"""

from __future__ import annotations

import inspect
import json
import sys
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import pytest
from jax._src import linear_util as lu
from jaxscope.events import EVENT_ADAPTER
from jaxscope.internals.views import preview_value
from jaxscope.protocol import EventBase, RunFinished, RunOptions
from jaxscope.sandbox.probe_api import BLAME_ATTR, SNIPPET_FILENAME
from jaxscope.sandbox.snippet import load_snippet

from exhibits.conftest import Runner
from exhibits.registry import EXHIBITS

from .events import EVENTS, WrappedFunCallsRecorded, WrappedFunStackBuilt, WrappedFunWatched
from .probe import short_repr

HERE = Path(__file__).resolve().parent
EXHIBIT = HERE.name
EXAMPLES = HERE / "examples"


def source(name: str) -> str:
    return (EXAMPLES / f"{name}.py").read_text()


def stacks(events: list[EventBase]) -> list[WrappedFunStackBuilt]:
    return [e for e in events if isinstance(e, WrappedFunStackBuilt)]


def watched(events: list[EventBase]) -> WrappedFunWatched:
    (w,) = [e for e in events if isinstance(e, WrappedFunWatched)]
    return w


def artefact(events: list[EventBase], name: str) -> Any:
    text = EXHIBITS[EXHIBIT].artefacts[name](events)
    assert text is not None
    return json.loads(text)


# --- the test's own, independent observation of a plain run ----------------------------------


def in_snippet(fun: Any) -> bool:
    code = getattr(inspect.unwrap(fun), "__code__", None)
    return code is not None and code.co_filename == SNIPPET_FILENAME


class Plain:
    """What the test's hooks saw: WrappedFuns built around snippet functions, and each
    ``call_wrapped`` of one (its transforms' names and static args, its stores, its core)."""

    def __init__(self) -> None:
        self.built = 0
        self.called: list[Any] = []
        self.order: list[tuple[str, str]] = []


@contextmanager
def plain_watch() -> Iterator[Plain]:
    seen = Plain()
    cls: Any = lu.WrappedFun  # its methods are untyped
    init, call = cls.__init__, cls.call_wrapped

    def counting_init(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        seen.built += in_snippet(self.f)

    names: dict[Any, str] = {}

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event in ("call", "return") and frame.f_code in names:
            seen.order.append(("enter" if event == "call" else "leave", names[frame.f_code]))

    def observing_call(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not in_snippet(self.f):
            return call(self, *args, **kwargs)
        seen.called.append(self)
        # a stack entered inside another adds its codes; the outermost entry installs the
        # profiler and takes it off
        names.update({g.__code__: g.__name__ for g, _ in self.transforms})
        core = inspect.unwrap(self.f)
        names[core.__code__] = core.__name__
        previous = sys.getprofile()
        sys.setprofile(profile)
        try:
            return call(self, *args, **kwargs)
        finally:
            sys.setprofile(previous)

    cls.__init__, cls.call_wrapped = counting_init, observing_call
    try:
        yield seen
    finally:
        cls.__init__, cls.call_wrapped = init, call


def load(name: str) -> dict[str, Any]:
    """The example loaded as the sandbox loads it (compiled as ``<snippet>``)."""
    return load_snippet(source(name)).namespace


def ones(tree: Any) -> Any:
    return jax.tree.map(jnp.ones_like, tree)


def out_text(result: Any) -> str:
    """The result as the page prints it: each leaf after its key path."""
    leaves, _ = jax.tree_util.tree_flatten_with_path(result)
    return "\n".join(
        f"{jax.tree_util.keystr(p)} = {preview_value(x)}" if p else preview_value(x)
        for p, x in leaves
    )


# --- vmap: the default example ------------------------------------------------------------------


def test_vmap_stack_order_stores_and_output_are_a_plain_runs(probe_runner: Runner) -> None:
    events = probe_runner(EXHIBIT, source("vmap_sin")).events
    ns = load("vmap_sin")
    with plain_watch() as plain:
        out = jax.vmap(ns["f"], in_axes=ns["in_axes"])(*ns["args"])
    (wf,) = plain.called
    (stack,) = stacks(events)
    # the stack: JAX's own transforms tuple, outermost first
    assert [t.name for t in stack.transforms] == [g.__name__ for g, _ in wf.transforms]
    assert [t.name for t in stack.transforms] == [
        "_batch_outer", "_batch_inner", "flatten_fun_for_vmap"
    ]  # fmt: skip
    assert stack.transforms[0].params[1].text == "[0, None]"  # _batch_outer's in_dims
    for view, (_, static) in zip(stack.transforms, wf.transforms, strict=True):
        assert [p.text for p in view.params] == [short_repr(v) for v in static]
    # vmap without axis_name: JAX's sentinel object() reads "no name", not "<object object>"
    texts = [p.text for t in stack.transforms for p in t.params]
    assert not any("object object" in t for t in texts)
    assert any(t.startswith("AxisData(name=no name, size=3,") for t in texts)
    assert short_repr(object()) == "no name"
    # pushed innermost first: the last applied is the outermost
    assert [t.push for t in stack.transforms] == [2, 1, 0]
    assert stack.core_name == "f" and stack.core_line == 10 and stack.entered == 1
    assert stack.core_source == wf.debug_info.func_src_info == "f at <snippet>:10"
    # the one store: flatten_fun_for_vmap's, the output's PyTreeDef
    (store,) = stack.stores
    assert store.transform == "flatten_fun_for_vmap" and store.kind == "Store" and store.filled
    assert store.value == repr(jax.tree.structure(out)) == repr(wf.stores[2].val)
    assert store.write_once == "StoreException: Store occupied"
    # the call order: arguments through the last applied first, results the first applied first
    calls = artefact(events, "calls")
    assert [(c["event"], c["name"]) for c in calls] == plain.order
    assert plain.order == [
        ("enter", "_batch_outer"), ("enter", "_batch_inner"), ("enter", "flatten_fun_for_vmap"),
        ("enter", "f"), ("leave", "f"), ("leave", "flatten_fun_for_vmap"),
        ("leave", "_batch_inner"), ("leave", "_batch_outer"),
    ]  # fmt: skip
    # the fill happens after f returns, inside flatten_fun_for_vmap, before it is left
    (recorded,) = [e for e in events if isinstance(e, WrappedFunCallsRecorded)]
    kinds = [(s.event, s.name) for s in recorded.steps]
    assert kinds.index(("fill", "flatten_fun_for_vmap")) == 5
    assert store.step == 5 and store.filler == "flatten_fun_for_vmap"
    w = watched(events)
    assert w.built_around == plain.built == 4  # wrap_init, then three pushes
    assert w.out == out_text(out)
    assert w.call == "jax.vmap(f, in_axes=(0, None))(*args)"


def test_print_stack_and_calls_formats(probe_runner: Runner) -> None:
    events = probe_runner(EXHIBIT, source("vmap_sin")).events
    stack = artefact(events, "stack")
    assert [set(t) for t in stack] == [{"name", "params"}] * 3
    assert stack[2] == {"name": "flatten_fun_for_vmap", "params": "in_tree=PyTreeDef(((*, *), {}))"}
    assert stack[0]["params"].startswith("axis_data=AxisData(") and " at 0x" not in str(stack)
    calls = artefact(events, "calls")
    assert all(set(c) == {"event", "name"} and c["event"] in ("enter", "leave") for c in calls)
    assert artefact(events, "stacks") == [
        {"core": "f", "entered": 1,
         "transforms": ["_batch_outer", "_batch_inner", "flatten_fun_for_vmap"]}
    ]  # fmt: skip
    assert artefact(events, "stores") == [
        {
            "stack": 0,
            "transform": "flatten_fun_for_vmap",
            "filled": True,
            "value": "PyTreeDef({'norm': *, 'y': *})",
        }
    ]


# --- custom_vjp, custom_jvp, linear_transpose ---------------------------------------------------


def test_custom_vjp_stacks_are_a_plain_runs(probe_runner: Runner) -> None:
    events = probe_runner(EXHIBIT, source("custom_vjp_clip")).events
    ns = load("custom_vjp_clip")
    x = ns["args"][0]
    with plain_watch() as plain:
        out, pullback = jax.vjp(ns["f"], x)
        cts = pullback(jnp.ones_like(out))
    by_core = {s.core_name: s for s in stacks(events)}
    # entered: fwd, then bwd; each as JAX's own call_wrapped saw it
    assert (
        [(wf.f.__name__, [g.__name__ for g, _ in wf.transforms]) for wf in plain.called]
        == [
            (s.core_name, [t.name for t in s.transforms])
            for s in sorted(stacks(events), key=lambda s: s.index)
            if s.entered
        ]
        == [("clip_fwd", ["_flatten_fwd"]), ("clip_bwd", ["_flatten_bwd"])]
    )
    # the primal's stack is built (the custom_vjp call pushes it) and never run under vjp
    primal = by_core["clip_gradient"]
    assert primal.entered == 0
    assert [t.name for t in primal.transforms] == ["_flatten_fun_nokwargs", "_check_primal_refs"]
    (empty,) = primal.stores
    assert not empty.filled and empty.write_once == "StoreException: Store empty"
    (fwd_store,) = by_core["clip_fwd"].stores
    fwd_wf = plain.called[0]
    assert fwd_store.kind == "EqualStore" and fwd_store.filled
    assert fwd_store.value == short_repr(fwd_wf.stores[0].val)
    assert fwd_store.write_once == "StoreException: Store occupied with not-equal value"
    assert by_core["clip_bwd"].stores == []
    # every stack is linked to the line that calls clip_gradient inside f
    call_line = (
        source("custom_vjp_clip").splitlines().index("    return clip_gradient(jnp.sin(x)) * 3.0")
        + 1
    )
    assert primal.line == call_line
    calls = [(c["event"], c["name"]) for c in artefact(events, "calls")]
    assert calls == plain.order == [
        ("enter", "_flatten_fwd"), ("enter", "clip_fwd"), ("leave", "clip_fwd"),
        ("leave", "_flatten_fwd"), ("enter", "_flatten_bwd"), ("enter", "clip_bwd"),
        ("leave", "clip_bwd"), ("leave", "_flatten_bwd"),
    ]  # fmt: skip
    w = watched(events)
    assert w.built_around == plain.built
    assert w.out == out_text((out, cts))


def test_custom_jvp_stack(probe_runner: Runner) -> None:
    text = (
        "import jax, jax.numpy as jnp\n"
        "transform = 'custom_jvp'\n"
        "@jax.custom_jvp\n"
        "def f(x):\n"
        "    return jnp.sin(x)\n"
        "@f.defjvp\n"
        "def f_jvp(primals, tangents):\n"
        "    return jnp.sin(primals[0]), jnp.cos(primals[0]) * tangents[0]\n"
        "args = (jnp.arange(3.0),)\n"
    )
    events = probe_runner(EXHIBIT, text).events
    ns = load_snippet(text).namespace
    with plain_watch() as plain:
        out = jax.jvp(ns["f"], ns["args"], ones(ns["args"]))
    (wf,) = plain.called
    entered = [s for s in stacks(events) if s.entered]
    assert (
        [(s.core_name, [t.name for t in s.transforms]) for s in entered]
        == [(wf.f.__name__, [g.__name__ for g, _ in wf.transforms])]
        == [("f_jvp", ["_flatten_jvp"])]
    )
    assert [s.core_name for s in stacks(events) if not s.entered] == ["f"]
    assert watched(events).out == out_text(out)
    assert watched(events).built_around == plain.built


def test_linear_transpose_stack(probe_runner: Runner) -> None:
    events = probe_runner(EXHIBIT, source("linear_transpose")).events
    ns = load("linear_transpose")
    x = ns["args"][0]
    with plain_watch() as plain:
        cts = jax.linear_transpose(ns["f"], x)(jnp.ones_like(x))
    (wf,) = plain.called
    (stack,) = stacks(events)
    assert [t.name for t in stack.transforms] == [g.__name__ for g, _ in wf.transforms]
    assert [t.name for t in stack.transforms] == [
        "trace_to_subjaxpr_nounits", "flatten_fun_nokwargs"
    ]  # fmt: skip
    (store,) = stack.stores
    assert store.transform == "flatten_fun_nokwargs" and store.value == repr(wf.stores[1].val)
    assert store.value == "PyTreeDef(*)"
    assert [(c["event"], c["name"]) for c in artefact(events, "calls")] == plain.order
    assert watched(events).out == out_text(cts)


NESTED = """\
import jax
import jax.numpy as jnp

transform = "vmap"


@jax.custom_vjp
def g(x):
    return jnp.sin(x)


def g_fwd(x):
    return jnp.sin(x), jnp.cos(x)


def g_bwd(c, ct):
    return (c * ct,)


g.defvjp(g_fwd, g_bwd)


def f(x):
    return g(x) * 2.0


args = (jnp.arange(6.0).reshape(2, 3),)
"""


def test_a_custom_vjp_inside_vmap_is_entered_inside_vmaps_stack(probe_runner: Runner) -> None:
    events = probe_runner(EXHIBIT, NESTED).events
    ns = load_snippet(NESTED).namespace
    with plain_watch() as plain:
        out = jax.vmap(ns["f"])(*ns["args"])
    entered = [s for s in stacks(events) if s.entered]
    assert [(s.core_name, [t.name for t in s.transforms]) for s in entered] == [
        (wf.f.__name__, [g.__name__ for g, _ in wf.transforms]) for wf in plain.called
    ]
    assert [s.core_name for s in entered] == ["f", "g"]
    assert entered[1].transforms[0].name == "batch_subtrace"  # vmap's, pushed on g's stack
    calls = [(c["event"], c["name"]) for c in artefact(events, "calls")]
    assert calls == plain.order
    # g's stack opens after f is entered and closes before f leaves
    assert calls.index(("enter", "f")) < calls.index(("enter", "batch_subtrace"))
    assert calls.index(("leave", "batch_subtrace")) < calls.index(("leave", "f"))
    assert watched(events).out == out_text(out)
    assert watched(events).built_around == plain.built


def test_a_jitted_f_is_entered_through_jits_tracing(probe_runner: Runner) -> None:
    text = (
        "import jax\nimport jax.numpy as jnp\n\n\n@jax.jit\ndef f(x):\n"
        "    return jnp.sin(x) * 2.0\n\n\nargs = (jnp.ones((2, 3)),)\n"
    )
    events = probe_runner(EXHIBIT, text).events
    ns = load_snippet(text).namespace
    with plain_watch() as plain:
        jax.vmap(ns["f"])(*ns["args"])
    calls = [(c["event"], c["name"]) for c in artefact(events, "calls")]
    assert calls == plain.order
    assert calls[3:5] == [("enter", "f"), ("leave", "f")]


# --- the transformations that build no stack ----------------------------------------------------


def vjp_and_pullback(f: Callable[..., Any], args: tuple[Any, ...]) -> Any:
    out, pullback = jax.vjp(f, *args)
    return out, pullback(jnp.ones_like(out))


PLAIN: dict[str, Callable[[Callable[..., Any], tuple[Any, ...]], Any]] = {
    "jit": lambda f, a: jax.jit(f)(*a),
    "grad": lambda f, a: jax.grad(f)(*a),
    "jvp": lambda f, a: jax.jvp(f, a, ones(a)),
    "vjp": lambda f, a: vjp_and_pullback(f, a),
    "make_jaxpr": lambda f, a: jax.make_jaxpr(f)(*a),
    "checkpoint": lambda f, a: jax.checkpoint(f)(*a),
    # an f that calls no custom_vjp/custom_jvp function: jax.vjp/jax.jvp alone build none
    "custom_vjp": lambda f, a: vjp_and_pullback(f, a),
    "custom_jvp": lambda f, a: jax.jvp(f, a, ones(a)),
}


@pytest.mark.parametrize("transform", sorted(PLAIN))
def test_no_stack_around_f(transform: str, probe_runner: Runner) -> None:
    options = RunOptions(transform=transform)
    events = probe_runner(EXHIBIT, source("grad_no_stack"), options).events
    ns = load("grad_no_stack")
    with plain_watch() as plain:
        result = PLAIN[transform](ns["f"], ns["args"])
    w = watched(events)
    assert w.transform == transform
    assert w.built_around == plain.built == 0
    assert stacks(events) == [] and plain.called == []
    assert artefact(events, "stack") == [] and artefact(events, "calls") == []
    if transform == "make_jaxpr":
        assert w.out == str(result)
    else:
        assert w.out == out_text(result)
    assert w.traced_by, "the JAX frame that called f is shown"


def test_traced_by_is_the_frame_that_called_f(probe_runner: Runner) -> None:
    events = probe_runner(EXHIBIT, source("grad_no_stack"), RunOptions(transform="jit")).events
    ns = load("grad_no_stack")
    stacks_seen: list[list[traceback.FrameSummary]] = []
    f = ns["f"]

    def spy(x: Any) -> Any:
        stacks_seen.append(traceback.extract_stack()[:-1])
        return f(x)

    jax.jit(spy)(*ns["args"])
    caller = stacks_seen[0][-1]
    first = watched(events).traced_by[0]
    assert (first.function, first.line) == (caller.name, caller.lineno)
    assert (
        caller.filename.endswith(first.file)
        and first.file == "jax/_src/interpreters/partial_eval.py"
    )
    assert first.function == "trace_to_jaxpr"


def test_the_option_overrides_the_snippets_transform(probe_runner: Runner) -> None:
    events = probe_runner(EXHIBIT, source("vmap_sin"), RunOptions(transform="jit")).events
    assert watched(events).transform == "jit" and stacks(events) == []


def test_a_bad_transform_is_blamed_on_its_line(probe_runner: Runner) -> None:
    text = (
        "import jax.numpy as jnp\ndef f(x):\n    return x\nargs = (jnp.ones(2),)\n"
        "transform = 'pmap'\n"
    )
    with pytest.raises(Exception, match="`transform` must be one of") as info:
        probe_runner(EXHIBIT, text)
    assert getattr(info.value, BLAME_ATTR)[0] == 5


def test_the_worker_is_left_as_found(probe_runner: Runner) -> None:
    before = (
        lu.WrappedFun.__init__,
        lu.WrappedFun.wrap,
        lu.WrappedFun.call_wrapped,
        lu.Store.store,
    )
    marker = lambda frame, event, arg: None  # noqa: E731 - a profiler that must survive
    sys.setprofile(marker)
    try:
        probe_runner(EXHIBIT, source("custom_vjp_clip"))
        assert sys.getprofile() is marker
        text = (
            "import jax.numpy as jnp\n"
            "def f(x):\n    raise ValueError('boom')\nargs = (jnp.ones(2),)\n"
        )
        with pytest.raises(ValueError, match="boom"):
            probe_runner(EXHIBIT, text)
        assert sys.getprofile() is marker
    finally:
        sys.setprofile(None)
    after = (lu.WrappedFun.__init__, lu.WrappedFun.wrap, lu.WrappedFun.call_wrapped, lu.Store.store)
    assert after == before


# --- the golden streams -------------------------------------------------------------------------


def golden_streams() -> list[Path]:
    return sorted((HERE / "golden").glob("*.events.jsonl"))


@pytest.mark.parametrize("golden", golden_streams(), ids=lambda p: p.name)
def test_golden_stream_is_the_probes(golden: Path, probe_runner: Runner) -> None:
    """The golden (``jaxscope run ID examples/NAME.py --json``, the real sandbox) parses with the
    event union and holds what the probe emits now."""
    lines = [line for line in golden.read_text().splitlines() if line.strip()]
    stream = [EVENT_ADAPTER.validate_json(line) for line in lines]
    assert isinstance(stream[-1], RunFinished)
    assert [e.seq for e in stream] == list(range(len(stream)))
    example = EXAMPLES / (golden.name.removesuffix(".events.jsonl") + ".py")
    ctx = probe_runner(EXHIBIT, example.read_text())

    def own(events: list[EventBase]) -> list[dict[str, Any]]:
        return [e.model_dump(exclude={"seq", "run_id"}) for e in events if isinstance(e, EVENTS)]

    assert own(stream) == own(ctx.events)
    assert own(stream), "the golden holds none of this exhibit's events"
