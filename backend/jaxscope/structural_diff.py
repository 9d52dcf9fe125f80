"""The structural comparison of two jaxprs, for ``jaxscope diff`` (design 0043): the same
matching as the page's ``frontend/src/compare/structural-diff.ts``, done on the structured views
the runs carry (:class:`~jaxscope.protocol.JaxprView`: each eqn's primitive, params, avals and
source line) instead of JAX's text read back.

JAX names a jaxpr's variables by position, so one eqn more near the top renames every later
variable and a line diff marks every renamed line. Here:

1. Each top-level eqn gets a *key* without variable names: its primitive, its params as printed
   (a param that holds a jaxpr, ``jit``'s ``jaxpr`` or ``cond``'s ``branches``, replaced by that
   jaxpr written with its variables renamed by first appearance), its operands' types (a literal
   by its printed value, ``2.0:f32[]``), its outvars' types and its effects.
2. The two eqn lists are aligned by their keys (:class:`difflib.SequenceMatcher`); eqns left over
   on each side at the same place are paired with their counterparts (the ``sin`` that became a
   ``cos``); the rest are only in one run.
3. The variables: the jaxprs' constvars and invars correspond by position, and the outvars of
   matched or paired eqns where their types agree. A matched eqn is the same when each operand
   corresponds to its counterpart's (only renamed), and differs when it reads another value.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from jaxscope.protocol import EqnView, InnerJaxprView, JaxprView, VarView

_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")


def _param_value(text: str) -> str:
    """A param as printed, with object addresses (``<function f at 0x7f...>``) left out."""
    return _ADDRESS.sub("0x…", text)


def _inner_key(inner: InnerJaxprView) -> str:
    """An inner jaxpr written with its variables renamed by first appearance."""
    names: dict[str, str] = {}

    def name(v: VarView) -> str:
        if v.literal:
            return v.name
        if v.name not in names:
            names[v.name] = f"v{len(names)}"
        return f"{names[v.name]}:{v.aval.short}"

    head = " ".join(name(v) for v in inner.constvars) + " ; "
    head += " ".join(name(v) for v in inner.invars)
    body = []
    for eqn in inner.eqns:
        ins = " ".join(name(v) for v in eqn.invars)
        outs = " ".join(name(v) for v in eqn.outvars)
        body.append(f"{outs} = {eqn.primitive}[{_params_key(eqn)}] {ins}")
    tail = " ".join(name(v) for v in inner.outvars)
    return "{ " + head + " . " + "; ".join(body) + " in " + tail + " }"


def _params(eqn: EqnView) -> dict[str, str]:
    """The eqn's params as compared: printed values, a jaxpr-valued param by its inner key."""
    inner: dict[str, list[str]] = {}
    for jaxpr in eqn.inner_jaxprs:
        inner.setdefault(jaxpr.param, []).append(_inner_key(jaxpr))
    out = {k: _param_value(v) for k, v in eqn.params.items()}
    for param, keys in inner.items():
        out[param] = " | ".join(keys)
    return out


def _params_key(eqn: EqnView) -> str:
    return " ".join(f"{k}={v}" for k, v in sorted(_params(eqn).items()))


def _operand(v: VarView) -> str:
    return v.name if v.literal else v.aval.short


def eqn_key(eqn: EqnView) -> tuple[str, ...]:
    """What must agree for two eqns to match: no variable names in it."""
    return (
        eqn.primitive,
        _params_key(eqn),
        " ".join(_operand(v) for v in eqn.invars),
        " ".join(v.aval.short for v in eqn.outvars),
        " ".join(eqn.effects),
    )


def signature(eqn: EqnView) -> str:
    """``primitive[params] in-types -> out-types`` (a literal operand by its printed value; the
    params as JAX prints them, cut short)."""
    ins = ", ".join(_operand(v) for v in eqn.invars)
    outs = ", ".join(v.aval.short for v in eqn.outvars)
    params = " ".join(f"{k}={_param_value(v)}" for k, v in sorted(eqn.params.items()))
    shown = f"[{_short(params, 70)}]" if params else ""
    return f"{eqn.primitive}{shown} {ins} -> {outs}"


