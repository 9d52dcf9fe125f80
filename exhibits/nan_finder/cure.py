"""The double-``where`` cure, computed as an exact rewrite of the user's source.

``jnp.where(c, g(x), 0.0)`` is differentiated through both branches: ``where``'s transpose
(``select_n``'s) sends the unselected branch a zero cotangent, and the transpose of ``g``'s JVP
multiplies that zero by ``g'(x)``. Where ``g'(x)`` is Inf or NaN (``sqrt`` and ``log`` at 0,
``sqrt`` below 0, ``arcsin`` at ±1, ``1/x`` at 0, ``x ** 0.5`` at 0), ``0 * inf`` is NaN, and the
NaN reaches the gradient although the forward value never used the branch. The cure keeps
``g`` away from the bad inputs with a second, inner ``where`` on ``g``'s argument::

    safe_x = jnp.where(c, x, 1.0)                      # 1.0: a point where sqrt' is finite
    return jnp.sum(jnp.where(c, jnp.sqrt(safe_x), 0.0))

This module finds, with Python's ``ast`` only (no JAX), the ``where`` call whose branch holds the
NaN step's source position (given as the 1-based line and 0-based column JAX recorded in the eqn's
``source_info``), the guarded calls inside that branch, and rewrites them. Two forms:

* ``two_lines``: one ``safe_<name> = where(...)`` line per guarded argument, inserted before the
  statement, when the statement sits directly in a function (or module) body and no ``lambda`` or
  comprehension lies between it and the ``where`` (their variables would not exist yet);
* ``inline``: the guarded argument ``x`` is replaced by ``where(c, x, 1.0)`` in place.

A second pattern is handled too: ``y = g(x)`` on one line and ``where(c, y, 0.0)`` on a later line
of the same body (``y`` a plain name); the safe line then goes before ``y``'s assignment, provided
the condition only reads names that are bound before it.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

# Calls whose derivative is Inf/NaN somewhere, with the position of the argument to guard and a
# safe value inside the domain where the derivative is finite. Keyed by the called name's last
# component (``jnp.sqrt``, ``jax.numpy.sqrt``, ``lax.sqrt``, ``np.sqrt`` all end in ``sqrt``).
GUARDED_CALLS: dict[str, tuple[int, str]] = {
    "sqrt": (0, "1.0"),
    "rsqrt": (0, "1.0"),
    "cbrt": (0, "1.0"),
    "log": (0, "1.0"),
    "log2": (0, "1.0"),
    "log10": (0, "1.0"),
    "log1p": (0, "0.0"),
    "arcsin": (0, "0.0"),
    "arccos": (0, "0.0"),
    "arctanh": (0, "0.0"),
    "asin": (0, "0.0"),
    "acos": (0, "0.0"),
    "atanh": (0, "0.0"),
    "reciprocal": (0, "1.0"),
    "power": (0, "1.0"),
    "pow": (0, "1.0"),
    "divide": (1, "1.0"),
    "true_divide": (1, "1.0"),
    "div": (1, "1.0"),
}


@dataclass(frozen=True)
class Guarded:
    """One guarded call in the branch: ``name`` (``sqrt``, ``log``, ``/``, ``**``) and the
    argument expression that gets the inner ``where``."""

    name: str
    arg: ast.expr
    safe: str


@dataclass(frozen=True)
class Cure:
    """The rewrite. ``start_line`` (1-based) is the first line of ``before`` in the user's
    source; ``before`` the original lines (statement(s) touched), ``after`` their replacement;
    ``changed`` 0-based indices into ``after``'s lines that are new or changed; ``source`` the
    whole rewritten snippet; ``guarded`` the guarded functions (``sqrt``); ``form`` as in the
    module docstring; ``explanation`` a plain account."""

    form: str
    guarded: list[str]
    start_line: int
    before: str
    after: str
    changed: list[int]
    source: str
    explanation: str


def _called_name(call: ast.Call) -> str | None:
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return None


def _is_where(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and _called_name(node) == "where"
        and len(node.args) == 3
        and not node.keywords
    )


def _pos(node: ast.AST) -> tuple[int, int, int, int]:
    return (
        getattr(node, "lineno", 0),
        getattr(node, "col_offset", 0),
        getattr(node, "end_lineno", 0) or 0,
        getattr(node, "end_col_offset", 0) or 0,
    )


def _contains(node: ast.AST, line: int, column: int | None) -> bool:
    """Whether (line, column) falls inside ``node``'s span (columns are UTF-8 byte offsets, as
    in both ``ast`` and JAX's frames). ``column`` None: the line alone decides."""
    l0, c0, l1, c1 = _pos(node)
    if column is None:
        return l0 <= line <= l1
    return (l0, c0) <= (line, column) < (l1, c1) or (l0, c0) == (line, column)


