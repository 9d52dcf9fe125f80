"""The tf_bridge exhibit's backend half (design 0066): runs in a TensorFlow worker (``.venv-tf``:
tensorflow-cpu, tf2jax and JAX).

1. ``jax2tf.convert(f, with_gradient=True, polymorphic_shapes=...)`` in a ``tf.function``, its
   concrete function for the snippet's ``args``: the graph's ops, and the ``XlaCallModule`` op's
   attributes and module, compared byte for byte with ``jax.export`` of ``jax.jit(f)``;
2. the converted function called in TensorFlow (outputs, and gradients through
   ``tf.GradientTape``) against JAX;
3. a SavedModel written to the worker's private ``/tmp`` and loaded back;
4. when the snippet defines ``tf_f`` (a TensorFlow function), ``tf2jax.convert`` of it: the
   jaxpr it becomes, each eqn beside the TensorFlow op it came from, outputs and gradients
   against TensorFlow's.

Snippet names read here besides ``f`` and ``args``: ``polymorphic_shapes`` (jax2tf's argument,
one entry per positional argument) and ``tf_f``. Errors point at the user's line: a JAX error
inside ``f`` has its own frame; a specification JAX rejects or whose rank is not its
argument's, and a shape assertion that fails when TensorFlow runs the module, are blamed on the
``polymorphic_shapes`` line; an op tf2jax cannot convert on the line of ``tf_f`` that created
it (``op.traceback``); a ``tf_f`` that is not callable, or that TensorFlow or tf2jax refuse as
a whole (no frame inside it), on ``tf_f``'s line.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import tempfile
from collections.abc import Callable, Iterator
from typing import Any

import jax
import numpy as np
import tensorflow as tf
import tf2jax
from jax.experimental import jax2tf
from jaxscope.exhibit_api import (
    SNIPPET_FILENAME,
    InvalidSnippet,
    ProbeContext,
    SourceLoc,
    blame_line,
    jaxpr_view,
    setting_line,
)

from .events import (
    EqnFromOp,
    Jax2tfOutputsCompared,
    OutputCompared,
    SavedModelFile,
    SavedModelLoaded,
    Tf2jaxConverted,
    TfGraphTraced,
    TfOpView,
    TfTensorView,
    XlaCallModuleRead,
)

# The attributes of ``XlaCallModule`` shown in the event; ``module`` is shown as StableHLO.
MODULE_ATTR = "module"
# How a value is printed in the comparisons: numpy's text, small.
PRINT_OPTIONS = {"precision": 6, "threshold": 40, "edgeitems": 3}


def run(ctx: ProbeContext) -> None:
    """The four stages above, each a ``ctx.stage``."""
    snippet = ctx.snippet
    args = tuple(snippet.args)
    poly = polymorphic_shapes(ctx)
    tf_f = snippet.namespace.get("tf_f")
    tf_f_line = setting_line(snippet.source, "tf_f")
    if tf_f is not None and not callable(tf_f):  # before the jax2tf half, which takes seconds
        raise blame_line(
            InvalidSnippet(
                f"tf_f must be a TensorFlow function that takes args as f does (a def of "
                f"TensorFlow ops, or a tf.function), which tf2jax.convert turns into JAX; got "
                f"{type(tf_f).__name__} {tf_f!r}. Write it as a function, e.g. def tf_f(x): "
                f"return tf.sin(x), or leave tf_f out to run the jax2tf half alone."
            ),
            tf_f_line,
        )
    with ctx.stage("trace"):
        tf_fn = tf.function(
            jax2tf.convert(snippet.f, with_gradient=True, polymorphic_shapes=poly),
            autograph=False,
        )
        specs = tensor_specs(args, poly)
        symbolic = jax.export.symbolic_args_specs(args, poly)
        traces = (
            functools.partial(tf_fn.get_concrete_function, *specs),
            functools.partial(jax.export.export(jax.jit(snippet.f)), *symbolic),
        )
        # Both traced from one call site (one line, one frame stack): a module carries the
        # Python locations of the calls that traced it, the callers' lines included.
        concrete, exported = [call() for call in traces]
    ctx.emit(graph_traced(concrete, specs, poly))
    ctx.emit(call_module_read(concrete, exported))
    with ctx.stage("run"):
        ctx.emit(outputs_compared(ctx, tf_fn, snippet.f, args))
    with ctx.stage("call"):
        ctx.emit(saved_model(tf_fn, specs, snippet.f, args))
    if tf_f is not None:
        with ctx.stage("trace"):
            try:
                ctx.emit(tf2jax_converted(tf_f, args))
            except Exception as exc:
                # An error with no frame in tf_f (TensorFlow or tf2jax refused tf_f as a whole,
                # e.g. called with the wrong number of args) is tf_f's, not f's; a frame in
                # the snippet still wins (classify). An unsupported op is already blamed on the
                # line that created it.
                if not unsupported(exc):
                    blame_line(
                        exc,
                        tf_f_line,
                        "tf_f",
                        explanation=(
                            "Raised while tf2jax.convert traced and converted tf_f with args, "
                            "not at a line inside tf_f: TensorFlow or tf2jax refused tf_f as a "
                            "whole (its signature, what it returns)."
                        ),
                    )
                raise


def polymorphic_shapes(ctx: ProbeContext) -> list[str | None] | None:
    """The snippet's ``polymorphic_shapes`` (one per positional argument), or None."""
    value = ctx.snippet.namespace.get("polymorphic_shapes")
    if value is None:
        return None
    line = setting_line(ctx.snippet.source, "polymorphic_shapes")
    if not isinstance(value, (list, tuple)) or len(value) != len(ctx.snippet.args):
        raise blame_line(
            InvalidSnippet(
                f"polymorphic_shapes must be a list with one entry per argument "
                f"({len(ctx.snippet.args)}), got {value!r}"
            ),
            line,
        )
    poly = [None if v is None else str(v) for v in value]
    check_ranks(tuple(ctx.snippet.args), poly, line)
    return poly