@dataclass(frozen=True)
class EqnDiff:
    """One difference: ``changed`` (``a`` and ``b`` paired), ``removed`` (only ``a``) or
    ``added`` (only ``b``); ``what`` says in words what differs of a changed pair."""

    kind: str
    a: EqnView | None
    b: EqnView | None
    what: tuple[str, ...] = ()


@dataclass
class StructuralDiff:
    """The comparison of two jaxprs: ``eqns`` the differing eqns in order; ``same`` the runs of
    eqns matched and the same up to variable names, as ``(a_start, b_start, length)``;
    ``header`` the differences of the invars/constvars, ``outputs`` of the outvars;
    ``primitives_a`` the first jaxpr's primitives, in order (to name the same runs)."""

    eqns_a: int
    eqns_b: int
    primitives_a: list[str] = field(default_factory=list)
    eqns: list[EqnDiff] = field(default_factory=list)
    same: list[tuple[int, int, int]] = field(default_factory=list)
    header: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)

    @property
    def differs(self) -> bool:
        return bool(self.eqns or self.header or self.outputs)


def _vars_of(view: JaxprView) -> list[VarView]:
    return [c.var for c in view.constvars] + list(view.invars)


def _pair_changes(a: EqnView, b: EqnView) -> tuple[str, ...]:
    what: list[str] = []
    if a.primitive != b.primitive:
        what.append(f"primitive {a.primitive} -> {b.primitive}")
    else:
        pa, pb = _params(a), _params(b)
        for k in sorted(set(pa) | set(pb)):
            if pa.get(k) != pb.get(k):
                what.append(f"param {k}: {_short(pa.get(k))} -> {_short(pb.get(k))}")
    ins_a = [_operand(v) for v in a.invars]
    ins_b = [_operand(v) for v in b.invars]
    if ins_a != ins_b:
        what.append(f"operands ({', '.join(ins_a)}) -> ({', '.join(ins_b)})")
    outs_a = [v.aval.short for v in a.outvars]
    outs_b = [v.aval.short for v in b.outvars]
    if outs_a != outs_b:
        what.append(f"results ({', '.join(outs_a)}) -> ({', '.join(outs_b)})")
    if a.effects != b.effects:
        what.append(f"effects {a.effects} -> {b.effects}")
    return tuple(what)


def _short(text: str | None, limit: int = 60) -> str:
    if text is None:
        return "(none)"
    one = " ".join(text.split())
    return one if len(one) <= limit else one[: limit - 1] + "…"


