"""Reading XLA's pass-by-pass dump (``xla_dump_to`` + ``xla_dump_hlo_pass_re``) into snapshots,
and the structural diff between two HLO module texts.

No JAX here: the worker's probe (``probe.py``) compiles with the dump options into a temporary
directory, and this module reads what XLA wrote there. XLA names a snapshot file
``module_<id>.<module>.<seq>.<pipeline>.after_<pass>.before_<next pass>.txt`` (``<seq>`` counts
the module's dumps from 0, four digits or more; the copy-insertion pass writes
``...after_<step>.txt`` with no ``before_``), the module as XLA received it
``module_<id>.<module>.before_optimizations.txt``, and on the CPU backend each kernel's LLVM IR
as ``module_<id>.<module>.<kernel>.ir-no-opt.ll`` / ``.ir-with-opt.ll`` (design 0029).
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

# A pass snapshot's file name (see the module docstring).
SNAPSHOT_FILE = re.compile(
    r"^module_(?P<id>\d+)\.(?P<module>.+?)\.(?P<seq>\d{4,})\.(?P<pipeline>[^.]+)"
    r"\.after_(?P<pass_name>.+?)(?:\.before_(?P<before>.+))?\.txt$"
)
# The module before any pass ran.
BASELINE_SUFFIX = ".before_optimizations.txt"
# A kernel's LLVM IR, before and after LLVM's own optimisation.
LLVM_IR_FILE = re.compile(r"^module_\d+\.(?P<stem>.+)\.ir-(?P<stage>no-opt|with-opt)\.ll$")

# One instruction line of an HLO computation: ``  [ROOT ]%name = <shape> opcode(operands), ...``.
# The shape may be a tuple with spaces and parentheses in it, so the opcode is the first
# ``word(`` after `` = `` that follows a space.
INSTRUCTION = re.compile(
    r"^\s+(?:ROOT\s+)?%?(?P<name>[\w.\-]+)\s+=\s+.*?\s(?P<opcode>[a-z][\w\-]*)\("
)
# A computation's header line: ``[ENTRY ]%name (params) -> shape {``.
COMPUTATION = re.compile(r"^(?:ENTRY\s+)?%?(?P<name>[\w.\-]+)\s.*\{\s*$")
CALLS = re.compile(r"\bcalls=%?(?P<name>[\w.\-]+)")
FUSION_KIND = re.compile(r"\bkind=(?P<kind>k\w+)")


@dataclass(frozen=True)
class Instruction:
    """One HLO instruction of a module text: its ``name`` (unique in an HLO module), its
    ``opcode`` (``add``, ``fusion``), the ``computation`` it is in, and its whole ``line``."""

    name: str
    opcode: str
    computation: str
    line: str


def instructions(text: str) -> dict[str, Instruction]:
    """Every instruction of the HLO module ``text`` (``HloModule.ToString()``), by name."""
    found: dict[str, Instruction] = {}
    computation = ""
    for line in text.splitlines():
        if not line.startswith(" "):
            header = COMPUTATION.match(line)
            if header:
                computation = header.group("name")
            continue
        m = INSTRUCTION.match(line)
        if m:
            found[m.group("name")] = Instruction(
                m.group("name"), m.group("opcode"), computation, line.strip()
            )
    return found


@dataclass(frozen=True)
class Fusion:
    """A ``fusion`` instruction: its ``kind`` (``kLoop``, ``kInput``, ``kOutput``, ``kCustom``),
    the fused computation it ``calls``, and the opcodes inside that computation (parameters left
    out), in the text's order."""

    name: str
    kind: str
    calls: str
    fused_opcodes: tuple[str, ...]


def fusions(found: dict[str, Instruction]) -> list[Fusion]:
    """The fusion instructions among ``found`` (one module's :func:`instructions`)."""
    out = []
    for ins in found.values():
        if ins.opcode != "fusion":
            continue
        calls = CALLS.search(ins.line)
        kind = FUSION_KIND.search(ins.line)
        callee = calls.group("name") if calls else ""
        inside = tuple(
            i.opcode for i in found.values() if i.computation == callee and i.opcode != "parameter"
        )
        out.append(Fusion(ins.name, kind.group("kind") if kind else "", callee, inside))
    return out


