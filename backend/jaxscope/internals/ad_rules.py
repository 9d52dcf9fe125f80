"""Where JAX's autodiff rules live: look a primitive up in JAX's own rule tables and find the
file:line where its rule was registered.

JAX keeps its differentiation rules in module-level dicts (``jax._src.interpreters.ad``):
``primitive_jvps`` (forward mode, used by ``JVPTrace.process_primitive``), and, for the backward
pass, ``fancy_transposes`` (consulted first by ``backward_pass3``) then ``primitive_transposes``
(``ad.get_primitive_transpose``). Most entries are ``functools.partial`` wrappers built by helpers
such as ``ad.defjvp(sin_p, lambda g, x: ...)`` (-> ``partial(standard_jvp, (lambda,), sin_p)``)
or ``ad.deflinear2`` (-> ``partial(linear_transpose2, rule)``); the registration line is where
the lambda is written, or the line that names the rule function in a ``defjvp``/``deflinear``/
``primitive_jvps[...] =`` statement. Everything here is read from the live tables; nothing is
hard-coded per primitive.
"""

from __future__ import annotations

import functools
import inspect
import re
import sys
from typing import Any

from jax._src.interpreters import ad

from jaxscope.protocol import RuleView

# The helpers in ad.py that wrap a primitive-specific rule (the interesting function is in their
# partial's arguments, and the registration line is that function's).
_GENERIC_HELPERS = frozenset(
    {
        "standard_jvp",
        "standard_jvp2",
        "linear_jvp",
        "linear_transpose2",
        "fancy_bilinear_transpose",
        "bilinear_transpose",
        "deflinear",
        "deflinear2",
        "vectorized_batcher",
        "broadcast_batcher",
        "reducer_batcher",
    }
)

# Files of JAX's generic rule helpers: a lambda or wrapper written there is not the
# primitive's own rule.
_HELPER_FILES = ("jax/_src/interpreters/ad.py", "jax/_src/interpreters/batching.py")

# The statements that register a rule, per table.
_REGISTRATION = {
    "primitive_jvps": re.compile(
        r"primitive_jvps\s*\[|\b(defjvp\w*|deflinear\w*|defbilinear\w*|register_(?!\w*lowering)\w*)\s*\("
    ),
    "primitive_transposes": re.compile(
        r"primitive_transposes\s*\[|\b(deflinear\w*|defbilinear\w*|deftranspose\w*)\s*\("
    ),
    "fancy_transposes": re.compile(r"fancy_transposes\s*\[|\b(defbilinear\w*)\s*\("),
    "fancy_primitive_batchers": re.compile(
        r"primitive_batchers\s*\[|\b(defvectorized|defbroadcasting|defreducer)\s*\("
    ),
}


def _site_path(filename: str) -> str:
    """``/.../site-packages/jax/_src/lax/lax.py`` -> ``jax/_src/lax/lax.py``."""
    marker = "site-packages/"
    return filename.split(marker, 1)[1] if marker in filename else filename


def _code_of(fn: Any) -> Any:
    return getattr(inspect.unwrap(fn), "__code__", None) if callable(fn) else None


def _specific_functions(rule: Any) -> tuple[str, list[Any], list[Any]]:
    """(helper name, the primitive-specific callables inside ``rule``, primitives it names)."""
    if not isinstance(rule, functools.partial):
        # ``batching.primitive_batchers[p] = rule`` stores a ``wrapped`` closure around ``rule``.
        cells = getattr(rule, "__closure__", None) or ()
        inner = [c.cell_contents for c in cells if _code_of(_cell(c)) is not None]
        if getattr(rule, "__name__", "") == "wrapped" and inner:
            return "", inner, []
        return "", [rule], []
    helper = getattr(rule.func, "__name__", "")
    specific: list[Any] = []
    prims: list[Any] = []
    for arg in (*rule.args, *rule.keywords.values()):
        items = arg if isinstance(arg, (tuple, list)) else (arg,)
        for item in items:
            if isinstance(item, ad.core.Primitive):
                prims.append(item)
            elif callable(item) and _code_of(item) is not None:
                specific.append(item)
    if helper not in _GENERIC_HELPERS and not specific:
        specific = [rule.func]
    return helper, specific, prims


