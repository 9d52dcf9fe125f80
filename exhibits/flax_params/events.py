"""The flax_params exhibit's events ("params are data").

``param_created``: one parameter as the model's code created it (linen ``self.param`` through
``Scope.param``, nnx ``nnx.Param(...)``), in call order, with its path, aval, initializer and the
PRNG key it was given, and how that key was derived (linen: ``fold_in`` of the stream's root key
and the hash of the scope path and counter; nnx: ``fold_in`` of the stream key and its count).
The stepper walks these one by one: the params pytree grows leaf by leaf.

``params_initialized``: the whole pytree ``init`` returned (linen) or the model's ``Param``
state (nnx): its treedef as JAX prints it and its leaves in JAX's flattening order, with what
the first init cost (its XLA compiles).

``params_applied``: ``apply`` (linen) or a call of the merged model (nnx) on the same dict:
which parameters it read, which never reach its output (JAX's dead-code elimination of its
jaxpr, whose invars are the leaves), and the output. ``jaxpr_staged`` (shared) carries that
jaxpr.

``flax_error_raised``: the error Flax (or JAX under a Flax transform) raised on the model in
``init`` or ``apply``, shown on the page (the branch-built-submodule bug).

``nnx_state_split``: ``nnx.split(model)``: the graphdef's nodes and the state's leaves with
their paths, and ``nnx.merge`` back giving the same output.

Imports only pydantic and ``jaxscope.protocol``.
"""

from __future__ import annotations

from typing import Literal

from jaxscope.exhibit_api import AvalView, EventBase, WireModel

FlaxApi = Literal["linen", "nnx"]


class ParamCreated(EventBase):
    """One parameter created, in call order (``index`` from 0).

    ``path``: the names from the model down (``["Dense_0", "kernel"]``; linen: the scope path
    and the ``self.param`` name, inside the ``params`` collection; nnx: the attribute path).
    ``initializer``: the function that made the value, named as it is reached publicly
    (``jax.nn.initializers.lecun_normal()``, ``jax.nn.initializers.zeros``), None when not
    known (nnx: the creating frame had no ``<name>_init``). ``key``: ``jax.random.key_data`` of
    the key it was given (None: traced, or none found). ``reproduced``: the initializer applied
    to that key (and the shape and dtype flax gave it) equals the value (None: not checked).

    Key derivation. linen: ``root_key`` is the ``params`` stream's key from ``init``,
    ``fold_in_data`` the static data flax hashed (child scope names, then the per-scope counter),
    ``folded`` the uint32 it folded in (the first 4 bytes of their SHA-1), so ``key ==
    fold_in(root_key, folded)``. nnx: ``root_key`` is the stream's key, ``stream`` its tag and
    ``folded`` its count at the draw, so ``key == fold_in(root_key, folded)`` too.
    ``preview``: the value as numpy prints it (summarised). ``line``: the snippet line that
    created it (the innermost snippet frame)."""

    type: Literal["param_created"] = "param_created"
    api: FlaxApi
    index: int
    path: list[str]
    aval: AvalView
    initializer: str | None
    key: list[int] | None
    root_key: list[int] | None
    stream: str
    fold_in_data: list[str | int]
    folded: int | None
    reproduced: bool | None
    preview: str | None
    line: int | None


class ParamLeaf(WireModel):
    """One leaf of the params pytree in JAX's flattening order: its key path
    (``['params']['Dense_0']['bias']``), its path as names, its aval and the ``index`` of the
    ``param_created`` event that made it (None: a leaf no ``self.param`` made)."""

    keypath: str
    path: list[str]
    aval: AvalView
    created_index: int | None


class OtherKey(WireModel):
    """A key the model drew that no parameter got (a Dropout's stream fork in nnx, a
    ``self.make_rng('dropout')`` in linen): ``stream``, the data folded in and the key."""

    stream: str
    fold_in_data: list[str | int]
    folded: int | None
    key: list[int] | None