def spec_rank(spec: str) -> int | None:
    """How many dimensions the specification ``spec`` names (None when JAX cannot say without
    the argument: ``"(b, ...)"``, or a spec it cannot parse)."""
    try:
        return len(jax.export.symbolic_shape(spec))
    except Exception:
        return None


def rank_error(i: int, spec: str, arg: Any, line: int | None) -> BaseException:
    """The ``polymorphic_shapes`` line's error for entry ``i``, whose dimensions are not one per
    axis of ``args[i]``."""
    shape = tuple(np.shape(arg))
    rank = spec_rank(spec)
    names = "" if rank is None else f" names {rank} dimension{'s' * (rank != 1)}, but"
    dims = ["b", *map(str, shape[1:])] if shape else []
    like = "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")"
    return blame_line(
        InvalidSnippet(
            f"polymorphic_shapes[{i}] = {spec!r}{names} args[{i}] has shape {shape} "
            f"({len(shape)} dimension{'s' * (len(shape) != 1)}). Write one dimension per axis "
            f"of args[{i}]: a variable for each polymorphic one, the size or _ for the others "
            f"(e.g. {like!r}), or end with ... for the rest ('(b, ...)'); None keeps args[{i}] "
            f"static."
        ),
        line,
    )


def check_ranks(args: tuple[Any, ...], poly: list[str | None], line: int | None) -> None:
    """Blame the ``polymorphic_shapes`` line for a specification JAX rejects (its own error,
    kept) or one whose rank is not its argument's. jax 0.10.2's ``symbolic_args_specs`` raises
    a bare ``IndexError`` for a specification with more dimensions than its argument and
    accepts one with fewer (jax2tf fails later in a ``safe_zip`` inside ``f``'s tracing)."""
    try:
        symbolic = jax.export.symbolic_args_specs(args, poly)
    except IndexError as exc:
        for i, (spec, arg) in enumerate(zip(poly, args, strict=True)):
            if spec is None:
                continue
            try:
                jax.export.symbolic_args_specs((arg,), (spec,))
            except IndexError:
                raise rank_error(i, spec, arg, line) from None
            except Exception:  # this entry has another error: JAX's own is shown
                continue
        raise blame_line(exc, line) from None
    except Exception as exc:  # JAX's parser: a syntax error, a size that is not the arg's
        raise blame_line(exc, line) from None
    for i, (spec, arg, sym) in enumerate(zip(poly, args, symbolic, strict=True)):
        if spec is None:
            continue
        for leaf, sym_leaf in zip(
            jax.tree_util.tree_leaves(arg), jax.tree_util.tree_leaves(sym), strict=False
        ):
            if len(sym_leaf.shape) != np.ndim(leaf):
                raise rank_error(i, spec, leaf, line)