def _cell(cell: Any) -> Any:
    try:
        return cell.cell_contents
    except ValueError:  # an empty cell
        return None


@functools.cache
def _source_lines(filename: str) -> tuple[str, ...]:
    try:
        with open(filename, encoding="utf-8") as fh:
            return tuple(fh.read().splitlines())
    except OSError:
        return ()


def _primitive_names() -> dict[int, list[tuple[str, str]]]:
    """id(primitive) -> every (module file, global name) that holds it, over the loaded ``jax``
    modules (``jax._src`` and public ones such as ``jax.experimental.multihost_utils``; a
    primitive defined in ``ad_util`` is registered from ``ad``). Rebuilt when modules were
    imported since the last call, so primitives of later imports are found."""
    # Filtering ~1,000 module names on each of the rule table's thousands of lookups cost
    # seconds: refilter only when the number of loaded modules changed (imports only add).
    global _jax_module_names
    count, names = _jax_module_names
    if count != len(sys.modules):
        names = tuple(n for n in list(sys.modules) if n == "jax" or n.startswith("jax."))
        _jax_module_names = (len(sys.modules), names)
    return _primitive_names_of(names)


# (len(sys.modules) when last filtered, the loaded jax modules' names then)
_jax_module_names: tuple[int, tuple[str, ...]] = (-1, ())


@functools.lru_cache(maxsize=4)
def _primitive_names_of(module_names: tuple[str, ...]) -> dict[int, list[tuple[str, str]]]:
    found: dict[int, list[tuple[str, str]]] = {}
    for name in module_names:
        module = sys.modules.get(name)
        filename = getattr(module, "__file__", None)
        if module is None or not filename:
            continue
        for var, value in list(vars(module).items()):
            if isinstance(value, ad.core.Primitive):
                found.setdefault(id(value), []).append((filename, var))
    return found


def _registration_line(table: str, filename: str, names: list[str], after: int = 0) -> int | None:
    """The first line (1-based) of ``filename`` past ``after`` that registers one of ``names``
    in ``table``."""
    words = [re.compile(rf"\b{re.escape(n)}\b") for n in names]
    for i, statement in _registration_statements(table, filename):
        if i > after and any(w.search(statement) for w in words):
            return i
    return None


@functools.cache
def _registration_statements(table: str, filename: str) -> tuple[tuple[int, str], ...]:
    """Every (1-based line, statement) of ``filename`` that registers a rule in ``table``
    (scanned once per file: the tables name hundreds of primitives)."""
    registration = _REGISTRATION[table]
    lines = _source_lines(filename)
    found: list[tuple[int, str]] = []
    for i, line in enumerate(lines, start=1):
        if line.lstrip().startswith(("def ", "#")) or not registration.search(line):
            continue
        # A registration may wrap (``ad.defbilinear(dot_general_p,\n    _lhs_rule, ...)``):
        # read on while its parentheses are open.
        statement, j = line, i
        while statement.count("(") > statement.count(")") and j < min(i + 4, len(lines)):
            statement += " " + lines[j]
            j += 1
        found.append((i, statement))
    return tuple(found)


def _view(table: str, primitive: Any, rule: Any) -> RuleView:
    helper, specific, named = _specific_functions(rule)
    label_parts = [getattr(f, "__name__", type(f).__name__) for f in specific]
    if helper:
        name = f"{helper}({', '.join(label_parts)})" if label_parts else helper
    else:
        name = label_parts[0] if label_parts else type(rule).__name__
    first = specific[0] if specific else None
    code = _code_of(first)
    # Lambdas written inside ad.py's own helpers (``defbilinear``) say nothing about the
    # primitive: look for its registration instead.
    if code is not None and not code.co_filename.endswith(_HELPER_FILES):
        filename, line = code.co_filename, code.co_firstlineno
        if code.co_name != "<lambda>":
            # A named rule: its registration is a later line naming it (``defjvp(p, _rule)``).
            line = _registration_line(table, filename, [code.co_name], after=line) or line
        return RuleView(table=table, name=name, file=_site_path(filename), line=line)
    # No specific function (``partial(linear_jvp, prim)``): find the line registering the
    # primitive's global name in the module that defines it.
    homes = _primitive_names().get(id(named[0] if named else primitive), [])
    for filename, var in homes:
        line = _registration_line(table, filename, [var])
        if line is not None:
            return RuleView(table=table, name=name, file=_site_path(filename), line=line)
    # Registered inside a constructor (``sin_p = standard_unop(...)`` calls ``defvectorized``):
    # the line that creates the primitive is where its rule comes from.
    for filename, var in homes:
        assignment = re.compile(rf"^{re.escape(var)}\s*(:[^=]*)?=")
        for i, text in enumerate(_source_lines(filename), start=1):
            if assignment.match(text):
                return RuleView(table=table, name=name, file=_site_path(filename), line=i)
    if code is not None:
        return RuleView(
            table=table, name=name, file=_site_path(code.co_filename), line=code.co_firstlineno
        )
    return RuleView(table=table, name=name)


