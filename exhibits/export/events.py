"""The export exhibit's events: ``jax.export`` of the snippet's ``f``, in the order the probe
meets them.

1. ``export_specs_built``: the argument specifications ``export`` traces with
   (``jax.export.symbolic_args_specs`` of ``args`` and the snippet's ``shapes``), before
   exporting, so that a failed export still shows what was asked.
2. ``function_exported``: the ``jax.export.Exported``'s fields.
3. ``stablehlo_exported``: ``Exported.mlir_module()``, the StableHLO text (summarised when big).
4. ``dims_solved``: the dimension variables as the exported module computes them from the
   arguments' shapes, and the constraints it asserts (only for a shape-polymorphic export).
5. ``export_round_tripped``: ``serialize()`` -> ``jax.export.deserialize`` -> ``.call`` against
   ``jax.jit(f)``, at ``args`` and at another size of the dimension variables.

Imports only pydantic and ``jaxscope.protocol``.
"""

from __future__ import annotations

from typing import Literal, Self

from jaxscope.exhibit_api import AvalView, EventBase, WireModel

# A module text longer than this is streamed to the page as its first lines and fetched whole on
# demand (design 0023); the CLI always prints it whole.
MODULE_SUMMARY_BYTES = 256 * 1024


class ExportedAval(WireModel):
    """One flat argument or result: its key path (``args[1]``, ``args[0]['w1']``, ``out[0]``),
    its aval (``aval.short`` is JAX's ``str_short``: ``f32[b,8]``; a symbolic dimension is -1 in
    ``aval.shape``) and each dimension as JAX prints it (``["b", "8"]``, ``["2*b"]``)."""

    path: str
    aval: AvalView
    dims: list[str]


class ArgumentSpec(WireModel):
    """The specification given for one positional argument: ``shapes`` entry as the snippet
    wrote it (``"(b, 8)"``; None: its own concrete shapes), ``static`` for a static argument."""

    index: int
    spec: str | None
    static: bool = False


class ExportSpecsBuilt(EventBase):
    """What ``jax.export.export(jax.jit(f), platforms=platforms)`` is called with: ``leaves``
    the flat argument specifications (``symbolic_args_specs(args, shapes, constraints=...)``),
    ``specs`` the snippet's ``shapes`` per positional argument, ``constraints`` the snippet's
    explicit constraints (``"b <= 64"``), ``platforms`` the snippet's (None: JAX's default, the
    default backend's platform), ``*_line`` the snippet lines that set them."""

    type: Literal["export_specs_built"] = "export_specs_built"
    leaves: list[ExportedAval]
    specs: list[ArgumentSpec]
    constraints: list[str]
    platforms: list[str] | None
    shapes_line: int | None = None
    platforms_line: int | None = None
    constraints_line: int | None = None


class FunctionExported(EventBase):
    """The ``jax.export.Exported``'s fields: ``in_avals``/``out_avals`` (flat, symbolic
    dimensions included), ``platforms``, ``calling_convention_version``, ``nr_devices``,
    ``module_kept_var_idx``, ``uses_global_constants``, ``disabled_safety_checks``
    (``str`` of each), ``ordered_effects``/``unordered_effects`` (``str``),
    ``in_shardings_hlo``/``out_shardings_hlo`` (``str``, None unspecified),
    ``serialized_bytes`` (``len(exported.serialize())``), ``export_ms`` (the ``export`` call's
    wall time, tracing and lowering included)."""

    type: Literal["function_exported"] = "function_exported"
    fun_name: str
    in_avals: list[ExportedAval]
    out_avals: list[ExportedAval]
    platforms: list[str]
    calling_convention_version: int
    nr_devices: int
    module_kept_var_idx: list[int]
    uses_global_constants: bool
    disabled_safety_checks: list[str]
    ordered_effects: list[str]
    unordered_effects: list[str]
    in_shardings_hlo: list[str | None]
    out_shardings_hlo: list[str | None]
    serialized_bytes: int
    export_ms: float