def tensor_specs(args: tuple[Any, ...], poly: list[str | None] | None) -> list[tf.TensorSpec]:
    """One ``tf.TensorSpec`` per argument: its shape, with None for each dimension that
    ``polymorphic_shapes`` makes symbolic (``jax.export.symbolic_args_specs`` says which)."""
    symbolic = jax.export.symbolic_args_specs(args, poly)
    specs = []
    for i, (arg, sym) in enumerate(zip(args, symbolic, strict=True)):
        shape = [d if isinstance(d, int) else None for d in sym.shape]
        specs.append(tf.TensorSpec(shape, tf.as_dtype(np.asarray(arg).dtype), name=f"args_{i}"))
    return specs


def shape_text(shape: Any) -> str:
    """A TensorFlow shape as a tuple of sizes, None where unknown."""
    dims = tf.TensorShape(shape).as_list() if shape is not None else None
    return "<unknown rank>" if dims is None else str(tuple(dims))


def tensor_view(t: Any) -> TfTensorView:
    return TfTensorView(name=t.name, dtype=t.dtype.name, shape=shape_text(t.shape))


def op_source(op: Any) -> SourceLoc | None:
    """The innermost snippet frame of the op's creation traceback (``op.traceback``)."""
    for frame in reversed(list(op.traceback)):
        if frame.filename == SNIPPET_FILENAME:
            return SourceLoc(line=frame.lineno, function=frame.name)
    return None


def op_view(op: Any) -> TfOpView:
    return TfOpView(
        name=op.name,
        type=op.type,
        inputs=[t.name for t in op.inputs],
        outputs=[tensor_view(t) for t in op.outputs],
        source=op_source(op),
    )


def graph_def_text(graph: Any) -> str:
    """The graph's ``GraphDef`` in protobuf text, each ``XlaCallModule``'s ``module`` bytes
    replaced by a note of their size."""
    graph_def = graph.as_graph_def()
    for node in graph_def.node:
        if node.op == "XlaCallModule":
            size = len(node.attr[MODULE_ATTR].s)
            node.attr[MODULE_ATTR].s = f"<{size} bytes of StableHLO bytecode>".encode()
    return str(graph_def)


def graph_traced(
    concrete: Any, specs: list[tf.TensorSpec], poly: list[str | None] | None
) -> TfGraphTraced:
    return TfGraphTraced(
        tf_version=tf.__version__,
        with_gradient=True,
        polymorphic_shapes=list(poly) if poly is not None else [None] * len(specs),
        input_signature=[
            TfTensorView(name=s.name or "", dtype=s.dtype.name, shape=shape_text(s.shape))
            for s in specs
        ],
        ops=[op_view(op) for op in concrete.graph.get_operations()],
        graph_def=graph_def_text(concrete.graph),
    )


def call_module_op(graph: Any) -> Any:
    (op,) = [op for op in graph.get_operations() if op.type == "XlaCallModule"]
    return op