def _span_size(node: ast.AST) -> tuple[int, int]:
    l0, c0, l1, c1 = _pos(node)
    return (l1 - l0, c1 - c0 if l1 == l0 else c1)


def _is_constant(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant):
        return True
    return isinstance(node, ast.UnaryOp) and isinstance(node.operand, ast.Constant)


def guarded_in(branch: ast.expr) -> list[Guarded]:
    """The calls (and ``/``, ``**`` with a non-integer exponent) in ``branch`` whose derivative
    can be Inf/NaN, each with the argument to guard (constants are skipped)."""
    found: list[Guarded] = []
    for node in ast.walk(branch):
        if isinstance(node, ast.Call):
            name = _called_name(node)
            if name in GUARDED_CALLS and not _is_where(node):
                index, safe = GUARDED_CALLS[name]
                if len(node.args) > index and not _is_constant(node.args[index]):
                    found.append(Guarded(name, node.args[index], safe))
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            if not _is_constant(node.right):
                found.append(Guarded("/", node.right, "1.0"))
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
            exponent = node.right
            integer = isinstance(exponent, ast.Constant) and isinstance(exponent.value, int)
            if not integer and not _is_constant(node.left):
                found.append(Guarded("**", node.left, "1.0"))
    found.sort(key=lambda g: _pos(g.arg))
    return found


