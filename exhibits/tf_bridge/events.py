"""The tf_bridge exhibit's events (design 0066): what ``jax2tf.convert`` makes of a JAX function
in TensorFlow, and what ``tf2jax.convert`` makes of a TensorFlow function in JAX.

Five events, in the order the probe emits them: ``tf_graph_traced`` (the concrete function's
ops), ``xla_call_module_read`` (the op that carries the serialized StableHLO, beside the module
``jax.export`` makes), ``jax2tf_outputs_compared`` (TensorFlow's outputs and gradients against
JAX's), ``saved_model_loaded`` (a SavedModel written and loaded back) and, when the snippet
defines ``tf_f``, ``tf2jax_converted``. Imports only pydantic and ``jaxscope.exhibit_api``.
"""

from __future__ import annotations

from typing import Literal

from jaxscope.exhibit_api import EventBase, JaxprView, SourceLoc, WireModel


class TfTensorView(WireModel):
    """One TensorFlow tensor: its name (``op:index``), dtype name and shape as TensorFlow
    writes it (``(None, 3)``: None is a dimension TensorFlow does not know)."""

    name: str
    dtype: str
    shape: str


class TfOpView(WireModel):
    """One op of a TensorFlow graph: name, type (``XlaCallModule``, ``MatMul``), its input
    tensors' names, its outputs, and the snippet line that created it (from ``op.traceback``)
    when one did."""

    name: str
    type: str
    inputs: list[str]
    outputs: list[TfTensorView]
    source: SourceLoc | None = None


class TfGraphTraced(EventBase):
    """``tf.function(jax2tf.convert(f, ...)).get_concrete_function(*specs)``: the input
    signature it was traced for (one ``tf.TensorSpec`` per leaf of ``args``, None where
    ``polymorphic_shapes`` names a dimension variable), the graph's ops, and the graph's
    ``GraphDef`` in protobuf text with the ``XlaCallModule``'s ``module`` bytes left out
    (``--print stablehlo`` prints them)."""

    type: Literal["tf_graph_traced"] = "tf_graph_traced"
    tf_version: str
    with_gradient: bool
    polymorphic_shapes: list[str | None]
    input_signature: list[TfTensorView]
    ops: list[TfOpView]
    graph_def: str


class XlaCallModuleRead(EventBase):
    """The attributes of the graph's ``XlaCallModule`` op, as TensorFlow holds them, and its
    ``module``: the serialized StableHLO (MLIR bytecode) against the module ``jax.export``
    makes of ``jax.jit(f)`` for the same symbolic argument specs, traced from the same call site
    (the module carries the Python locations of the call that traced it). ``stablehlo`` is
    ``Exported.mlir_module()``, the text of those bytes; ``in_avals``/``out_avals`` JAX's
    symbolic shapes, ``sout`` TensorFlow's output shapes (-1 where TF cannot say)."""

    type: Literal["xla_call_module_read"] = "xla_call_module_read"
    version: int
    platforms: list[str]
    tin: list[str]
    tout: list[str]
    sout: list[list[int]]
    dim_args_spec: list[str]
    disabled_checks: list[str]
    has_token_input_output: bool
    use_shardy_partitioner: bool
    function_list: list[str]
    module_bytes: int
    module_sha256: str
    export_sha256: str
    same_as_export: bool
    export_platforms: list[str]
    in_avals: list[str]
    out_avals: list[str]
    uses_global_constants: bool
    stablehlo: str


class OutputCompared(WireModel):
    """One leaf compared across the bridge: its path, shape and dtype, both sides' values
    printed by numpy, and the largest absolute difference between them."""

    path: str
    shape: list[int]
    dtype: str
    tf_value: str
    jax_value: str
    max_abs_diff: float


class Jax2tfOutputsCompared(EventBase):
    """The converted function called in TensorFlow on ``args`` against ``f`` called in JAX
    (``outputs``), and, when ``with_gradient``, TensorFlow's gradient of the sum of the float
    outputs with respect to each float argument (``tf.GradientTape``, which calls the VJP that
    jax2tf serialized as a second ``XlaCallModule``) against ``jax.grad`` of the same sum
    (``gradients``). ``gradient_ops``: the op types of the function TensorFlow's gradient ran,
    found in the gradient's graph library."""

    type: Literal["jax2tf_outputs_compared"] = "jax2tf_outputs_compared"
    outputs: list[OutputCompared]
    gradients: list[OutputCompared]
    gradient_ops: list[str]


class SavedModelFile(WireModel):
    """One file the SavedModel wrote: path relative to its folder, size in bytes."""

    path: str
    bytes: int


class SavedModelLoaded(EventBase):
    """``tf.saved_model.save`` of a ``tf.Module`` holding the converted function, with a
    ``serving_default`` signature for the concrete function, then ``tf.saved_model.load``:
    the files written, the loaded signature's inputs and outputs as TensorFlow reads them back,
    and its outputs on ``args`` against ``f`` in JAX."""

    type: Literal["saved_model_loaded"] = "saved_model_loaded"
    files: list[SavedModelFile]
    signature: str
    inputs: list[TfTensorView]
    outputs: list[TfTensorView]
    compared: list[OutputCompared]


class EqnFromOp(WireModel):
    """An eqn of the converted jaxpr and the TensorFlow op whose conversion made it (the
    ``jax.named_scope`` the probe opened around each op tf2jax converted; empty for an eqn made
    outside any op)."""

    eqn: int
    primitive: str
    tf_op: str
    tf_type: str


class Tf2jaxConverted(EventBase):
    """``tf2jax.convert(tf.function(tf_f), *args)``: the TensorFlow ops of ``tf_f``'s graph,
    the jaxpr of the JAX function it became (``jax.make_jaxpr`` of it with its params), each
    eqn beside the op it came from, and the outputs and gradients (of the sum of the float
    outputs) in JAX against TensorFlow's own."""

    type: Literal["tf2jax_converted"] = "tf2jax_converted"
    tf_ops: list[TfOpView]
    jaxpr: JaxprView
    eqns: list[EqnFromOp]
    params: list[str]
    outputs: list[OutputCompared]
    gradients: list[OutputCompared]


EVENTS: tuple[type[EventBase], ...] = (
    TfGraphTraced,
    XlaCallModuleRead,
    Jax2tfOutputsCompared,
    SavedModelLoaded,
    Tf2jaxConverted,
)
