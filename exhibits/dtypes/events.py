"""The dtypes exhibit's events: JAX's type promotion table (``promotion_tabulated``, one per
``jax_enable_x64`` setting) and the result type of the snippet's arguments
(``result_type_computed``).

The types are those of JAX's type promotion lattice (https://docs.jax.dev/en/latest/type_promotion.html):
bool, the signed and unsigned ints, bfloat16/float16/float32/float64, complex64/complex128, and
the weak types of Python's ``int``, ``float`` and ``complex``. Each is written as JAX writes
dtypes in a jaxpr (``i32``, ``bf16``, ``c64``), and a weak type as the promotion docs write it
(``i*``, ``f*``, ``c*``).

Imports only pydantic and ``jaxscope.protocol``.
"""

from __future__ import annotations

from typing import Literal

from jaxscope.exhibit_api import EventBase, SourceLoc, WireModel


class JaxType(WireModel):
    """A node of the promotion lattice: ``dtype`` its numpy dtype name (``int32``; for a weak
    type, the dtype ``np.dtype`` gives the Python type: ``int64``, ``float64``, ``complex128``),
    ``weak`` whether it is a weak type, ``code`` its short name (``i32``, ``f*``)."""

    code: str
    dtype: str
    weak: bool = False


class PromotionCell(WireModel):
    """One cell of the table: ``join`` the lattice's join of the row and column types
    (``jnp.promote_types``, weak when the join is a weak type); ``result`` the dtype of an array
    of the join under the same setting (``jax.dtypes.canonicalize_dtype``: with x64 off a 64-bit
    type becomes 32 bits)."""

    join: JaxType
    result: str


class PromotionTabulated(EventBase):
    """``jnp.promote_types`` of every pair of ``types`` with ``jax_enable_x64`` set to ``x64``
    (``cells[i][j]`` joins ``types[i]`` and ``types[j]``). ``unpromoted``: the narrow dtypes JAX
    also defines (int4, float8_e4m3fn, ...), dead ends of its lattice: no type is above them, so
    promoting one with a wider type raises; ``unpromoted_error`` JAX's message for the first with
    float32."""

    type: Literal["promotion_tabulated"] = "promotion_tabulated"
    x64: bool
    types: list[JaxType]
    cells: list[list[PromotionCell]]
    unpromoted: list[str] = []
    unpromoted_error: str = ""


class ArgumentDtype(WireModel):
    """One leaf of the snippet's arguments: its key path (``args[0]``), what it is
    (``jax.Array``, ``numpy.ndarray``, ``numpy.int8``, ``float``), and its node in the lattice
    with x64 off and on (a numpy float64 array counts as float32 with x64 off; a Python float
    is ``f*`` either way)."""

    path: str
    python_type: str
    x64_off: JaxType
    x64_on: JaxType


class PromotionStep(WireModel):
    """One join of the fold that gives the result type: ``row`` joined with ``col`` is ``join``
    (the table's cell), left to right over the arguments."""

    row: str
    col: str
    join: str


class ResultTypeAnswer(WireModel):
    """``jax.dtypes.result_type(*leaves, return_weak_type_flag=True)`` with x64 set to ``x64``:
    ``dtype`` (what ``jnp.result_type`` returns), ``weak``, and ``code`` (the result's node);
    ``steps``: the table's cells that fold the arguments' nodes into the result."""

    x64: bool
    dtype: str
    weak: bool
    code: str
    steps: list[PromotionStep] = []


class ResultTypeComputed(EventBase):
    """The result type of the snippet's arguments (the leaves of ``args`` and ``kwargs``, static
    arguments left out) with x64 off and on; ``user_x64`` the setting the snippet ran with."""

    type: Literal["result_type_computed"] = "result_type_computed"
    args: list[ArgumentDtype]
    answers: list[ResultTypeAnswer]
    user_x64: bool


class DtypeChange(WireModel):
    """A dtype JAX changed without being asked. ``kind`` ``promoted``: inside ``f``, a value
    derived from the arguments widened by an implicit promotion that lasts to an output
    (``jaxscope.internals.dtype_changes``): ``api`` what the user called at ``source``'s line
    (``*``, ``/``, ``@``, ``jnp.where``, ``Linear.__call__``), ``partner`` the operand it met
    (``f32[] constant``), ``count`` the eqns of that line that did the same. ``demoted``: an
    argument leaf (``api`` its path, ``args[0]``; ``source`` the line that sets ``args``) that
    JAX canonicalizes to 32 bits with x64 off and whose values change by it: ``changed`` of
    ``total`` elements, the first (``example``: its index, value before and after, as numpy
    prints them). ``from_type``/``to_type``: types as a jaxpr writes them (``bf16[4,8]``).

    ``precision_lost`` (issue 33): a bfloat16/float16 result of ``f`` that differs from the same
    computation in float32 by more than the dtype's rounding
    (``jaxscope.internals.precision_loss``): ``api`` what the user called at ``source``'s line,
    ``primitive`` the eqn, ``from_type`` the result's type and ``to_type`` float32's,
    ``changed`` of ``total`` elements off, the first in ``example`` (its index, the result and
    float32's), ``corruption`` how (``overflow``, ``whole_number``, ``beyond_rounding``), ``fix``
    what applies to that eqn (``preferred_element_type``, an upcast, a float32 carry).

    ``corrupted``: of the ``changed`` elements of a demotion, those the 32-bit copy does not
    merely round (``docs/design/0024-findings.md``): ``corruption`` says how the first was
    (``overflow``: a finite float that float32 holds as inf; ``underflow``: a nonzero float
    below float32's smallest normal, held as 0 or as a subnormal with digits lost;
    ``whole_number``: in a float array of whole numbers, one above 2**24 that float32 holds as
    another whole number; ``wrapped``: an integer outside the 32-bit range, wrapped around), and
    ``corrupt_example`` which. ``finding``: the change is a finding (a promotion; a demotion
    with ``corrupted`` elements); a demotion that only rounds is a note."""

    kind: Literal["promoted", "demoted", "precision_lost"]
    api: str
    source: SourceLoc | None = None
    from_dtype: str
    to_dtype: str
    from_type: str
    to_type: str
    partner: str | None = None
    count: int = 1
    changed: int | None = None
    total: int | None = None
    example: str | None = None
    corrupted: int = 0
    corruption: (
        Literal["overflow", "underflow", "whole_number", "wrapped", "beyond_rounding"] | None
    ) = None
    corrupt_example: str | None = None
    finding: bool = True
    primitive: str | None = None
    fix: str | None = None


class DtypeChangesFound(EventBase):
    """The dtype changes of the snippet under its own x64 setting (``x64``): the arguments'
    demotions, then ``f``'s lasting implicit promotions, read from ``jax.make_jaxpr(f)`` (its
    ``eqns_read`` eqns, calls inlined). Empty ``changes``: JAX kept every dtype."""

    type: Literal["dtype_changes_found"] = "dtype_changes_found"
    x64: bool
    changes: list[DtypeChange]
    eqns_read: int = 0
    # Why low-precision results were not compared with float32 (None: they were, or f has none):
    # abstract arguments, or a program too big to run twice eqn by eqn.
    precision_unchecked: str | None = None


# This exhibit's events (checked: every event class defined here must be listed, see
# ``jaxscope.events``).
EVENTS: tuple[type[EventBase], ...] = (PromotionTabulated, ResultTypeComputed, DtypeChangesFound)
