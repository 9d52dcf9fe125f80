"""Which branch of torch_xla's client registry a ``PJRT_DEVICE`` string takes, read from the
source text at the v2.9.0 tag that ships in ``source/`` (``SOURCE.md``): ``pjrt_registry.cpp``
(``InitializePjRt``'s if/else-if chain and ``GetPjRtPlugin``'s lookup), ``runtime.cpp`` (the
empty-string check before it) and ``env_vars.h`` (the names behind ``env::kEnv...``).

Nothing here is typed from memory: the branches, their conditions, their line ranges and the
environment variables each reads are parsed out of those files, and a branch is chosen by
evaluating the parsed conditions the way the C++ does (``sys_util::GetEnvBool``: unset is the
default, ``"true"``/``"false"``, else ``atoi != 0``). Pure Python, no torch: the probe, the CLI
artefact and the tests use it alike. ``test_pjrt_registry.py`` checks the result against what a
fresh torch_xla 2.9.0 process does for each string.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

SOURCE_DIR = Path(__file__).resolve().parent / "source"
REGISTRY_FILE = "pjrt_registry.cpp"
RUNTIME_FILE = "runtime.cpp"
TAG = "v2.9.0"
COMMIT = "5fab7053df86c8d503b98d9e7202ca8b8d4978c7"
# Where the files live in the pytorch/xla tree (the view links to them).
TREE_PATH = "torch_xla/csrc/runtime/"

_CONSTANT = re.compile(r'inline constexpr char (k\w+)\[\] = "([^"]*)";')
_ENV_READ = re.compile(r'GetEnv(?:String|Bool|Int)\(\s*(?:env::(k\w+)|"([^"]+)")')
_CHAIN = re.compile(r"^(\s*)(?:\}\s*else\s+)?if\s*\((.*)$")
_ELSE = re.compile(r"^(\s*)\}\s*else\s*\{\s*$")
_EQUALS = re.compile(r'^device_type\s*(==|!=)\s*"([^"]*)"$')
_GET_BOOL = re.compile(r"^sys_util::GetEnvBool\(env::(k\w+),\s*(true|false)\)$")
_PLUGIN_TABLE = re.compile(r'\{\{"(\w+)",\s*std::make_shared')


@dataclass(frozen=True)
class Branch:
    """One way out of client creation: ``name`` (the device string it compares with, or
    ``dynamic plugin``, ``plugin not registered``, ``unknown``, ``PJRT_DEVICE empty``), the
    ``file`` it is in, its ``condition`` as written (joined lines), ``condition_lines`` and
    ``lines`` (1-based, inclusive: the branch from its condition to its last line) and
    ``env_read``, the environment variables read on the way there and inside it, in source
    order (``env::kEnv...`` resolved through ``env_vars.h``)."""

    name: str
    file: str
    condition: str
    condition_lines: tuple[int, int]
    lines: tuple[int, int]
    env_read: tuple[str, ...]
    env_read_if: tuple[str, ...] = ()
    """Read only inside a nested ``if`` of the branch (the dynamic plugin branch's
    ``if (plugin->requires_xla_coordinator())``: ``RANK``, ``MASTER_ADDR``...)."""


def source_text(file: str) -> str:
    """The text of one shipped file (``pjrt_registry.cpp``, ``runtime.cpp``, ``env_vars.h``)."""
    return (SOURCE_DIR / file).read_text()


@cache
def env_names() -> dict[str, str]:
    """``env_vars.h``'s constants: ``kEnvNumCpu`` -> ``CPU_NUM_DEVICES``..."""
    return dict(_CONSTANT.findall(source_text("env_vars.h")))


def _reads(lines: list[str]) -> tuple[str, ...]:
    """The environment variables ``lines`` read (``GetEnvString/Bool/Int``), in order, once
    each; ``//`` comments left out (runtime.cpp's commented-out ``XLA_USE_IFRT``)."""
    names = env_names()
    found: list[str] = []
    code = "\n".join(line.split("//")[0] for line in lines)
    for constant, literal in _ENV_READ.findall(code):
        name = names[constant] if constant else literal
        if name not in found:
            found.append(name)
    return tuple(found)


def _nested(lines: list[str], start: int, end: int) -> set[int]:
    """0-based indices of the lines in ``start..end`` inside a nested ``if (...)`` block, except
    a bare null check (``if (plugin)``: no condition on the environment)."""
    found: set[int] = set()
    for i in range(start, end + 1):
        matched = _CHAIN.match(lines[i])
        if matched and i > start and not re.fullmatch(r"\w+\)\s*\{", matched.group(2).strip()):
            found.update(range(i, _block_end(lines, i) + 1))
    return found


def _block_end(lines: list[str], start: int) -> int:
    """The 0-based index of the line that closes the block that the statement starting on line
    ``start`` opens (its ``{`` ends that line or its condition's last line; ``} else {`` closes
    the previous block and opens its own)."""
    depth = 1
    for i in range(start + 1, len(lines)):
        depth += lines[i].count("{") - lines[i].count("}")
        if depth == 0:
            return i
    raise ValueError(f"no closing brace for line {start + 1}")


def _condition(lines: list[str], start: int, first: str) -> tuple[str, int]:
    """The condition text starting with ``first`` on line ``start`` and the 0-based index of its
    last line (the one that ends with ``) {``)."""
    parts, i = [first.strip()], start
    while not lines[i].rstrip().endswith(") {"):
        i += 1
        parts.append(lines[i].strip())
    text = " ".join(parts)
    return text.removesuffix("{").strip().removesuffix(")").strip(), i


