"""The Compiled station: optimized HLO text, XLA's cost estimate and memory statistics.

Sources (``jax.stages.Compiled``, public):

* ``compiled_text`` is ``Compiled.as_text()`` (the optimized, scheduled HLO module).
* ``cost`` is ``Compiled.cost_analysis()``: a dict of floats from XLA's HLO cost analysis
  (``flops``, ``transcendentals``, ``bytes accessed``, per-operand ``bytes accessed0{}``,
  ``utilization0{}``...). Some jaxlib versions return a list with one dict per device program:
  we keep the first. ``None`` when the backend reports none.
* ``memory`` holds the integer fields of ``Compiled.memory_analysis()``
  (``jaxlib._jax.CompiledMemoryStats``), all in bytes: ``argument_size_in_bytes``,
  ``output_size_in_bytes``, ``alias_size_in_bytes``, ``temp_size_in_bytes``,
  ``generated_code_size_in_bytes``, ``peak_memory_in_bytes`` and their ``host_*`` twins.
  ``None`` when the backend has no memory analysis.
* ``hlo_links`` link each instruction line of ``compiled_text`` to its name stack, user line and
  eqns (:func:`hlo_links`).

Where the links come from. XLA keeps, on each optimized instruction, the ``OpMetadata`` it got
from the lowered module's debug locations: ``op_name`` (JAX's name stack, ``jit(f)/sin``) and a
``stack_frame_id`` into the module's stack frame index (the Python traceback JAX attached to the
op, deduplicated into ``FileNames``, ``FunctionNames``, ``FileLocations`` and ``StackFrames``).
The structured form is the ``HloModuleProto``, but jaxlib 0.10.2 exposes it only as serialized
bytes (``HloModule.as_serialized_hlo_module_proto()``) and ships no proto classes to read it
(no ``hlo_pb2``), and its ``HloInstruction`` binding has ``name``/``opcode``/``operands`` but no
metadata. So this module reads them from ``Compiled.as_text()``, which prints both, with small
regular expressions over the lines XLA prints for them (the four tables at the top, each
instruction's ``%name = shape opcode(...)``, ``calls=`` and ``metadata={...}``). Two quirks of
that text: ``StackFrames`` prints ``parent_frame_id`` one above the proto's (a frame with no
parent prints 1; ``exhibits/stations/test_hlo_links.py`` reads a helper's chain back through
it), and XLA keys ``FileLocations`` on file, function, line and column, so two ops that start
at one column share the first one's end column: a link's ``source`` has no end.
"""

from __future__ import annotations

import codecs
import math
import re
from dataclasses import dataclass
from typing import Any

from jaxscope.internals.lowering import MAX_AMBIGUOUS, EqnIndex
from jaxscope.protocol import SourceLoc
from jaxscope.snippet_model import SNIPPET_FILENAME

MEMORY_FIELDS = (
    "argument_size_in_bytes",
    "output_size_in_bytes",
    "alias_size_in_bytes",
    "temp_size_in_bytes",
    "generated_code_size_in_bytes",
    "peak_memory_in_bytes",
    "host_argument_size_in_bytes",
    "host_output_size_in_bytes",
    "host_alias_size_in_bytes",
    "host_temp_size_in_bytes",
    "host_generated_code_size_in_bytes",
)

CAVEAT_ESTIMATE = (
    "cost_analysis is XLA's static estimate from the HLO cost model, not a measurement: it does "
    "not see runtime effects (caches, overlap, dispatch)."
)
CAVEAT_FLOPS = (
    "flops counts the floating-point operations of the optimized HLO by XLA's cost model (a dot "
    "of [m,k]x[k,n] counts 2*m*k*n, a sum of n elements n-1 adds); transcendentals (tanh, exp, "
    "...) are counted separately, not as flops. Lowered.cost_analysis() (before optimization) "
    "may give other numbers."
)
CAVEAT_BYTES = (
    "'bytes accessed' sums operand and result sizes of each HLO op; it is not DRAM traffic."
)
CAVEAT_MISSING_COST = "this backend reports no cost_analysis."
CAVEAT_NEGATIVE = "a value of -1 means the backend does not report that figure: {keys}."
CAVEAT_MISSING_MEMORY = "this backend reports no memory_analysis."