def call_module_read(concrete: Any, exported: jax.export.Exported) -> XlaCallModuleRead:
    op = call_module_op(concrete.graph)
    module = op.get_attr(MODULE_ATTR)
    ours = exported.mlir_module_serialized
    return XlaCallModuleRead(
        version=op.get_attr("version"),
        platforms=[p.decode() for p in op.get_attr("platforms")],
        tin=[tf.as_dtype(t).name for t in op.get_attr("Tin")],
        tout=[tf.as_dtype(t).name for t in op.get_attr("Tout")],
        sout=[
            [-1 if d is None else d for d in tf.TensorShape(s).as_list()]
            for s in op.get_attr("Sout")
        ],
        dim_args_spec=[d.decode() for d in op.get_attr("dim_args_spec")],
        disabled_checks=[d.decode() for d in op.get_attr("disabled_checks")],
        has_token_input_output=op.get_attr("has_token_input_output"),
        use_shardy_partitioner=op.get_attr("use_shardy_partitioner"),
        function_list=[f.name for f in op.get_attr("function_list")],
        module_bytes=len(module),
        module_sha256=hashlib.sha256(module).hexdigest(),
        export_sha256=hashlib.sha256(ours).hexdigest(),
        same_as_export=module == ours,
        export_platforms=list(exported.platforms),
        in_avals=[str(a) for a in exported.in_avals],
        out_avals=[str(a) for a in exported.out_avals],
        uses_global_constants=exported.uses_global_constants,
        stablehlo=exported.mlir_module(),
    )


def np_text(value: Any) -> str:
    return np.array2string(np.asarray(value), **PRINT_OPTIONS)  # type: ignore[arg-type]


def compared(path: str, tf_value: Any, jax_value: Any) -> OutputCompared:
    a, b = np.asarray(tf_value), np.asarray(jax_value)
    diff = float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64)))) if a.size else 0.0
    return OutputCompared(
        path=path,
        shape=list(b.shape),
        dtype=b.dtype.name,
        tf_value=np_text(a),
        jax_value=np_text(b),
        max_abs_diff=diff,
    )


def leaves_with_paths(prefix: str, tree: Any) -> list[tuple[str, Any]]:
    leaves, _ = jax.tree_util.tree_flatten_with_path(tree)
    return [(prefix + jax.tree_util.keystr(p), v) for p, v in leaves]


def is_float(x: Any) -> bool:
    """Whether ``x`` (an array, a tracer, a Python number) has a floating dtype."""
    dtype = x.dtype if hasattr(x, "dtype") else np.asarray(x).dtype
    return bool(np.issubdtype(dtype, np.floating))


def float_sum_jax(out: Any) -> Any:
    """The sum of every float leaf of ``out`` (the scalar both sides differentiate)."""
    return sum(jax.numpy.sum(v) for v in jax.tree_util.tree_leaves(out) if is_float(v))


def float_sum_tf(out: Any) -> Any:
    leaves = [v for v in tf.nest.flatten(out) if v.dtype.is_floating]
    return tf.add_n([tf.reduce_sum(v) for v in leaves])