@cache
def registry_chain() -> tuple[Branch, ...]:
    """``InitializePjRt``'s if/else-if chain in ``pjrt_registry.cpp``, one :class:`Branch` each,
    in source order (the first condition is read by every string: its ``GetEnvBool`` runs
    first, so its variable heads every branch's ``env_read``)."""
    lines = source_text(REGISTRY_FILE).splitlines()
    begin = next(i for i, line in enumerate(lines) if line.startswith("InitializePjRt("))
    starts: list[tuple[int, str]] = []
    indent: str | None = None
    for i in range(begin + 1, len(lines)):
        chain, other = _CHAIN.match(lines[i]), _ELSE.match(lines[i])
        found = chain or other
        if found and (indent is None or found.group(1) == indent):
            indent = found.group(1)
            starts.append((i, chain.group(2) if chain else ""))
    last_end = _block_end(lines, starts[-1][0])
    branches: list[Branch] = []
    first_reads: tuple[str, ...] = ()
    for k, (i, first) in enumerate(starts):
        end = starts[k + 1][0] - 1 if k + 1 < len(starts) else last_end
        if first:
            condition, cond_end = _condition(lines, i, first)
        else:
            condition, cond_end = "else", i
        nested = _nested(lines, cond_end + 1, end)
        reads = _reads([line for j, line in enumerate(lines[i : end + 1], i) if j not in nested])
        reads_if = _reads([lines[j] for j in sorted(nested)])
        if k == 0:
            first_reads = _reads(lines[i : cond_end + 1])
        equals = _EQUALS.match(condition)
        if equals and equals.group(1) == "==":
            name = equals.group(2)
        elif k == 0:
            name = "dynamic plugin"
        else:
            name = "unknown"
        env = tuple(dict.fromkeys((*first_reads, *reads)))
        branches.append(
            Branch(
                name,
                REGISTRY_FILE,
                condition,
                (i + 1, cond_end + 1),
                (i + 1, end + 1),
                env,
                reads_if,
            )
        )
    return tuple(branches)


@cache
def plugin_miss() -> Branch:
    """``GetPjRtPlugin``'s miss: ``pjrt_plugins_`` has no entry for the string (the dynamic
    plugin branch's first step). Its lines are the ``if (entry == pjrt_plugins_.end())`` block;
    its ``condition_lines`` are those of the dynamic plugin branch that called it, and its
    ``condition`` is that branch's condition, then the lookup's."""
    lines = source_text(REGISTRY_FILE).splitlines()
    i = next(k for k, line in enumerate(lines) if "pjrt_plugins_.end()" in line)
    condition, _ = _condition(lines, i, _CHAIN.match(lines[i]).group(2))  # type: ignore[union-attr]
    dynamic = registry_chain()[0]
    return Branch(
        "plugin not registered",
        REGISTRY_FILE,
        f"{dynamic.condition}, then in GetPjRtPlugin: {condition}",
        dynamic.condition_lines,
        (i + 1, _block_end(lines, i) + 1),
        _reads(lines[dynamic.condition_lines[0] - 1 : dynamic.condition_lines[1]]),
    )


@cache
def builtin_plugins() -> tuple[str, ...]:
    """The names ``pjrt_plugins_`` starts with (``{{"LIBRARY", ...}}``), before Python registers
    the installed ones."""
    return tuple(_PLUGIN_TABLE.findall(source_text(REGISTRY_FILE)))


@cache
def empty_device_check() -> Branch:
    """``runtime.cpp``'s check before any client: ``PJRT_DEVICE`` unset or empty fails there."""
    lines = source_text(RUNTIME_FILE).splitlines()
    begin = next(k for k, line in enumerate(lines) if "InitializeComputationClient() {" in line)
    i = next(
        k for k in range(begin, len(lines)) if "kEnvPjRtDevice" in lines[k] and "if" in lines[k]
    )
    condition, _ = _condition(lines, i, _CHAIN.match(lines[i]).group(2))  # type: ignore[union-attr]
    end = _block_end(lines, i)
    return Branch(
        "PJRT_DEVICE empty",
        RUNTIME_FILE,
        condition,
        (i + 1, i + 1),
        (i + 1, end + 1),
        _reads(lines[begin : end + 1]),
    )


def env_bool(value: str | None, default: bool) -> bool:
    """``sys_util::GetEnvBool`` on an environment value (None: unset)."""
    if value is None:
        return default
    if value in ("true", "false"):
        return value == "true"
    digits = re.match(r"\s*([+-]?\d+)", value)  # atoi: leading digits, else 0
    return bool(digits and int(digits.group(1)) != 0)


def _holds(condition: str, device_type: str, env: dict[str, str]) -> bool:
    if condition == "else":
        return True
    for term in (t.strip() for t in condition.split("&&")):
        equals, get_bool = _EQUALS.match(term), _GET_BOOL.match(term)
        if equals:
            same = device_type == equals.group(2)
            if same != (equals.group(1) == "=="):
                return False
        elif get_bool:
            name = env_names()[get_bool.group(1)]
            if not env_bool(env.get(name), get_bool.group(2) == "true"):
                return False
        else:
            raise ValueError(f"a condition this reader does not know: {term!r}")
    return True


def branch_for(env: dict[str, str], registered: tuple[str, ...] = ()) -> Branch:
    """The branch client creation takes with the environment ``env`` at that moment
    (``PJRT_DEVICE``, ``PJRT_DYNAMIC_PLUGINS``...) and the plugins Python ``registered``
    (``torch_xla.experimental.plugins._plugin_registry``: NEURON, TPU, XPU by default)."""
    device_type = env.get("PJRT_DEVICE", "")
    if device_type == "":
        return empty_device_check()
    for branch in registry_chain():
        if _holds(branch.condition, device_type, env):
            if branch.name == "dynamic plugin" and device_type not in (
                *builtin_plugins(),
                *registered,
            ):
                return plugin_miss()
            return branch
    raise AssertionError("the chain ends in an else")