def normalize_cost(raw: Any) -> dict[str, float] | None:
    """``Compiled.cost_analysis()`` as one ``{name: float}`` dict (first entry of a list)."""
    if raw is None:
        return None
    if isinstance(raw, (list, tuple)):
        if not raw:
            return None
        raw = raw[0]
    out: dict[str, float] = {}
    for key, value in dict(raw).items():
        try:
            number = float(value)
        except (TypeError, ValueError):
            continue
        if math.isfinite(number):
            out[str(key)] = number
    return out


def memory_fields(stats: Any) -> dict[str, int] | None:
    """The byte counts of a ``CompiledMemoryStats`` (fields this jaxlib lacks are left out)."""
    if stats is None:
        return None
    return {name: int(getattr(stats, name)) for name in MEMORY_FIELDS if hasattr(stats, name)}


# ---------------------------------------------------------------- optimized HLO links

_TABLE_RE = re.compile(r"^(FileNames|FunctionNames|FileLocations|StackFrames)$")
_NAMED_RE = re.compile(r'^(\d+) "((?:[^"\\]|\\.)*)"$')  # 2 "<snippet>"
_RECORD_RE = re.compile(r"^(\d+) \{([^}]*)\}$")  # 3 {file_name_id=2 ... line=5 ...}
_INT_FIELD_RE = re.compile(r"(\w+)=(-?\d+)")
_STR_FIELD_RE = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')
_COMPUTATION_RE = re.compile(r"^(?:ENTRY )?%([^\s(]+) .*\{$")
# An instruction: ``[ROOT] %name = shape opcode(``; the shape (a tuple too) holds no
# " word(", so the first one is the opcode.
_INSTRUCTION_RE = re.compile(r"^\s+(?:ROOT )?%([^\s=]+) = .*?\s([a-z][a-z0-9-]*)\(")
_CALLS_RE = re.compile(r"\bcalls=\{?((?:%[^\s,}]+(?:, )?)+)\}?")
_METADATA_RE = re.compile(r'\bmetadata=\{((?:[^}"]|"(?:[^"\\]|\\.)*")*)\}')


def _unescape(text: str) -> str:
    """A string as XLA printed it (C escapes) back to its characters."""
    if "\\" not in text:
        return text
    return codecs.escape_decode(text.encode())[0].decode("utf-8", "replace")


@dataclass(frozen=True)
class HloFrame:
    """One frame of the module's stack frame index: a place in a file and its function."""

    file: str
    function: str
    line: int
    column: int | None
    end_line: int | None
    end_column: int | None


@dataclass
class StackFrameIndex:
    """The module's ``FileNames``/``FunctionNames``/``FileLocations``/``StackFrames`` tables.

    ``frames`` maps a ``stack_frame_id`` to its file location id and its parent frame id (the
    proto's: 0 for none)."""

    file_names: dict[int, str]
    function_names: dict[int, str]
    locations: dict[int, dict[str, int]]
    frames: dict[int, tuple[int, int]]

    def chain(self, frame_id: int) -> list[HloFrame]:
        """The frames of a ``stack_frame_id``, innermost first (the instruction's own line,
        then the lines that called it)."""
        out: list[HloFrame] = []
        seen: set[int] = set()
        while frame_id in self.frames and frame_id not in seen:
            seen.add(frame_id)
            location_id, frame_id = self.frames[frame_id]
            loc = self.locations.get(location_id)
            if loc is None:
                break
            out.append(
                HloFrame(
                    file=self.file_names.get(loc.get("file_name_id", 0), ""),
                    function=self.function_names.get(loc.get("function_name_id", 0), ""),
                    line=loc.get("line", 0),
                    column=loc.get("column"),
                    end_line=loc.get("end_line"),
                    end_column=loc.get("end_column"),
                )
            )
        return out