@dataclass(frozen=True)
class StructuralDiff:
    """What changed from one module text to the next, instruction by instruction (keyed by
    name): ``appeared`` (names only in the new text), ``vanished`` (only in the old),
    ``rewritten`` (in both, with another line: new operands, layout, attributes), and ``lines``,
    ``difflib.unified_diff`` of the two texts (2 lines of context, no file header)."""

    appeared: list[Instruction]
    vanished: list[Instruction]
    rewritten: list[Instruction]
    lines: list[str]


def structural_diff(
    old: str,
    new: str,
    old_ins: dict[str, Instruction] | None = None,
    new_ins: dict[str, Instruction] | None = None,
) -> StructuralDiff:
    """The :class:`StructuralDiff` from ``old`` to ``new`` (their :func:`instructions` may be
    passed in when already read)."""
    before = instructions(old) if old_ins is None else old_ins
    after = instructions(new) if new_ins is None else new_ins
    appeared = [i for n, i in after.items() if n not in before]
    vanished = [i for n, i in before.items() if n not in after]
    rewritten = [i for n, i in after.items() if n in before and before[n].line != i.line]
    lines = list(difflib.unified_diff(old.splitlines(), new.splitlines(), n=2, lineterm=""))[2:]
    return StructuralDiff(appeared, vanished, rewritten, lines)


@dataclass
class Snapshot:
    """One pass snapshot of the dump: ``seq`` (the dump's sequence number), ``pipeline``, the
    ``pass_name`` it was written after, and its file."""

    seq: int
    pipeline: str
    pass_name: str
    path: Path


@dataclass
class Dump:
    """What XLA wrote for one module: ``module`` (its name, ``jit_f``), the ``baseline`` file
    (before any pass), the pass ``snapshots`` in the dump's order, and the LLVM IR files by
    kernel (``{kernel: {"no-opt": path, "with-opt": path}}``; empty where the backend wrote
    none)."""

    module: str
    baseline: Path | None
    snapshots: list[Snapshot]
    llvm_ir: dict[str, dict[str, Path]] = field(default_factory=dict)
    bytes: int = 0


def read_dump(directory: Path) -> Dump:
    """The :class:`Dump` of ``directory`` (one module's dump: the probe compiles one program into
    a fresh directory). Snapshots are ordered by their sequence number, numerically (the number
    is zero-padded to four digits and grows wider past 9999)."""
    snapshots: list[Snapshot] = []
    baseline: Path | None = None
    module = ""
    llvm: dict[str, dict[str, Path]] = {}
    total = 0
    for path in directory.iterdir():
        total += path.stat().st_size
        name = path.name
        m = SNAPSHOT_FILE.match(name)
        if m:
            module = m.group("module")
            snapshots.append(
                Snapshot(int(m.group("seq")), m.group("pipeline"), m.group("pass_name"), path)
            )
        elif name.endswith(BASELINE_SUFFIX):
            baseline = path
        elif ll := LLVM_IR_FILE.match(name):
            llvm.setdefault(ll.group("stem"), {})[ll.group("stage")] = path
    snapshots.sort(key=lambda s: s.seq)
    # The kernel's name without the module's (``jit_f.add_tanh_fusion_kernel_module``).
    kernels = {
        (stem.removeprefix(module + ".") if module else stem): files
        for stem, files in sorted(llvm.items())
    }
    return Dump(module, baseline, snapshots, kernels, total)


BACKEND_CONFIG = re.compile(r"backend_config=(\{.*?\})(?=, [a-z_]+=|$)")


def same_module(a: str, b: str) -> bool:
    """Whether two HLO module texts are the same up to the order of the keys of their
    ``backend_config`` JSON objects: XLA's dump prints them from the proto in another key order
    than ``Compiled.as_text()`` (``{"outer_dimension_partitions":[],"fusion_config":...}`` vs
    ``{"fusion_config":...,"outer_dimension_partitions":[]}``), the only difference seen."""

    def canonical(text: str) -> str:
        def sort_keys(m: re.Match[str]) -> str:
            try:
                return "backend_config=" + json.dumps(json.loads(m.group(1)), sort_keys=True)
            except ValueError:
                return m.group(0)

        return "\n".join(BACKEND_CONFIG.sub(sort_keys, line) for line in text.splitlines())

    return a == b or canonical(a) == canonical(b)