def outputs_compared(
    ctx: ProbeContext, tf_fn: Any, f: Callable[..., Any], args: tuple[Any, ...]
) -> Jax2tfOutputsCompared:
    tf_args = [tf.constant(np.asarray(a)) for a in args]
    try:
        tf_out = tf_fn(*tf_args)
    except tf.errors.InvalidArgumentError as exc:
        # The module's shape assertions ran in TensorFlow: the arguments do not fit
        # polymorphic_shapes, which TensorFlow's signature (None for each variable) cannot say.
        line = setting_line(ctx.snippet.source, "polymorphic_shapes")
        raise blame_line(
            exc,
            line,
            explanation=(
                "TensorFlow's signature has None for each dimension variable, so it accepted "
                "these arguments; running the serialized module with these sizes then failed "
                "(its shape refinement or its shape assertions). Make args fit "
                "polymorphic_shapes (one value per dimension variable)."
            ),
        ) from None
    jax_out = f(*args)
    outputs = [
        compared(path, t, j)
        for (path, j), t in zip(
            leaves_with_paths("out", jax_out), tf.nest.flatten(tf_out), strict=True
        )
    ]
    float_args = [i for i, a in enumerate(args) if is_float(a)]
    gradients: list[OutputCompared] = []
    gradient_ops: list[str] = []
    if float_args and any(is_float(v) for v in jax.tree_util.tree_leaves(jax_out)):

        def gradient(*xs: Any) -> Any:
            with tf.GradientTape() as tape:
                tape.watch(list(xs))
                y = float_sum_tf(tf_fn(*xs))
            return tape.gradient(y, [xs[i] for i in float_args])

        tf_grad = tf.function(gradient, autograph=False)
        tf_grads = tf_grad(*tf_args)
        gradient_ops = library_op_types(tf_grad.get_concrete_function(*tf_args).graph)
        jax_grads = jax.grad(lambda *xs: float_sum_jax(f(*xs)), argnums=tuple(float_args))(*args)
        gradients = [
            compared(f"d/dargs[{i}]", t, j)
            for i, t, j in zip(float_args, tf_grads, jax_grads, strict=True)
        ]
    return Jax2tfOutputsCompared(outputs=outputs, gradients=gradients, gradient_ops=gradient_ops)


def library_op_types(graph: Any) -> list[str]:
    """The op types of every function in the graph's function library (the forward and the
    gradient functions TensorFlow made), in order, each once."""
    seen: dict[str, None] = {}
    for fn in graph.as_graph_def().library.function:
        for node in fn.node_def:
            seen.setdefault(node.op, None)
    return list(seen)


def saved_model(
    tf_fn: Any, specs: list[tf.TensorSpec], f: Callable[..., Any], args: tuple[Any, ...]
) -> SavedModelLoaded:
    module = tf.Module()
    module.f = tf_fn
    signature = tf_fn.get_concrete_function(*specs)
    with tempfile.TemporaryDirectory(prefix="saved_model-") as folder:
        tf.saved_model.save(module, folder, signatures={"serving_default": signature})
        files = [
            SavedModelFile(path=os.path.relpath(os.path.join(root, name), folder), bytes=size)
            for root, _, names in sorted(os.walk(folder))
            for name in sorted(names)
            if (size := os.path.getsize(os.path.join(root, name))) >= 0
        ]
        loaded = tf.saved_model.load(folder)
        serving = loaded.signatures["serving_default"]
        _, in_kwargs = serving.structured_input_signature
        inputs = [
            TfTensorView(name=k, dtype=s.dtype.name, shape=shape_text(s.shape))
            for k, s in sorted(in_kwargs.items())
        ]
        outs = serving.structured_outputs
        outputs = [
            TfTensorView(name=k, dtype=s.dtype.name, shape=shape_text(s.shape))
            for k, s in sorted(outs.items())
        ]
        result = serving(
            **{s.name: tf.constant(np.asarray(a)) for s, a in zip(specs, args, strict=True)}
        )
    jax_leaves = leaves_with_paths("out", f(*args))
    # A signature's outputs are a dict ("output_0", ...), in the flat order of f's outputs.
    ordered = [result[f"output_{i}"] for i in range(len(jax_leaves))]
    return SavedModelLoaded(
        files=files,
        signature="serving_default",
        inputs=inputs,
        outputs=outputs,
        compared=[compared(p, t, j) for (p, j), t in zip(jax_leaves, ordered, strict=True)],
    )