def stack_frame_index(lines: list[str]) -> StackFrameIndex:
    """The stack frame tables printed at the top of an HLO module's text."""
    index = StackFrameIndex({}, {}, {}, {})
    table: str | None = None
    for line in lines:
        if m := _TABLE_RE.match(line):
            table = m.group(1)
            continue
        if not line.strip():
            continue
        if line.startswith(("%", "ENTRY ")):
            break  # the computations start: the tables are over
        if table in ("FileNames", "FunctionNames") and (m := _NAMED_RE.match(line)):
            names = index.file_names if table == "FileNames" else index.function_names
            names[int(m.group(1))] = _unescape(m.group(2))
        elif table in ("FileLocations", "StackFrames") and (m := _RECORD_RE.match(line)):
            fields = {k: int(v) for k, v in _INT_FIELD_RE.findall(m.group(2))}
            if table == "FileLocations":
                index.locations[int(m.group(1))] = fields
            else:
                # XLA prints parent_frame_id one above the proto's (see the module docstring).
                parent = fields.get("parent_frame_id", 1) - 1
                index.frames[int(m.group(1))] = (fields.get("file_location_id", 0), parent)
    return index


def _metadata(line: str) -> tuple[str | None, list[HloFrame], dict[str, int]] | None:
    """An instruction's ``op_name``, its frames (innermost first) and its integer fields, or
    ``None`` when it carries no metadata."""
    m = _METADATA_RE.search(line)
    if m is None:
        return None
    strings = {k: _unescape(v) for k, v in _STR_FIELD_RE.findall(m.group(1))}
    numbers = {k: int(v) for k, v in _INT_FIELD_RE.findall(_STR_FIELD_RE.sub("", m.group(1)))}
    frames: list[HloFrame] = []
    if "source_file" in strings and "source_line" in numbers:
        # Metadata without a stack frame index names the innermost frame itself.
        frames.append(
            HloFrame(
                file=strings["source_file"],
                function="",
                line=numbers["source_line"],
                column=numbers.get("source_column"),
                end_line=numbers.get("source_end_line"),
                end_column=numbers.get("source_end_column"),
            )
        )
    return strings.get("op_name"), frames, numbers


@dataclass
class _Instruction:
    """An instruction line while :func:`hlo_links` works."""

    line: int
    name: str
    opcode: str
    computation: str
    op_name: str | None
    source: SourceLoc | None
    eqns: tuple[int, ...]
    calls: list[str]


@dataclass(frozen=True)
class HloLinkRecord:
    """One instruction of the optimized HLO linked back: its 1-based ``line``, name, opcode and
    computation, the ``op_name`` and snippet line of its metadata, and the eqns it computes
    (those of the computations it calls included). The stations probe makes its ``HloLink``
    view of it (design 0059: the walker returns records, the exhibit builds its events)."""

    line: int
    instruction: str
    opcode: str
    computation: str
    op_name: str | None
    source: SourceLoc | None
    eqn_indices: list[int]


@dataclass(frozen=True)
class CompiledModule:
    """A ``jax.stages.Compiled`` read: its optimized HLO text, cost and memory analyses (``None``
    where the backend gives none), the caveats on reading them, and the HLO links (the stations
    probe's ``ExecutableCompiled`` event)."""

    compiled_text: str
    cost: dict[str, float] | None
    memory: dict[str, int] | None
    caveats: list[str]
    hlo_links: list[HloLinkRecord]


