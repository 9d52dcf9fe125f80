"""The wrapped_fun exhibit's events: linear_util's ``WrappedFun`` stacks seen while the probe
ran the snippet's ``f`` under one transformation.

``wrapped_fun_stack_built``: one stack of transformations around one of the snippet's functions
(the core), outermost (last applied) first, with its write-once stores.
``wrapped_fun_calls_recorded``: the real order in which the stacks' generators and cores were
entered and left, and their stores filled.
``wrapped_fun_watched``: the summary: the transformation, how many ``WrappedFun`` objects were
built around the snippet's functions (0 for ``jit``/``grad``/...), what traced ``f`` instead,
and the result.

Imports only pydantic and ``jaxscope.protocol``.
"""

from __future__ import annotations

from typing import Literal

from jaxscope.exhibit_api import EventBase, WireModel


class WrappedFunParam(WireModel):
    """One static argument of a transformation: the generator's parameter ``name`` and a short
    ``repr`` of its value (cut at ``probe.MAX_REPR`` characters, ``…`` marking the cut)."""

    name: str
    text: str


class WrappedFunTransformView(WireModel):
    """One transformation of a stack. ``position``: 0 is the outermost (the last applied, the
    first the arguments meet). ``name``/``module``: the generator function's ``__name__`` and
    module (``flatten_fun_for_vmap``, ``jax._src.interpreters.batching``). ``push``: the order
    in which it was applied among all pushes of the run (0 first; None: applied before the
    watch). ``store``: ``Store``, ``EqualStore`` or None (a transformation without auxiliary
    output)."""

    position: int
    name: str
    module: str
    params: list[WrappedFunParam]
    push: int | None
    store: Literal["Store", "EqualStore"] | None


class WrappedFunStoreView(WireModel):
    """The write-once cell of the transformation at ``position``. ``filled``: it holds a value
    at the end of the run; ``value`` a short ``repr`` of it and ``value_type`` its type name;
    ``step`` the index in the timeline (``wrapped_fun_calls_recorded.steps``) of the fill
    (None: not filled while watched); ``filler`` the code name of the frame that called
    ``store``. ``write_once``: what JAX raised on the real object when the probe tried a second
    value (filled) or read it (empty), e.g. ``StoreException: Store occupied``."""

    position: int
    transform: str
    kind: Literal["Store", "EqualStore"]
    filled: bool
    value: str | None
    value_type: str | None
    step: int | None
    filler: str | None
    write_once: str


class WrappedFunStackBuilt(EventBase):
    """One ``WrappedFun`` stack around the snippet function ``core_name``. ``core_source`` is
    JAX's ``debug_info.func_src_info`` (``f at <snippet>:3``) and ``core_line`` its line when it
    is in the snippet. ``entered``: how many times ``call_wrapped`` ran it (0: built, never
    run, e.g. the primal of a ``custom_vjp`` under ``vjp``). ``line``: the snippet line on the
    Python stack when it was entered (else when its first transformation was applied); None
    when none was (the probe's own transform call)."""

    type: Literal["wrapped_fun_stack_built"] = "wrapped_fun_stack_built"
    index: int
    core_name: str
    core_source: str | None
    core_line: int | None
    entered: int
    line: int | None
    transforms: list[WrappedFunTransformView]
    stores: list[WrappedFunStoreView]


class WrappedFunCallStep(WireModel):
    """One step of the timeline: ``event`` ``enter``/``leave`` of a generator or of the core
    function (``core`` True), or ``fill`` of a store. ``stack``: the stack's ``index``;
    ``position`` the transformation's (None for the core); ``depth`` how many frames of the
    stack were open before an enter (0 = the outermost generator)."""

    event: Literal["enter", "leave", "fill"]
    stack: int
    position: int | None
    name: str
    core: bool
    depth: int


class WrappedFunCallsRecorded(EventBase):
    """The timeline of the run, in the order it happened (``sys.setprofile`` on the stacks'
    generator frames). ``steps_left_out``: steps after the first ``probe.MAX_STEPS``."""

    type: Literal["wrapped_fun_calls_recorded"] = "wrapped_fun_calls_recorded"
    steps: list[WrappedFunCallStep]
    steps_left_out: int = 0


class WrappedFunCaller(WireModel):
    """A frame of JAX's code that called the snippet's ``f`` (innermost first)."""

    function: str
    file: str
    line: int


class WrappedFunWatched(EventBase):
    """The summary. ``transform`` the transformation applied, ``call`` the Python the probe ran
    (``jax.vmap(f)(*args)``). ``built_around``: ``WrappedFun`` objects constructed around the
    snippet's functions (``lu.wrap_init``, each push, each copy; not those JAX builds around
    its own functions, whose number depends on its caches). ``stacks``: the stacks reported.
    ``traced_by``: the JAX frames that first called ``f`` (what traces it when no
    ``WrappedFun`` does). ``out``: a numpy printout of the result's leaves, or the jaxpr text
    for ``make_jaxpr`` (cut)."""

    type: Literal["wrapped_fun_watched"] = "wrapped_fun_watched"
    transform: str
    call: str
    built_around: int
    stacks: int
    traced_by: list[WrappedFunCaller]
    out: str


EVENTS: tuple[type[EventBase], ...] = (
    WrappedFunStackBuilt,
    WrappedFunCallsRecorded,
    WrappedFunWatched,
)