def jvp_rule_view(primitive: Any) -> RuleView | None:
    """The JVP rule of ``primitive`` in ``ad.primitive_jvps`` and where it was registered, or
    ``None`` when the table has no entry (custom_jvp_call/custom_vjp_call are handled by the
    trace's ``process_custom_*`` methods instead; a user primitive may simply have none)."""
    rule = ad.primitive_jvps.get(primitive)
    return None if rule is None else _view("primitive_jvps", primitive, rule)


def transpose_rule_view(primitive: Any) -> RuleView | None:
    """The transpose rule ``backward_pass`` uses for ``primitive``: ``ad.fancy_transposes`` is
    consulted first, then ``ad.primitive_transposes``; ``None`` when neither has one."""
    rule = ad.fancy_transposes.get(primitive)
    if rule is not None:
        return _view("fancy_transposes", primitive, rule)
    rule = ad.primitive_transposes.get(primitive)
    return None if rule is None else _view("primitive_transposes", primitive, rule)


def batch_rule_view(primitive: Any) -> RuleView | None:
    """The batching rule ``BatchTrace.process_primitive`` uses for ``primitive``
    (``batching.fancy_primitive_batchers``; old-style rules set through the
    ``primitive_batchers`` shim are unwrapped), or ``None`` when it has none."""
    from jax._src.interpreters import batching

    rule = batching.fancy_primitive_batchers.get(primitive)
    return None if rule is None else _view("fancy_primitive_batchers", primitive, rule)


# --------------------------------------------------------------------------------------------
# Lowering rules (``mlir._lowerings`` / ``mlir._platform_specific_lowerings``), added for the
# rules exhibit: the same file:line idea, for ``mlir.register_lowering(prim, rule, platform=)``.
# --------------------------------------------------------------------------------------------

# ``mlir.register_lowering(...)`` and JAX's helpers around it (``register_cpu_gpu_lowering``).
_REGISTER_LOWERING = re.compile(r"\bregister_(\w+_)?lowering\s*\(")
_PLATFORM_KEYWORD = re.compile(r"\bplatform\s*=\s*(?!None\b)")
_QUOTED = re.compile(r"['\"](\w+)['\"]")


def _lowering_function(rule: Any) -> Any:
    """The function a lowering rule runs: ``functools.partial`` and ``mlir.lower_fun(impl)``
    wrappers unwrapped (a ``partial(_nary_lower_hlo, hlo.add)`` gives ``_nary_lower_hlo``)."""
    seen = 0
    while seen < 8:
        seen += 1
        while isinstance(rule, functools.partial):
            rule = rule.func
        rule = inspect.unwrap(rule)
        qualname = getattr(rule, "__qualname__", "")
        cells = getattr(rule, "__closure__", None) or ()
        if qualname.startswith("lower_fun.<locals>") and cells:
            inner = [
                _cell(c) for c in cells if callable(_cell(c)) and not isinstance(_cell(c), bool)
            ]
            if inner:
                rule = inner[0]
                continue
        break
    return rule


