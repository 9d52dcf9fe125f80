"""What torch_xla folds into a graph hash, read from ``xla_graph_executor.cpp`` at the v2.9.0 tag
that ships in ``source/`` (``SOURCE.md``).

``torch_xla._XLAC._get_graph_hash`` calls ``XLAGraphExecutor::GetGraphHash``, which first calls
``CollectSyncTensors`` (the hash starts there) and then merges more into it. The ingredients are
the statements that set or merge into the hash (``coll.hash = ...``, ``MergeHash(...)``), parsed
out of the two functions' bodies with their line numbers, in the order a call runs them. Nothing
is typed from memory but the plain-words meaning of each, keyed by a name the statement must
contain (a statement no key matches is an error: torch_xla changed, the table must too). Pure
Python, no torch: the probe, the artefact and the tests use it alike.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

SOURCE_DIR = Path(__file__).resolve().parent / "source"
FILE = "xla_graph_executor.cpp"
TREE_PATH = "torch_xla/csrc/xla_graph_executor.cpp"
TAG = "v2.9.0"
COMMIT = "5fab7053df86c8d503b98d9e7202ca8b8d4978c7"

# The function ``_get_graph_hash`` calls, and the one it calls first (the hash's start).
ENTRY = "GetGraphHash"
COLLECT = "CollectSyncTensors"

# A statement's meaning, by a name it contains (first match wins).
MEANINGS: tuple[tuple[str, str], ...] = (
    (
        "force_ltc_data",
        "the sync config's force_ltc_data flag (false for _get_graph_hash and for a sync of "
        "pending tensors): the hash starts from it",
    ),
    (
        "HashCompilationEnv",
        "the PJRT client's compilation environment and the torch and torch_xla git revisions: "
        "another build or another device kind, another hash",
    ),
    (
        "ir_value.hash()",
        "the IR value of each tensor to sync, in the order given: a node's hash covers its op, "
        "shape, attributes and operands down the graph, a baked-in constant's value, and "
        "device data by shape only (not its values)",
    ),
    (
        "parameter_sequence",
        "the post-order's parameter sequence: which device data feed the graph, in what order",
    ),
    (
        "buffer_donor_index",
        "the buffer-donor parameter indices, when aliasing with buffer donors is configured "
        "and there are any",
    ),
    (
        "GetAutoSharding",
        "whether auto-sharding is on, and the XLA_AUTO_SPMD_MESH environment variable",
    ),
)


@dataclass(frozen=True)
class Ingredient:
    """One statement that sets or merges into the graph hash: the ``function`` it is in,
    ``lines`` (1-based, inclusive), the statement's ``text`` as written (its lines joined with
    newlines), its ``key`` (the name in ``MEANINGS`` it contains) and ``meaning``."""

    function: str
    lines: tuple[int, int]
    text: str
    key: str
    meaning: str


def source_text() -> str:
    return (SOURCE_DIR / FILE).read_text()


def _body(lines: list[str], function: str) -> tuple[int, int]:
    """The 0-based line range of ``XLAGraphExecutor::<function>(``'s definition: from its
    signature's first line to the closing brace in column 0."""
    pattern = re.compile(r"XLAGraphExecutor::" + function + r"\(")
    for i, line in enumerate(lines):
        if pattern.search(line) and not line.startswith(" "):
            for j in range(i, len(lines)):
                if lines[j] == "}":
                    return i, j
    raise ValueError(f"{FILE}: no definition of XLAGraphExecutor::{function}")


_START = re.compile(r"^\s*(MergeHash\(|coll\.hash = )")


def _statements(lines: list[str], function: str) -> list[Ingredient]:
    start, end = _body(lines, function)
    found = []
    i = start
    while i <= end:
        if _START.match(lines[i]):
            j = i
            while not lines[j].rstrip().endswith(";"):
                j += 1
            text = "\n".join(lines[i : j + 1])
            key = next((k for k, _ in MEANINGS if k in text), None)
            if key is None:
                raise ValueError(f"{FILE}:{i + 1}: a hash statement with no meaning known: {text}")
            meaning = dict(MEANINGS)[key]
            found.append(Ingredient(function, (i + 1, j + 1), text, key, meaning))
            i = j
        i += 1
    return found


def call_line(caller: str = ENTRY, callee: str = COLLECT) -> int:
    """The line (1-based) where ``caller`` calls ``callee``."""
    lines = source_text().splitlines()
    start, end = _body(lines, caller)
    for i in range(start + 1, end):
        if re.search(r"\b" + callee + r"\(", lines[i]):
            return i + 1
    raise ValueError(f"{FILE}: {caller} does not call {callee}")


@cache
def ingredients() -> tuple[Ingredient, ...]:
    """The graph hash's ingredients in the order ``GetGraphHash`` runs them: those of
    ``CollectSyncTensors`` (called first), then its own."""
    lines = source_text().splitlines()
    return (*_statements(lines, COLLECT), *_statements(lines, ENTRY))


def function_lines(function: str) -> tuple[int, int]:
    """1-based line range of ``function``'s definition."""
    start, end = _body(source_text().splitlines(), function)
    return start + 1, end + 1