def _parents(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    parents: dict[ast.AST, ast.AST] = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[child] = node
    return parents


_SCOPES = (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_BODIES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)


def _statement_of(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> tuple[ast.stmt, bool]:
    """The statement holding ``node`` and whether a safe line may go before it (the statement is
    directly in a function or module body, and no lambda/comprehension lies in between)."""
    plain = True
    cur = node
    while not isinstance(cur, ast.stmt):
        if isinstance(cur, _SCOPES):
            plain = False
        cur = parents[cur]
    return cur, plain and isinstance(parents.get(cur), _BODIES)


def _names(tree: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {
        a.arg for a in ast.walk(tree) if isinstance(a, ast.arg)
    }


def _safe_name(arg: ast.expr, taken: set[str]) -> str:
    base = f"safe_{arg.id}" if isinstance(arg, ast.Name) else "safe_arg"
    name, n = base, 2
    while name in taken:
        name, n = f"{base}{n}", n + 1
    taken.add(name)
    return name


class _Source:
    """Source text addressed by (1-based line, UTF-8 byte column), as ``ast`` reports it."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.lines = text.splitlines(keepends=True)

    def offset(self, line: int, col: int) -> int:
        before = sum(len(s) for s in self.lines[: line - 1])
        return before + len(self.lines[line - 1].encode()[:col].decode(errors="ignore"))

    def segment(self, node: ast.AST) -> str:
        l0, c0, l1, c1 = _pos(node)
        return self.text[self.offset(l0, c0) : self.offset(l1, c1)]


def _find_branch(
    tree: ast.Module, parents: dict[ast.AST, ast.AST], line: int, column: int | None
) -> tuple[ast.Call, int, ast.expr, ast.stmt | None] | None:
    """(the where call, its branch index 1 or 2, the expression to search for guarded calls,
    the assignment statement of pattern 2 or None)."""
    best: tuple[ast.Call, int] | None = None
    for node in ast.walk(tree):
        if _is_where(node):
            assert isinstance(node, ast.Call)
            for k in (1, 2):
                if _contains(node.args[k], line, column):
                    if best is None or _span_size(node.args[k]) < _span_size(best[0].args[best[1]]):
                        best = (node, k)
    if best is not None:
        return best[0], best[1], best[0].args[best[1]], None
    # Pattern 2: ``y = g(x)`` (holding the position) then ``where(c, y, ...)`` later.
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Assign) and _contains(node.value, line, column)):
            continue
        if len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
            continue
        body_owner = parents.get(node)
        if not isinstance(body_owner, _BODIES):
            continue
        target = node.targets[0].id
        body = body_owner.body
        index = body.index(node)
        later = body[index + 1 :]
        bound_after = {
            n.id
            for s in body[index:]
            for n in ast.walk(s)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
        }
        for stmt in later:
            for w in ast.walk(stmt):
                if not _is_where(w):
                    continue
                assert isinstance(w, ast.Call)
                for k in (1, 2):
                    arg = w.args[k]
                    if isinstance(arg, ast.Name) and arg.id == target:
                        cond_names = {n.id for n in ast.walk(w.args[0]) if isinstance(n, ast.Name)}
                        if cond_names & bound_after:
                            return None
                        return w, k, node.value, node
    return None


def explanation_for(names: list[str], at: str | None = None) -> str:
    """The plain account of why ``where`` leaks a NaN and what the inner ``where`` changes;
    ``at``: the primal primitive of the step where the walk stopped, when it is not one of the
    guarded ``names`` (``p * log(p)``: ``mul``'s transpose multiplies the zero by the saved
    ``log(p)``, -inf at 0, before ``log``'s own derivative is reached)."""
    shown = ", ".join(n if n in ("/", "**") else f"{n}" for n in names)
    if at is not None and at not in names:
        how = (
            f"the transpose of {at} in that branch multiplies that zero by a factor the forward "
            f"pass computed with {shown} at the discarded inputs (here Inf or NaN; {shown}'s own "
            "derivative is not finite there either): 0 * inf = NaN, 0 * NaN = NaN. "
        )
    else:
        how = (
            f"the transpose of {shown}'s derivative multiplies that zero by the derivative at "
            "the discarded inputs, where it is Inf or NaN: 0 * inf = NaN, 0 * NaN = NaN. "
        )
    return (
        "jnp.where differentiates both branches. Its transpose (select_n's) sends the branch it "
        "did not select a zero cotangent, and "
        + how
        + "The outer where cannot remove a NaN that is already in the cotangent. The cure is a "
        "second where on the argument: where the outer where discards the branch, the argument "
        "becomes a safe value where the derivative is finite, so the zero cotangent stays "
        "zero; where the branch is selected, nothing changes."
    )


def double_where(source: str, line: int, column: int | None) -> Cure | None:
    """The double-``where`` rewrite for the NaN step at ``line``/``column`` of ``source``, or
    ``None`` when no ``where`` branch holds that position or the branch calls nothing that needs
    guarding (then the NaN has another cause, and no rewrite is proposed)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    parents = _parents(tree)
    found = _find_branch(tree, parents, line, column)
    if found is None:
        return None
    where, k, branch, assign = found
    guarded = guarded_in(branch)
    if not guarded:
        return None
    text = _Source(source)
    where_fn = text.segment(where.func)
    cond = text.segment(where.args[0])

    def inner(arg_text: str, safe: str) -> str:
        pair = (arg_text, safe) if k == 1 else (safe, arg_text)
        return f"{where_fn}({cond}, {pair[0]}, {pair[1]})"

    anchor = assign if assign is not None else where
    stmt, plain = _statement_of(anchor, parents)
    if assign is not None:
        stmt, plain = assign, True
    l0 = stmt.lineno
    l1 = stmt.end_lineno or l0
    first_line_text = text.lines[l0 - 1]
    indent = first_line_text[: len(first_line_text) - len(first_line_text.lstrip())]

    # One replacement per guarded argument (the same argument text shares one safe name).
    replacements: list[tuple[int, int, str]] = []
    safe_lines: list[str] = []
    by_text: dict[str, str] = {}
    taken = _names(tree)
    for g in guarded:
        arg_text = text.segment(g.arg)
        if plain:
            name = by_text.get(arg_text)
            if name is None:
                name = _safe_name(g.arg, taken)
                by_text[arg_text] = name
                safe_lines.append(f"{indent}{name} = {inner(arg_text, g.safe)}\n")
            new = name
        else:
            new = inner(arg_text, g.safe)
        l_a, c_a, l_b, c_b = _pos(g.arg)
        replacements.append((text.offset(l_a, c_a), text.offset(l_b, c_b), new))
    # Nested guarded args (sqrt(log(x))): keep the outermost replacement only.
    replacements.sort()
    kept: list[tuple[int, int, str]] = []
    for r in replacements:
        if kept and r[0] < kept[-1][1]:
            continue
        kept.append(r)
    new_source = source
    for start, end, new in reversed(kept):
        new_source = new_source[:start] + new + new_source[end:]
    start_off = text.offset(l0, 0)
    end_off = text.offset(l1, 0) + len(text.lines[l1 - 1])
    delta = sum(len(new) - (end - start) for start, end, new in kept)
    rewritten_stmt = new_source[start_off : end_off + delta]
    inserted = "".join(safe_lines)
    new_source = new_source[:start_off] + inserted + new_source[start_off:]
    before = source[start_off:end_off]
    after = inserted + rewritten_stmt
    n_inserted = len(safe_lines)
    before_lines = before.splitlines()
    after_lines = after.splitlines()
    changed = list(range(n_inserted)) + [
        n_inserted + i
        for i, s in enumerate(after_lines[n_inserted:])
        if i >= len(before_lines) or s != before_lines[i]
    ]
    names = list(dict.fromkeys(g.name for g in guarded))
    return Cure(
        form="two_lines" if plain else "inline",
        guarded=names,
        start_line=l0,
        before=before.rstrip("\n"),
        after=after.rstrip("\n"),
        changed=changed,
        source=new_source,
        explanation=explanation_for(names),
    )