def compare(a: JaxprView, b: JaxprView) -> StructuralDiff:
    """Compare two jaxprs structurally (module docstring)."""
    result = StructuralDiff(
        eqns_a=len(a.eqns), eqns_b=len(b.eqns), primitives_a=[e.primitive for e in a.eqns]
    )
    corr: dict[str, str] = {}  # a's variable name -> b's
    va, vb = _vars_of(a), _vars_of(b)
    for i, (p, q) in enumerate(zip(va, vb, strict=False)):
        corr[p.name] = q.name
        if p.aval.short != q.aval.short:
            result.header.append(f"input {i}: {p.aval.short} -> {q.aval.short}")
    if len(va) != len(vb):
        result.header.append(f"{len(va)} inputs -> {len(vb)}")

    def map_outs(x: EqnView, y: EqnView) -> None:
        for p, q in zip(x.outvars, y.outvars, strict=False):
            if p.aval.short == q.aval.short:
                corr[p.name] = q.name

    def reads_same(x: EqnView, y: EqnView) -> list[int]:
        return [
            k
            for k, (p, q) in enumerate(zip(x.invars, y.invars, strict=True))
            if not p.literal and corr.get(p.name) != q.name
        ]

    keys_a = [eqn_key(e) for e in a.eqns]
    keys_b = [eqn_key(e) for e in b.eqns]
    matcher = difflib.SequenceMatcher(None, keys_a, keys_b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            run_start: tuple[int, int] | None = None
            for k in range(i2 - i1):
                x, y = a.eqns[i1 + k], b.eqns[j1 + k]
                moved = reads_same(x, y)
                map_outs(x, y)
                if moved:
                    if run_start is not None:
                        result.same.append((*run_start, i1 + k - run_start[0]))
                        run_start = None
                    said = ", ".join(str(m) for m in moved)
                    what = f"reads another value (operand {said})"
                    result.eqns.append(EqnDiff("changed", x, y, (what,)))
                elif run_start is None:
                    run_start = (i1 + k, j1 + k)
            if run_start is not None:
                result.same.append((*run_start, i2 - run_start[0]))
            continue
        paired = min(i2 - i1, j2 - j1)
        for k in range(paired):
            x, y = a.eqns[i1 + k], b.eqns[j1 + k]
            map_outs(x, y)
            result.eqns.append(EqnDiff("changed", x, y, _pair_changes(x, y)))
        result.eqns.extend(EqnDiff("removed", x, None) for x in a.eqns[i1 + paired : i2])
        result.eqns.extend(EqnDiff("added", None, y) for y in b.eqns[j1 + paired : j2])
    for i, (p, q) in enumerate(zip(a.outvars, b.outvars, strict=False)):
        if p.literal or q.literal:
            if p.name != q.name:
                result.outputs.append(f"output {i}: {p.name} -> {q.name}")
        elif p.aval.short != q.aval.short:
            result.outputs.append(f"output {i}: {p.aval.short} -> {q.aval.short}")
        elif corr.get(p.name) != q.name:
            result.outputs.append(f"output {i}: another value")
    if len(a.outvars) != len(b.outvars):
        result.outputs.append(f"{len(a.outvars)} outputs -> {len(b.outvars)}")
    return result


def _where(eqn: EqnView, file: str, lines: Sequence[str]) -> str:
    if eqn.source is None:
        return f"{file}: (no source line)"
    n = eqn.source.line
    text = lines[n - 1].strip() if 0 < n <= len(lines) else ""
    return f"{file}:{n}: {text}"


def report(
    d: StructuralDiff,
    artefact: str,
    names: tuple[str, str],
    sources: tuple[Sequence[str], Sequence[str]],
) -> str:
    """The comparison in words: a header, a count, each differing eqn (its primitive, params
    and types, what differs, and its source line in each file), the same eqns summarised. ``""``
    when the two jaxprs are the same up to variable names."""
    if not d.differs:
        return ""
    (na, nb), (sa, sb) = names, sources
    n_same = sum(length for _, _, length in d.same)
    out = [
        f"--- {na}",
        f"+++ {nb}",
        f"{artefact}: {len(d.eqns)} eqn{'s' if len(d.eqns) != 1 else ''} differ "
        f"({d.eqns_a} eqns -> {d.eqns_b}; {n_same} the same up to variable names)",
    ]
    out.extend(f"! {line}" for line in d.header)
    for e in d.eqns:
        if e.kind == "changed" and e.a is not None and e.b is not None:
            out.append(f"~ eqn {e.a.index} -> eqn {e.b.index}: {'; '.join(e.what)}")
            out.append(f"  - {signature(e.a)}")
            out.append(f"      {_where(e.a, na, sa)}")
            out.append(f"  + {signature(e.b)}")
            out.append(f"      {_where(e.b, nb, sb)}")
        elif e.a is not None:
            out.append(f"- eqn {e.a.index} only in {na}: {signature(e.a)}")
            out.append(f"      {_where(e.a, na, sa)}")
        elif e.b is not None:
            out.append(f"+ eqn {e.b.index} only in {nb}: {signature(e.b)}")
            out.append(f"      {_where(e.b, nb, sb)}")
    out.extend(f"! {line}" for line in d.outputs)
    for i, j, length in d.same:
        prims = d.primitives_a[i : i + length]
        said = ", ".join(prims[:6]) + (f", … ({len(prims) - 6} more)" if len(prims) > 6 else "")
        span_a = f"{i}" if length == 1 else f"{i}-{i + length - 1}"
        span_b = f"{j}" if length == 1 else f"{j}-{j + length - 1}"
        out.append(f"= eqn{'s' if length > 1 else ''} {span_a} -> {span_b} the same: {said}")
    return "\n".join(out) + "\n"