@contextlib.contextmanager
def scoped_ops() -> Iterator[None]:
    """Run each TensorFlow op's conversion inside ``jax.named_scope("<type>:<name>")``, so that
    the eqns it traces carry the op in their name stack. tf2jax 0.3.8 calls one ``_OpNode``
    per op of the graph (``tf2jax._src.tf2jax._OpNode.__call__``); the wrapper is removed on
    exit."""
    from tf2jax._src import tf2jax as impl

    original = impl._OpNode.__call__

    @functools.wraps(original)
    def call(self: Any, *a: Any, **k: Any) -> Any:
        with jax.named_scope(f"{self.op}:{self.name}"):
            return original(self, *a, **k)

    impl._OpNode.__call__ = call
    try:
        yield
    finally:
        impl._OpNode.__call__ = original


def unsupported(exc: BaseException) -> bool:
    """Whether ``exc`` is tf2jax's refusal of a TensorFlow op it has no rule for."""
    return isinstance(exc, ValueError) and "Unsupported operations" in str(exc)


def unsupported_line(concrete: Any, exc: ValueError) -> tuple[int | None, str]:
    """The snippet line that created the first op tf2jax named as unsupported, and its type."""
    message = str(exc)
    for op in concrete.graph.get_operations():
        if f"'{op.type}'" in message:
            source = op_source(op)
            return (source.line if source else None), op.type
    return None, ""


def eqn_ops(view: Any, ops: dict[str, str]) -> list[EqnFromOp]:
    rows = []
    for eqn in view.eqns:
        scope = eqn.name_stack.split("/")[0] if eqn.name_stack else ""
        tf_type, _, tf_name = scope.partition(":")
        known = tf_name in ops
        rows.append(
            EqnFromOp(
                eqn=eqn.index,
                primitive=eqn.primitive,
                tf_op=tf_name if known else "",
                tf_type=tf_type if known else "",
            )
        )
    return rows


def tf2jax_converted(tf_f: Any, args: tuple[Any, ...]) -> Tf2jaxConverted:
    tf_args = [tf.constant(np.asarray(a)) for a in args]
    fn = tf_f if isinstance(tf_f, tf.types.experimental.GenericFunction) else tf.function(tf_f)
    concrete = fn.get_concrete_function(*tf_args)
    tf_ops = [op_view(op) for op in concrete.graph.get_operations()]
    try:
        jax_fn, params = tf2jax.convert(fn, *tf_args)
    except ValueError as exc:
        if not unsupported(exc):
            raise
        line, op_type = unsupported_line(concrete, exc)
        raise blame_line(
            exc,
            line,
            "tf_f",
            explanation=(
                f"tf2jax {tf2jax.__version__} has no JAX rule for the TensorFlow op {op_type} "
                "this line creates. Write it with ops tf2jax converts, or write that part in "
                "JAX and call it through jax2tf."
            ),
        ) from None
    with scoped_ops():
        closed = jax.make_jaxpr(lambda *xs: jax_fn(params, *xs))(*args)
    view = jaxpr_view(closed)
    jax_out = jax_fn(params, *args)
    tf_out = fn(*tf_args)
    outputs = [
        compared(path, t, j)
        for (path, j), t in zip(
            leaves_with_paths("out", jax_out), tf.nest.flatten(tf_out), strict=True
        )
    ]
    float_args = [i for i, a in enumerate(args) if is_float(a)]
    gradients: list[OutputCompared] = []
    if float_args:
        jax_grads = jax.grad(
            lambda *xs: float_sum_jax(jax_fn(params, *xs)), argnums=tuple(float_args)
        )(*args)
        with tf.GradientTape() as tape:
            tape.watch([tf_args[i] for i in float_args])
            y = float_sum_tf(fn(*tf_args))
        tf_grads = tape.gradient(y, [tf_args[i] for i in float_args])
        gradients = [
            compared(f"d/dargs[{i}]", t, j)
            for i, t, j in zip(float_args, tf_grads, jax_grads, strict=True)
        ]
    return Tf2jaxConverted(
        tf_ops=tf_ops,
        jaxpr=view,
        eqns=eqn_ops(view, {op.name: op.type for op in tf_ops}),
        params=sorted(params),
        outputs=outputs,
        gradients=gradients,
    )