def hlo_links(compiled_text: str, closed_jaxpr: Any) -> list[HloLinkRecord]:
    """Link each instruction line of an optimized HLO module (``Compiled.as_text()``) that
    carries ``metadata`` to its name stack (``op_name``), user line and top-level eqns of
    ``closed_jaxpr``, the staged jaxpr it was compiled from.

    ``source`` is the innermost frame of the instruction's stack frame in the snippet (JAX's and
    jaxscope's frames are skipped). ``eqn_indices`` are found as for the StableHLO op links
    (:meth:`jaxscope.internals.lowering.EqnIndex.by_chain`): the eqns recorded at the same chain
    of snippet frames, else at its longest outer part (an instruction from inside a ``scan``
    body belongs to the ``scan`` eqn), else on the same line; narrowed by the name stack when
    several remain (the eqns whose ``name_stack`` the ``op_name`` holds, ``layer0`` in
    ``jit(f)/layer0/reduce_sum``, then those whose primitive it names). Candidates that stay
    ambiguous are all kept (XLA reorders and fuses, so the order of instructions is no guide to
    which loop iteration made them), unless more than
    :data:`~jaxscope.internals.lowering.MAX_AMBIGUOUS` (then none: ``source`` still links it).
    A ``fusion`` (or any instruction with ``calls=``) also lists the eqns of every instruction
    in the computations it calls, since it computes them.
    """
    lines = compiled_text.splitlines()
    frames = stack_frame_index(lines)
    index = EqnIndex(closed_jaxpr)
    found: list[_Instruction] = []
    in_computation: dict[str, list[int]] = {}
    computation: str | None = None
    for i, line in enumerate(lines):
        if m := _COMPUTATION_RE.match(line):
            computation = m.group(1)
            continue
        if line == "}":
            computation = None
            continue
        if computation is None or (m := _INSTRUCTION_RE.match(line)) is None:
            continue
        calls_m = _CALLS_RE.search(line)
        calls = re.findall(r"%([^\s,}]+)", calls_m.group(1)) if calls_m else []
        meta = _metadata(line)
        in_computation.setdefault(computation, []).append(len(found))
        if meta is None:
            found.append(
                _Instruction(i, m.group(1), m.group(2), computation, None, None, (), calls)
            )
            continue
        op_name, chain, numbers = meta
        if not chain and "stack_frame_id" in numbers:
            chain = frames.chain(numbers["stack_frame_id"])
        snippet = [f for f in chain if f.file == SNIPPET_FILENAME]
        source = None
        eqns: tuple[int, ...] = ()
        if snippet:
            first = snippet[0]
            # No end: ops that start at one column (`jnp.sin(x) * 2.0`: sin and mul) share
            # one file location, with the first one's end (see the module docstring).
            source = SourceLoc(
                line=first.line, column=first.column, function=first.function or None
            )
            key = tuple((f.line, f.column if f.column is not None else -1) for f in snippet)
            eqns = index.by_chain(key, op_name)
            if len(eqns) > MAX_AMBIGUOUS:
                eqns = ()
        found.append(
            _Instruction(i, m.group(1), m.group(2), computation, op_name, source, eqns, calls)
        )

    # The eqns a computation computes: those of its instructions and of what they call.
    computed: dict[str, frozenset[int]] = {}

    def eqns_of(name: str, seen: frozenset[str]) -> frozenset[int]:
        if name in computed:
            return computed[name]
        if name in seen:
            return frozenset()
        out: set[int] = set()
        for k in in_computation.get(name, []):
            ins = found[k]
            out.update(ins.eqns)
            for called in ins.calls:
                out |= eqns_of(called, seen | {name})
        computed[name] = frozenset(out)
        return computed[name]

    links: list[HloLinkRecord] = []
    for ins in found:
        eqns_all = set(ins.eqns)
        for called in ins.calls:
            eqns_all |= eqns_of(called, frozenset())
        if ins.op_name is None and ins.source is None and not eqns_all:
            continue  # no metadata and nothing fused: nothing links it
        links.append(
            HloLinkRecord(
                line=ins.line,
                instruction=ins.name,
                opcode=ins.opcode,
                computation=ins.computation,
                op_name=ins.op_name,
                source=ins.source,
                eqn_indices=sorted(eqns_all),
            )
        )
    return links


def executable_compiled(compiled: Any, closed_jaxpr: Any = None) -> CompiledModule:
    """The :class:`CompiledModule` of a ``jax.stages.Compiled`` (with its
    :func:`hlo_links` when the staged jaxpr it was compiled from is given)."""
    try:
        cost = normalize_cost(compiled.cost_analysis())
    except Exception:  # some backends raise (NotImplemented/Unimplemented) instead of None
        cost = None
    try:
        memory = memory_fields(compiled.memory_analysis())
    except Exception:
        memory = None
    caveats: list[str] = []
    if cost is None:
        caveats.append(CAVEAT_MISSING_COST)
    else:
        caveats += [CAVEAT_ESTIMATE, CAVEAT_FLOPS, CAVEAT_BYTES]
        negative = sorted(k for k, v in cost.items() if v < 0)
        if negative:
            caveats.append(CAVEAT_NEGATIVE.format(keys=", ".join(negative)))
    if memory is None:
        caveats.append(CAVEAT_MISSING_MEMORY)
    text = compiled.as_text()
    return CompiledModule(
        compiled_text=text,
        cost=cost,
        memory=memory,
        caveats=caveats,
        hlo_links=hlo_links(text, closed_jaxpr) if closed_jaxpr is not None else [],
    )