def _platform_matches(statement: str, platform: str | None) -> bool:
    """Whether a registration statement registers for ``platform`` (``None``: the generic
    table). A platform is named by a quoted literal (``platform="gpu"`` or a positional
    ``'tpu'``; ``gpu`` counts for cuda and rocm, as JAX expands the alias); a
    ``platform=name`` keyword or a helper such as ``register_cpu_gpu_lowering`` without
    literals counts for every platform; a plain ``register_lowering`` without either is
    generic."""
    from jax._src import xla_bridge as xb

    literals = [q for q in _QUOTED.findall(statement) if xb.is_known_platform(q)]
    plain = re.search(r"\bregister_lowering\s*\(", statement) is not None
    specific = bool(literals) or _PLATFORM_KEYWORD.search(statement) is not None or not plain
    if platform is None:
        return not specific
    if not specific:
        return False
    if literals:
        return any(platform in xb.expand_platform_alias(q) for q in literals)
    return True


def _lowering_line(
    filename: str, names: list[str], platform: str | None, rule_name: str | None = None
) -> int | None:
    """The first ``register_lowering(...)`` statement (1-based line) in ``filename`` that names
    one of ``names`` (and ``rule_name`` when given) and registers for ``platform``."""
    words = [re.compile(rf"\b{re.escape(n)}\b") for n in names]
    rule_word = re.compile(rf"\b{re.escape(rule_name)}\b") if rule_name else None
    for i, statement in _lowering_statements(filename):
        if rule_word is not None and not rule_word.search(statement):
            continue
        if any(w.search(statement) for w in words) and _platform_matches(statement, platform):
            return i
    return None


@functools.cache
def _lowering_statements(filename: str) -> tuple[tuple[int, str], ...]:
    """Every (1-based line, statement) of ``filename`` calling a ``register_*lowering``."""
    lines = _source_lines(filename)
    found: list[tuple[int, str]] = []
    for i, line in enumerate(lines, start=1):
        if line.lstrip().startswith(("def ", "#")) or not _REGISTER_LOWERING.search(line):
            continue
        statement, j = line, i
        while statement.count("(") > statement.count(")") and j < min(i + 8, len(lines)):
            statement += " " + lines[j]
            j += 1
        found.append((i, statement))
    return tuple(found)


def lowering_rule_view(primitive: Any, platform: str | None = None) -> RuleView | None:
    """The lowering rule of ``primitive`` in ``mlir._lowerings`` (``platform=None``) or in
    ``mlir._platform_specific_lowerings[platform]`` and the line that registered it (the
    ``mlir.register_lowering(prim, ...)`` statement naming the primitive; else the rule's
    ``def`` line; else the line creating the primitive), or ``None`` when the table has no
    entry. ``name`` is the rule function's qualified name after unwrapping ``partial`` and
    ``mlir.lower_fun``."""
    from jax._src.interpreters import mlir

    if platform is None:
        table, entry = "_lowerings", mlir._lowerings.get(primitive)
    else:
        table = f"_platform_specific_lowerings[{platform!r}]"
        entry = mlir._platform_specific_lowerings.get(platform, {}).get(primitive)
    if entry is None:
        return None
    fn = _lowering_function(entry.rule)
    name = getattr(fn, "__qualname__", None) or type(fn).__name__
    code = getattr(fn, "__code__", None)
    homes = _primitive_names().get(id(primitive), [])
    # The file defining the rule first (a TPU rule registered in ``jax/_src/tpu/...``), then
    # the modules holding the primitive; a statement naming the rule too wins.
    files = [code.co_filename] if code is not None else []
    files += [f for f, _ in homes if f not in files]
    names = sorted({var for _, var in homes})
    rule_name = getattr(fn, "__name__", None) if code is not None else None
    for wanted in ([rule_name] if rule_name and rule_name != "<lambda>" else []) + [None]:
        for filename in files:
            line = _lowering_line(filename, names, platform, wanted) if names else None
            if line is not None:
                return RuleView(table=table, name=name, file=_site_path(filename), line=line)
    if code is not None:
        return RuleView(
            table=table, name=name, file=_site_path(code.co_filename), line=code.co_firstlineno
        )
    for filename, var in homes:
        assignment = re.compile(rf"^{re.escape(var)}\s*(:[^=]*)?=")
        for i, text in enumerate(_source_lines(filename), start=1):
            if assignment.match(text):
                return RuleView(table=table, name=name, file=_site_path(filename), line=i)
    return RuleView(table=table, name=name)