class StablehloExported(EventBase):
    """``Exported.mlir_module()``: the StableHLO module text (``text``), its ``line_count`` and
    ``byte_count`` (UTF-8), the number of ``shape_assertion`` custom calls in it, and
    ``complete`` false in a summary (``text`` then holds the first lines only)."""

    type: Literal["stablehlo_exported"] = "stablehlo_exported"
    text: str
    line_count: int
    byte_count: int
    shape_assertions: int
    complete: bool = True

    def summarised(self) -> Self | None:
        """Streamed whole up to :data:`MODULE_SUMMARY_BYTES`; beyond, the lines that fit."""
        if self.byte_count <= MODULE_SUMMARY_BYTES:
            return None
        head = self.text.encode()[:MODULE_SUMMARY_BYTES].decode(errors="ignore")
        head = head[: head.rfind("\n") + 1] if "\n" in head else head
        return self.model_copy(update={"text": head, "complete": False})


class DimVariable(WireModel):
    """One dimension variable: ``name`` (``b``), ``solved_as`` how the exported module computes
    it from the arguments (JAX's text: ``args[1].shape[0]``, ``floordiv(args[0].shape[0], 2)``),
    ``value`` its value for the snippet's ``args`` (None: ``args`` break a constraint, and the
    round trip's first call shows JAX's refusal)."""

    name: str
    solved_as: str
    value: int | None


class DimConstraintView(WireModel):
    """One constraint JAX derived: ``text`` (``args[1].shape[0] >= 1``), its ``left``,
    ``comparator`` (``==``/``>=``) and ``right``, and ``message`` the error the module's
    ``shape_assertion`` raises when it fails (``{0}``... stand for ``message_inputs``)."""

    text: str
    left: str
    comparator: str
    right: str
    message: str
    message_inputs: list[str]


class DimsSolved(EventBase):
    """The dimension variables of a shape-polymorphic export, as JAX solves them from the
    arguments' shapes, and the ``constraints`` it asserts when the module is called, in the
    module's order; ``shape_assertions`` the ``shape_assertion`` custom calls in the module
    (fewer than the constraints when some are decided at export time)."""

    type: Literal["dims_solved"] = "dims_solved"
    variables: list[DimVariable]
    constraints: list[DimConstraintView]
    shape_assertions: int


class RoundTripCall(WireModel):
    """One call of the deserialized export: ``label`` (``args``, or ``b=6``), ``dim_values`` of
    the call, the argument shapes (``f32[6,8]``), the outputs' avals; ``equal`` whether each
    output is within the dtype's tolerance of ``jax.jit(f)``'s (``np.allclose``, rtol 1e-5,
    atol 1e-6 for floats, exact otherwise), ``identical`` whether bit for bit, ``max_abs_diff``
    the largest absolute difference (None: no numeric output); ``error`` JAX's message when the
    call raised (a shape assertion), then the rest is empty; ``call_ms`` its wall time (the
    compile of the deserialized module included). ``constraint_check``: a call made to show
    JAX's check (every dimension variable 0, which breaks ``>= 1``), expected to raise."""

    label: str
    dim_values: dict[str, int]
    arg_shapes: list[str]
    out_avals: list[str]
    equal: bool
    identical: bool
    max_abs_diff: float | None
    error: str | None = None
    call_ms: float
    constraint_check: bool = False


class ExportRoundTripped(EventBase):
    """``blob = exported.serialize()`` (``serialized_bytes``), ``jax.export.deserialize(blob)``
    (``same_fields``: its avals, trees, platforms, calling convention and kept vars equal the
    original's) and its ``.call``: ``calls`` (empty when ``callable_here`` is false: the
    default ``backend`` is not among the exported platforms, ``note`` says so)."""

    type: Literal["export_round_tripped"] = "export_round_tripped"
    serialized_bytes: int
    same_fields: bool
    backend: str
    callable_here: bool
    calls: list[RoundTripCall]
    note: str | None = None
    serialize_ms: float
    deserialize_ms: float


# This exhibit's events (checked: every event class defined here must be listed, see
# ``jaxscope.events``).
EVENTS: tuple[type[EventBase], ...] = (
    ExportSpecsBuilt,
    FunctionExported,
    StablehloExported,
    DimsSolved,
    ExportRoundTripped,
)