class ParamsInitialized(EventBase):
    """The pytree ``init`` returned (linen: the variables dict, a plain ``dict``; nnx: the
    ``nnx.Param`` state), as data: ``container`` its Python type's name, ``treedef``
    ``str(jax.tree_util.tree_structure(...))``, ``leaves`` in flattening order, ``total_size``
    the element count and ``total_bytes``. ``init_seconds``: the wall time of the first init
    (nnx: constructing the model); ``compiles``/``compile_seconds``: the XLA compiles JAX
    reported during it (``jax.monitoring``'s backend compile events) and their time.
    ``other_keys``: the keys drawn during init that no parameter got, in order."""

    type: Literal["params_initialized"] = "params_initialized"
    api: FlaxApi
    container: str
    treedef: str
    leaves: list[ParamLeaf]
    total_size: int
    total_bytes: int
    init_seconds: float
    compiles: int
    compile_seconds: float
    other_keys: list[OtherKey] = []


class ParamRead(WireModel):
    """One parameter ``apply`` read from the dict (linen ``Scope.get_variable``), in read order:
    its path, and ``same_object``: the array read is the very object ``init`` put in the
    dict (no copy)."""

    path: list[str]
    same_object: bool


class ParamsApplied(EventBase):
    """``apply`` on the dict ``init`` returned (nnx: ``nnx.merge(graphdef, params, rest)``
    called). ``call``: what ran, as Python (``model.apply(variables, *apply_args)``).
    ``reads``: linen's reads, in order (nnx: empty, it reads attributes). ``unused``: the paths
    of the parameters whose jaxpr invar no output depends on (JAX's dead-code elimination of the
    ``jaxpr_staged`` event's jaxpr of the same call). ``outputs``: the output as numpy prints
    it; ``output_aval`` its aval when it is one array."""

    type: Literal["params_applied"] = "params_applied"
    api: FlaxApi
    call: str
    reads: list[ParamRead]
    unused: list[list[str]]
    output: str
    output_aval: AvalView | None


class FlaxErrorRaised(EventBase):
    """An error ``init`` or ``apply`` raised on the model: Flax's own (a
    ``flax.errors.FlaxError`` such as ``ScopeParamShapeError``) or JAX's branch check under
    ``nn.cond``. ``phase`` is where; ``error_class`` and ``message`` as raised; ``line`` the
    innermost snippet line of its traceback; ``docs`` Flax's link for its error class."""

    type: Literal["flax_error_raised"] = "flax_error_raised"
    phase: Literal["init", "apply"]
    error_class: str
    message: str
    line: int | None
    docs: str | None


class GraphNode(WireModel):
    """One entry of an nnx ``GraphDef``'s ``nodes``: ``kind`` (``NodeDef``, ``VariableDef``,
    ...), the node's ``type`` name and its ``index`` (None for a plain pytree node)."""

    kind: str
    type_name: str
    index: int | None


class StateLeaf(WireModel):
    """One leaf of an nnx ``State`` (``nnx.to_flat_state``): its path, the Variable type
    (``Param``, ``RngKey``, ``RngCount``) and aval."""

    path: list[str]
    variable_type: str
    aval: AvalView


class NnxStateSplit(EventBase):
    """``graphdef, state = nnx.split(model)``: the graphdef's ``nodes`` (static structure, no
    arrays) and the state's leaves (all the arrays). ``merge_equal``: ``nnx.merge(graphdef,
    state)`` called on ``args`` gives the same output as the model (``max_abs_diff``)."""

    type: Literal["nnx_state_split"] = "nnx_state_split"
    graphdef_type: str
    nodes: list[GraphNode]
    leaves: list[StateLeaf]
    merge_equal: bool
    max_abs_diff: float | None


EVENTS: tuple[type[EventBase], ...] = (
    ParamCreated,
    ParamsInitialized,
    ParamsApplied,
    FlaxErrorRaised,
    NnxStateSplit,
)
