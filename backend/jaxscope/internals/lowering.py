"""The Lowered station: StableHLO and HLO texts, and each StableHLO op linked to eqns and source.

Sources (``jax.stages.Lowered``, public):

* ``stablehlo`` is ``Lowered.as_text()`` byte for byte; ``hlo`` is
  ``Lowered.as_text(dialect="hlo")``.
* Op links come from ``Lowered.as_text(debug_info=True)``: the same module printed with a
  ``loc(...)`` suffix on each op line, and a table of aliases at the end
  (``#loc31 = loc("jit(f)/sin"(#loc24))``, ``#loc24 = loc(callsite(#loc14 at #loc13))``,
  ``#loc4 = loc("<snippet>":6:8 to :18)``). JAX builds these in
  ``interpreters.mlir.source_info_to_location``: a name loc holding the eqn's name stack and
  primitive (``jit(f)/sin``) around the eqn's traceback (callsites of file locs; the innermost
  frame first). Lines and columns are those of ``source_info_util.Frame`` (1-based line,
  0-based column).

Each op line of ``stablehlo`` is matched to its line in the debug text by stripping the
``loc(...)`` suffix (the two lines must then be equal; :func:`op_links` raises otherwise).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from jax._src import source_info_util

from jaxscope.internals.views import eqn_sources, name_stack_text, snippet_frames
from jaxscope.protocol import SourceLoc
from jaxscope.snippet_model import SNIPPET_FILENAME

source_info_util.register_exclusion(__file__)


@dataclass(frozen=True)
class OpLinkRecord:
    """One StableHLO op line linked back: its 1-based ``line``, the op, JAX's name stack on it,
    the snippet line, and the eqns of the staged jaxpr that lowered to it. The stations probe
    makes its ``OpLink`` view of it (design 0059: the walker returns records, the exhibit builds
    its events)."""

    line: int
    op: str
    name_stack: str | None
    source: SourceLoc | None
    eqn_indices: list[int]


@dataclass(frozen=True)
class LoweredModule:
    """A ``jax.stages.Lowered`` read: its StableHLO text, its HLO text, and the op links (the
    stations probe's ``ModuleLowered`` event)."""

    stablehlo: str
    hlo: str
    op_links: list[OpLinkRecord]


# An op line: optional results, then a dialect op name (``stablehlo.sine``, ``func.call``).
_OP_RE = re.compile(r'^\s*(?:(?:%[\w#:.-]+(?:\s*,\s*%[\w#:.-]+)*)\s*=\s*)?"?([a-z_]+\.[\w.]+)"?')
_ALIAS_RE = re.compile(r"^(#loc\d*) = loc\((.*)\)$")


# ---------------------------------------------------------------- location parsing


@dataclass(frozen=True)
class FileLoc:
    """``loc("file":line:col ...)``."""

    file: str
    line: int
    column: int
    end_line: int | None
    end_column: int | None


@dataclass(frozen=True)
class NameLoc:
    """``loc("name"(child))`` (``child`` may be unknown)."""

    name: str
    child: Loc


@dataclass(frozen=True)
class CallSiteLoc:
    """``loc(callsite(callee at caller))``."""

    callee: Loc
    caller: Loc


@dataclass(frozen=True)
class FusedLoc:
    """``loc(fused[a, b, ...])`` (optionally with ``<metadata>``)."""

    parts: tuple[Loc, ...]


@dataclass(frozen=True)
class UnknownLoc:
    """``loc(unknown)``."""


Loc = FileLoc | NameLoc | CallSiteLoc | FusedLoc | UnknownLoc

# "file":line:col, optionally " to :end_col" (same line) or " to end_line:end_col".
_FILE_RE = re.compile(r'"((?:[^"\\]|\\.)*)":(\d+):(\d+)(?: to (\d+)?:(\d+))?')
_STRING_RE = re.compile(r'"((?:[^"\\]|\\.)*)"')


class _LocParser:
    """Recursive descent over the body of ``loc(...)``; ``#locN`` refs resolve via ``aliases``."""

    def __init__(self, text: str, aliases: dict[str, str], cache: dict[str, Loc]) -> None:
        self.text = text
        self.pos = 0
        self.aliases = aliases
        self.cache = cache

    def _skip(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos] == " ":
            self.pos += 1

    def _eat(self, token: str) -> bool:
        self._skip()
        if self.text.startswith(token, self.pos):
            self.pos += len(token)
            return True
        return False

    def parse(self) -> Loc:
        self._skip()
        t = self.text
        if t.startswith("#loc", self.pos):
            m = re.compile(r"#loc\d*").match(t, self.pos)
            assert m is not None
            self.pos = m.end()
            return resolve_alias(m.group(0), self.aliases, self.cache)
        if self._eat("unknown"):
            return UnknownLoc()
        if self._eat("callsite("):
            callee = self.parse()
            if not self._eat("at"):
                raise ValueError(f"bad callsite loc: {t!r}")
            caller = self.parse()
            self._eat(")")
            return CallSiteLoc(callee, caller)
        if self._eat("fused"):
            if self._eat("<"):  # fused<metadata>[...]
                depth = 1
                while depth and self.pos < len(t):
                    depth += {"<": 1, ">": -1}.get(t[self.pos], 0)
                    self.pos += 1
            self._eat("[")
            parts = [self.parse()]
            while self._eat(","):
                parts.append(self.parse())
            self._eat("]")
            return FusedLoc(tuple(parts))
        m = _FILE_RE.match(t, self.pos)
        if m:
            self.pos = m.end()
            line, col = int(m.group(2)), int(m.group(3))
            end_col = int(m.group(5)) if m.group(5) else None
            end_line = int(m.group(4)) if m.group(4) else (line if end_col is not None else None)
            return FileLoc(m.group(1), line, col, end_line, end_col)
        m = _STRING_RE.match(t, self.pos)
        if m:
            self.pos = m.end()
            child: Loc = UnknownLoc()
            if self._eat("("):
                child = self.parse()
                self._eat(")")
            return NameLoc(m.group(1), child)
        raise ValueError(f"cannot parse location {t[self.pos :]!r}")


def resolve_alias(ref: str, aliases: dict[str, str], cache: dict[str, Loc]) -> Loc:
    """The location an alias (``#loc12``) stands for."""
    if ref not in cache:
        if ref not in aliases:
            return UnknownLoc()
        cache[ref] = _LocParser(aliases[ref], aliases, cache).parse()
    return cache[ref]


def parse_loc(body: str, aliases: dict[str, str], cache: dict[str, Loc] | None = None) -> Loc:
    """Parse the body of a ``loc(...)`` (``#loc3``, ``"name"(...)``, ``callsite(...)``...)."""
    return _LocParser(body, aliases, {} if cache is None else cache).parse()


def frames(loc: Loc) -> list[tuple[FileLoc, str | None]]:
    """File locations in ``loc``, innermost frame first, each with its function name."""
    if isinstance(loc, FileLoc):
        return [(loc, None)]
    if isinstance(loc, NameLoc):
        if isinstance(loc.child, FileLoc):
            return [(loc.child, loc.name)]
        return frames(loc.child)
    if isinstance(loc, CallSiteLoc):
        return frames(loc.callee) + frames(loc.caller)
    if isinstance(loc, FusedLoc):
        return [f for part in loc.parts for f in frames(part)]
    return []


def name_stack(loc: Loc) -> str | None:
    """The name stack JAX put on an op (``jit(f)/sin``): the outer name loc, skipping the
    ``"sin:"`` primitive marker JAX may wrap around it."""
    while isinstance(loc, NameLoc):
        if isinstance(loc.child, FileLoc) or isinstance(loc.child, CallSiteLoc):
            return loc.name
        if not loc.name.endswith(":"):
            return loc.name
        loc = loc.child
    if isinstance(loc, FusedLoc) and loc.parts:
        return name_stack(loc.parts[0])
    return None


def snippet_loc(loc: Loc) -> SourceLoc | None:
    """The innermost frame of ``loc`` in the user's snippet."""
    for fl, function in frames(loc):
        if fl.file == SNIPPET_FILENAME:
            return SourceLoc(
                line=fl.line,
                column=fl.column,
                end_line=fl.end_line,
                end_column=fl.end_column,
                function=function,
            )
    return None


# ---------------------------------------------------------------- op links


def _split_debug_text(debug_text: str) -> tuple[list[str], dict[str, str]]:
    """The module's lines (alias definitions removed) and the alias table."""
    lines: list[str] = []
    aliases: dict[str, str] = {}
    for line in debug_text.splitlines():
        m = _ALIAS_RE.match(line)
        if m:
            aliases[m.group(1)] = m.group(2)
        else:
            lines.append(line)
    return lines, aliases


def _strip_loc(line: str) -> tuple[str, str | None]:
    """``line`` without any `` loc(...)`` (balanced, quotes respected), and the body of the
    trailing one (the op's own location), if the line ends with one."""
    out: list[str] = []
    last_body: str | None = None
    i = 0
    while True:
        k = line.find(" loc(", i)
        if k < 0:
            out.append(line[i:])
            break
        out.append(line[i:k])
        start = k + len(" loc(")
        depth, pos, in_str = 1, start, False
        while pos < len(line) and depth:
            c = line[pos]
            if in_str:
                if c == "\\":
                    pos += 1
                elif c == '"':
                    in_str = False
            elif c == '"':
                in_str = True
            elif c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
            pos += 1
        body = line[start : pos - 1]
        i = pos
        last_body = body if i >= len(line) else None
    return "".join(out), last_body


def _compatible(primitive: str, params_name: str | None, stack: str | None) -> bool:
    """Whether an eqn could have been lowered to an op with this name stack."""
    if stack is None:
        return False
    parts = re.split(r"[/;]", stack)  # XLA joins a merged instruction's names with ";"
    return primitive in parts or (params_name is not None and f"jit({params_name})" in parts)


_FUNC_RE = re.compile(r"^\s*func\.func (?:public |private )?@([\w.$-]+)\(")
_CALL_RE = re.compile(
    r"^\s*(?:%[\w#:.-]+(?:\s*,\s*%[\w#:.-]+)*\s*=\s*)?(?:func\.)?call @([\w.$-]+)\("
)


def _scope_prefixes(op_name: str) -> list[str]:
    """The scopes an op name may have come from, longest first: the op name without its leading
    ``jit(f)`` (the module's own name stack), then without its last component each time, down
    to ``""``. JAX names an op ``jit(f)/<the eqn's name stack>/<primitive>`` and an op from
    inside an eqn's body (a ``scan``'s ``while/body/...``, a nested ``jit(g)/...``) with more
    after the eqn's name stack, so the eqn's name stack is one of these. Components are split
    at ``/`` outside parentheses (``transpose(jvp(layer0/attn))/mul`` has two)."""
    cuts: list[int] = []
    depth = 0
    for pos, c in enumerate(op_name):
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "/" and depth == 0:
            cuts.append(pos)
    start = 0
    if cuts and op_name.startswith(("jit(", "pjit(")):
        start = cuts.pop(0) + 1
    return [op_name[start:]] + [op_name[start:pos] for pos in reversed(cuts)] + [""]


def _snippet_chain(loc: Loc) -> tuple[tuple[int, int], ...]:
    return tuple((fl.line, fl.column) for fl, _ in frames(loc) if fl.file == SNIPPET_FILENAME)


class EqnIndex:
    """The top-level eqns of a staged jaxpr, searchable by user source and by ``jit`` name.

    Lookups are dict hits, and each distinct answer is computed once and shared (a Python loop
    gives thousands of ops the same candidate list): :func:`op_links` stays near-linear in the
    number of ops and eqns instead of scanning every eqn for every op."""

    def __init__(self, closed_jaxpr: Any) -> None:
        self.eqns = list(closed_jaxpr.jaxpr.eqns)
        lines = [s.line if s is not None else None for s in eqn_sources(closed_jaxpr)]
        chains = [snippet_frames(e.source_info.traceback) for e in self.eqns]
        self._by_chain: dict[tuple[tuple[int, int], ...], list[int]] = {}
        self._by_line: dict[int | None, list[int]] = {}
        for k, (chain, line) in enumerate(zip(chains, lines, strict=True)):
            if chain:
                self._by_chain.setdefault(chain, []).append(k)
            self._by_line.setdefault(line, []).append(k)
        self._answers: dict[tuple[Any, ...], tuple[int, ...]] = {}
        # Equal answers are one object, so ops can be grouped by identity (hashing a long
        # tuple for every op would make grouping quadratic again).
        self._interned: dict[tuple[int, ...], tuple[int, ...]] = {}
        self._jit_names: dict[str, tuple[int, ...]] = {}
        # Each eqn's name stack (``layer0``, ``transpose(jvp(layer0))``; ``""`` for none), and
        # for each candidate list (by identity: the lists of ``_by_chain``/``_by_line``) its
        # eqns grouped by name stack, built once per list.
        self._scopes = [name_stack_text(e.source_info.name_stack) for e in self.eqns]
        self._scope_groups: dict[int, tuple[list[int], dict[str, list[int]]]] = {}

    def _intern(self, found: Sequence[int]) -> tuple[int, ...]:
        t = tuple(found)
        return self._interned.setdefault(t, t)

    def _narrow_scope(self, found: list[int], stack: str | None) -> list[int]:
        """The eqns of ``found`` whose name stack the op's name stack (``jit(f)/layer0/mul``;
        XLA joins a merged instruction's with ``;``) holds, the longest that fits for each part:
        a Python loop under ``jax.named_scope(f"layer{i}")`` runs the same lines in every
        iteration, and only the name stack tells ``layer0``'s eqn from ``layer11``'s. ``found``
        unchanged when its eqns share one name stack or none fits."""
        if stack is None:
            return found
        entry = self._scope_groups.get(id(found))
        if entry is None:
            groups: dict[str, list[int]] = {}
            for k in found:
                groups.setdefault(self._scopes[k], []).append(k)
            # ``found`` is kept in the entry, so its id stays its own.
            entry = self._scope_groups[id(found)] = (found, groups)
        groups = entry[1]
        if len(groups) <= 1:
            return found
        chosen: set[int] = set()
        for part in stack.split(";"):
            for scope in _scope_prefixes(part):
                if scope in groups:
                    chosen.update(groups[scope])
                    break
        return [k for k in found if k in chosen] if chosen else found

    def _narrow(self, found: list[int], stack: str | None) -> list[int]:
        if len(found) <= 1:
            return found
        found = self._narrow_scope(found, stack)
        if len(found) <= 1:
            return found
        narrowed = [
            k
            for k in found
            if _compatible(self.eqns[k].primitive.name, self.eqns[k].params.get("name"), stack)
        ]
        return narrowed or found

    def by_source(self, loc: Loc, stack: str | None) -> tuple[int, ...]:
        """Eqns recorded at the op's whole chain of snippet frames (a helper's line, then the
        lines that called it); else at the longest outer part of that chain (the op comes from
        inside an eqn's body, e.g. a ``scan`` body line); else on the op's innermost line."""
        return self.by_chain(_snippet_chain(loc), stack)

    def by_chain(self, chain: tuple[tuple[int, int], ...], stack: str | None) -> tuple[int, ...]:
        """:meth:`by_source` for a chain of snippet frames ``(line, column)``, innermost first
        (as :func:`jaxscope.internals.views.snippet_frames` gives an eqn's)."""
        if not chain:
            return ()
        key: tuple[Any, ...] = (chain, stack)
        answer = self._answers.get(key)
        if answer is None:
            found: list[int] = []
            for start in range(len(chain)):
                found = self._by_chain.get(chain[start:], [])
                if found:
                    break
            else:
                found = self._by_line.get(chain[0][0], [])
            answer = self._answers[key] = self._intern(self._narrow(found, stack))
        return answer

    def by_jit_name(self, func: str) -> tuple[int, ...]:
        """Top-level ``jit`` eqns whose function lowered to the private ``func.func @func``
        (JAX names it after the ``jit``'s ``name``, with a ``_N`` suffix when taken)."""
        answer = self._jit_names.get(func)
        if answer is None:
            answer = self._jit_names[func] = self._intern(
                [
                    k
                    for k, e in enumerate(self.eqns)
                    if e.primitive.name == "jit"
                    and isinstance(e.params.get("name"), str)
                    and re.fullmatch(re.escape(e.params["name"]) + r"(_\d+)?", func)
                ]
            )
        return answer


@dataclass
class _Link:
    """An op line while :func:`op_links` works: ``eqns`` is shared between ops (see
    :class:`EqnIndex`) until the :class:`OpLinkRecord` is built."""

    line: int
    op: str
    stack: str | None
    source: SourceLoc | None
    func: str  # the function the op sits in
    eqns: tuple[int, ...]


def op_links(stablehlo: str, debug_text: str, closed_jaxpr: Any) -> list[OpLinkRecord]:
    """Link each op line of ``stablehlo`` to its name stack, user line and top-level eqns.

    ``debug_text`` is ``Lowered.as_text(debug_info=True)`` of the same module and
    ``closed_jaxpr`` the staged jaxpr it was lowered from. ``eqn_indices`` are, in order of
    preference: the top-level eqns whose snippet frames (innermost line first, then the lines
    that called it) equal the op's; else those on the op's innermost snippet line; when several
    remain, those whose name stack the op's holds (:meth:`EqnIndex._narrow_scope`: a loop
    under ``jax.named_scope(f"layer{i}")`` repeats one chain of lines in every layer), then
    those whose primitive (or ``jit`` name) is in the op's name stack. An op with no
    such eqn inside a private function (a nested ``jax.jit``), or a ``call`` of one, links to
    the top-level ``jit`` eqn that function came from. Ops sharing one ambiguous list (a Python
    loop repeats one line) are split in order (:func:`_split_ambiguous`).
    Near-linear in the number of ops and eqns (``test_op_links_scale``).
    Raises ``ValueError`` when the two texts do not list the same lines.
    """
    plain_lines = stablehlo.splitlines()
    debug_lines, aliases = _split_debug_text(debug_text)
    stripped = [_strip_loc(line) for line in debug_lines]
    index = EqnIndex(closed_jaxpr)
    # Which function calls which (to find, for a nested private function, the function that
    # main calls and so the top-level jit eqn it belongs to).
    caller: dict[str, str] = {}
    current = None
    for line in plain_lines:
        if m := _FUNC_RE.match(line):
            current = m.group(1)
        elif (m := _CALL_RE.match(line)) and current is not None:
            caller.setdefault(m.group(1), current)

    cache: dict[str, Loc] = {}
    by_loc: dict[str, tuple[str | None, SourceLoc | None, tuple[int, ...]]] = {}
    links: list[_Link] = []
    # The eqns of the call ops that call each function (a function's body belongs to them).
    called_by_eqns: dict[str, set[int]] = {}
    current = None
    j = 0
    for i, line in enumerate(plain_lines):
        # The debug text may hold blank lines the plain text lacks; every other line must agree.
        while j < len(stripped) and not stripped[j][0].strip() and line.strip():
            j += 1
        if j >= len(stripped) or stripped[j][0] != line:
            got = stripped[j][0] if j < len(stripped) else "<end>"
            raise ValueError(f"StableHLO line {i} differs from the debug text: {line!r} != {got!r}")
        _, loc_body = stripped[j]
        j += 1
        if m := _FUNC_RE.match(line):
            current = m.group(1)
            continue
        if current is None or loc_body is None:
            continue  # module header, sdy.mesh declarations...
        call = _CALL_RE.match(line)
        m = _OP_RE.match(line)
        if call:
            op = "func.call"
        elif m:
            op = m.group(1)
        else:
            continue
        seen = by_loc.get(loc_body)
        if seen is None:  # ops of one Python line share one location (and one answer)
            loc = parse_loc(loc_body, aliases, cache)
            stack = name_stack(loc)
            seen = by_loc[loc_body] = (stack, snippet_loc(loc), index.by_source(loc, stack))
        stack, source, indices = seen
        if call:
            if not indices and current == "main":
                indices = index.by_jit_name(call.group(1))
            called_by_eqns.setdefault(call.group(1), set()).update(indices)
        links.append(_Link(i, op, stack, source, current, indices))

    eqns_of: dict[str, tuple[int, ...]] = {}

    def eqns_of_func(func: str) -> tuple[int, ...]:
        if func in eqns_of:
            return eqns_of[func]
        first, seen = func, {func}
        while True:
            found = called_by_eqns.get(func)
            parent = caller.get(func, "main")
            if found or parent == "main" or parent in seen:
                answer = tuple(sorted(found)) if found else index.by_jit_name(func)
                eqns_of[first] = answer
                return answer
            func = parent
            seen.add(func)

    for link in links:
        if not link.eqns and link.func != "main":
            link.eqns = eqns_of_func(link.func)
    resolved = _split_ambiguous(links)
    return [
        OpLinkRecord(
            line=link.line,
            op=link.op,
            name_stack=link.stack,
            source=link.source,
            eqn_indices=resolved[n] if n in resolved else list(link.eqns),
        )
        for n, link in enumerate(links)
    ]


# Above this many candidate eqns, an op that stays ambiguous lists none (its source line still
# links it); otherwise a Python loop over one line makes op_links grow quadratically.
MAX_AMBIGUOUS = 32


def _split_ambiguous(links: Sequence[_Link]) -> dict[int, list[int]]:
    """Resolve ops that share one ambiguous candidate list (a Python loop repeats a line): the
    new ``eqn_indices`` of those ops, by position in ``links``.

    Lowering keeps the order of top-level eqns, and an eqn's ops are contiguous: when the ``n``
    ops of ``main`` sharing a candidate list of ``k`` eqns split evenly (``n = m * k``), the
    ``i``-th run of ``m`` ops belongs to the ``i``-th eqn. What stays ambiguous keeps its list,
    unless longer than :data:`MAX_AMBIGUOUS` (then empty: linked by ``source`` only).
    """
    # Equal candidate lists are one object (interned by EqnIndex, or only in one link).
    groups: dict[int, tuple[tuple[int, ...], list[int]]] = {}
    for n, link in enumerate(links):
        if link.func == "main" and len(link.eqns) > 1:
            groups.setdefault(id(link.eqns), (link.eqns, []))[1].append(n)
    resolved: dict[int, list[int]] = {}
    for candidates, members in groups.values():
        per_eqn, rest = divmod(len(members), len(candidates))
        if per_eqn >= 1 and rest == 0:
            for m, n in enumerate(members):
                resolved[n] = [candidates[m // per_eqn]]
        elif len(candidates) > MAX_AMBIGUOUS:
            for n in members:
                resolved[n] = []
    return resolved


def module_lowered(lowered: Any, closed_jaxpr: Any) -> LoweredModule:
    """The :class:`LoweredModule` of a ``jax.stages.Lowered`` and its staged jaxpr."""
    stablehlo = lowered.as_text()
    return LoweredModule(
        stablehlo=stablehlo,
        hlo=lowered.as_text(dialect="hlo"),
        op_links=op_links(stablehlo, lowered.as_text(debug_info=True), closed_jaxpr),
    )


def count_ops(stablehlo: str, names: Sequence[str] | None = None) -> dict[str, int]:
    """How many op lines of each name (``stablehlo.tanh`` -> ``tanh``) the text holds."""
    counts: dict[str, int] = {}
    for line in stablehlo.splitlines():
        m = _OP_RE.match(line)
        if m and m.group(1).startswith("stablehlo."):
            short = m.group(1).removeprefix("stablehlo.")
            if names is None or short in names:
                counts[short] = counts.get(short, 0) + 1
    return counts


def _walk_op_names(operation: Any, counts: dict[str, int]) -> None:
    for region in operation.regions:
        for block in region.blocks:
            for op in block.operations:
                name = op.operation.name
                counts[name] = counts.get(name, 0) + 1
                _walk_op_names(op.operation, counts)


def mlir_op_counts(module: Any) -> dict[str, int]:
    """How many ops of each name an MLIR module (``Lowered.compiler_ir("stablehlo")``) holds,
    nested regions (reduce bodies, while/scan bodies, private functions) included."""
    counts: dict[str, int] = {}
    _walk_op_names(module.operation, counts)
    return counts


def parsed_op_counts(stablehlo: str) -> dict[str, int]:
    """:func:`mlir_op_counts` of a StableHLO text, parsed by MLIR in JAX's own IR context
    (``interpreters.mlir.make_ir_context``)."""
    from jax._src.interpreters import mlir
    from jax._src.lib.mlir import ir

    with mlir.make_ir_context():
        return mlir_op_counts(ir.Module.parse(stablehlo))
