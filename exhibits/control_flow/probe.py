"""The control_flow exhibit's probe: the user's ``lax.scan`` / ``while_loop`` / ``fori_loop`` /
``cond`` / ``switch`` as JAX stages them, with the carry (or branch-output) types JAX itself
compared, then the semantics of the control-flow primitives shown with the jaxprs that prove them.

Events, in order:

* stage ``trace``: ``jax.make_jaxpr(f, static_argnums)(*args, **kwargs)`` under
  ``jaxscope.internals.control_flow.observe_control_flow``; the user's Python prints land here
  (once per body trace, however many iterations the loop runs). One :class:`CarryChecked` per
  check JAX ran (a ``switch``'s pairwise checks merged into one), with JAX's verdict. When JAX
  rejected a carry or branch types (the exhibit's point), its exception is shown in that
  :class:`CarryChecked` (class, message verbatim, the user's line in ``source``) and not
  raised again; any other exception propagates (``run_failed``).
* :class:`JaxprStaged`: the jaxpr of ``f``, whose loop / cond eqns hold the body jaxprs (not
  when JAX rejected a carry: there is no jaxpr).
* stage ``run``: ``jax.jit(f)(*args)`` (compiles and runs; no Python print: no retrace; not
  when JAX rejected a carry).
* stage ``compile``: one :class:`ControlFlowShown` per semantics fact (see :data:`BUILTINS`),
  each computed by JAX on a small built-in function (its source is ``code``), and, when the
  user's jaxpr has a ``cond``, ``cond_vmap`` on the user's own ``f`` too.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import jax
import jax.numpy as jnp
from jax import lax
from jaxscope.exhibit_api import (
    SNIPPET_FILENAME,
    CarryObservation,
    JaxprStaged,
    ProbeContext,
    SourceLoc,
    aval_view,
    block_until_ready,
    branch_out_avals,
    carry_avals,
    concrete_args,
    eqn_snippet_line,
    exception_class,
    exception_text,
    function_source,
    iter_eqns,
    jaxpr_view,
    observe_control_flow,
    plan_call,
)

from exhibits.control_flow.events import CarryChecked, CarryLeafView, ControlFlowShown

BUILTIN_FILENAME = "<control_flow builtin>"


def run(ctx: ProbeContext) -> None:
    """Run the control_flow exhibit on ``ctx.snippet`` (user exceptions propagate unchanged)."""
    plan = plan_call(ctx.snippet)
    with ctx.stage("trace"):
        error: Exception | None = None
        closed: Any = None
        with observe_control_flow() as records:
            try:
                closed = plan.make_jaxpr()
            except Exception as exc:  # emitted beside the checks below, then re-raised
                error = exc
        checks = carry_events(records, closed)
        for event in checks:
            ctx.emit(event)
        if error is not None and not any(r.error is error for r in records):
            raise error
    if error is None:
        ctx.emit(JaxprStaged(fun_name=plan.fun_name, jaxpr=jaxpr_view(closed)))
        loop = next((c.source for c in checks if c.primitive == "while" and c.source), None)
        with ctx.stage("run"):
            jitted = plan.jit()
            args = concrete_args(plan.args)

            def execute() -> None:
                block_until_ready(plan.call(jitted, args))

            if loop is not None:
                at_line(loop.line, loop.function or plan.fun_name)(execute)
            else:
                execute()
    with ctx.stage("compile"):
        for shown in semantics(closed, plan):
            ctx.emit(shown)


def at_line(line: int, function: str) -> Callable[[Callable[[], Any]], Any]:
    """A function ``g(thunk) -> thunk()`` whose frame reads ``<snippet>`` line ``line`` in
    ``function``. A ``while_loop`` runs inside XLA, after ``f``'s Python frames returned: the
    compiled call goes through this frame, so a run stopped in an endless loop is placed on the
    loop's line by the runner's stack dump (``sandbox.worker.stuck_at``)."""
    ns: dict[str, Any] = {}
    exec(
        compile("\n" * (line - 1) + "def _at(thunk): return thunk()\n", SNIPPET_FILENAME, "exec"),
        ns,
    )
    fn: Any = ns["_at"]
    fn.__code__ = fn.__code__.replace(co_name=function, co_qualname=function)
    return fn  # type: ignore[no-any-return]


# --------------------------------------------------------------------------------------------
# Carry checks


def _short(aval: Any) -> str:
    return str(aval.str_short(short_dtypes=True))


def _merge_switch(records: Sequence[CarryObservation]) -> list[list[CarryObservation]]:
    """Group a switch's pairwise checks (``branch 0`` against each other branch) into one."""
    groups: list[list[CarryObservation]] = []
    for r in records:
        last = groups[-1] if groups else None
        if (
            last is not None
            and r.api == "switch"
            and last[0].api == "switch"
            and last[-1].error is None
            and r.call_source == last[0].call_source
            and r.functions[0] is last[0].functions[0]
        ):
            last.append(r)
        else:
            groups.append([r])
    return groups


def _bodies(functions: Sequence[Any]) -> list[SourceLoc]:
    out: list[SourceLoc] = []
    for fn in functions:
        loc = function_source(fn)
        if loc is not None and loc not in out:
            out.append(loc)
    return out


def carry_events(records: Sequence[CarryObservation], closed: Any) -> list[CarryChecked]:
    """One :class:`CarryChecked` per check (switch merged), matched to its eqn in ``closed``
    (the jaxpr of ``f``; ``None`` when tracing failed) by primitive and snippet line."""
    eqns = list(iter_eqns(closed.jaxpr)) if closed is not None else []
    used: set[int] = set()
    events: list[CarryChecked] = []
    for index, group in enumerate(_merge_switch(records)):
        first = group[0]
        columns = [first.labels[0]] + [r.labels[1] for r in group]
        sides = [first.avals[0]] + [r.avals[1] for r in group]
        n = max(len(s) for s in sides)
        if first.initial is not None:
            columns = ["init", *columns]
            sides = [first.initial, *sides]
        paths = first.paths if len(first.paths) == n else group[-1].out_paths
        leaves = []
        for i in range(n):
            types = [aval_view(s[i]) if i < len(s) else None for s in sides]
            matches = all(i < len(r.matches) and r.matches[i] for r in group)
            promoted = i < len(first.promoted) and first.promoted[i]
            leaves.append(
                CarryLeafView(
                    path=paths[i] if i < len(paths) else f"[{i}]",
                    types=types,
                    matches=matches,
                    promoted=promoted,
                )
            )
        failing = next((r for r in group if r.error is not None), None)
        error = failing.error if failing is not None else None
        event = CarryChecked(
            index=index,
            primitive=first.primitive,
            api=first.api,
            fori=first.fori,
            source=first.call_source,
            bodies=_bodies([fn for r in group for fn in r.functions]),
            columns=columns,
            leaves=leaves,
            trees=[first.trees[0]] + [r.trees[1] for r in group],
            entry=[_short(a) for a in sides[1 if first.initial is not None else 0]],
            exit=[_short(a) for a in sides[-1]],
            leaf_paths=list(paths),
            ok=failing is None,
            # cut, and read without raising (a user's pytree code may raise inside the check)
            error_class=exception_class(error) if error is not None else None,
            message=exception_text(error) if error is not None else None,
            leaf_path=failing.leaf_path if failing is not None else None,
        )
        _attach_eqn(event, first, eqns, used)
        events.append(event)
    return events


def _attach_eqn(
    event: CarryChecked, obs: CarryObservation, eqns: Sequence[tuple[int, Any]], used: set[int]
) -> None:
    line = obs.call_source.line if obs.call_source is not None else None
    for k, (top, eqn) in enumerate(eqns):
        if k in used or eqn.primitive.name != obs.primitive:
            continue
        if line is not None and eqn_snippet_line(eqn) != line:
            continue
        used.add(k)
        event.eqn_index = top
        cin, cout = carry_avals(eqn)
        event.eqn_carry_in = [_short(a) for a in cin]
        event.eqn_carry_out = [_short(a) for a in cout]
        event.branch_out = [[_short(a) for a in b] for b in branch_out_avals(eqn)]
        if eqn.primitive.name == "scan":
            event.length = int(eqn.params["length"])
        return


# --------------------------------------------------------------------------------------------
# Semantics, each on a small built-in function (the text below is what runs)

COND_SRC = """\
def f(x):
    return lax.cond(x > 0, jnp.sin, jnp.cos, x)
"""

FORI_STATIC_SRC = """\
def f(x):
    # static bounds: fori_loop becomes a scan of length 3; f(x) = x**3
    return lax.fori_loop(0, 3, lambda i, c: c * x, 1.0)
"""

FORI_TRACED_SRC = """\
def f(x, n):
    # n is traced (an argument of make_jaxpr / jit): the trip count is unknown at trace time,
    # so fori_loop becomes a while
    return lax.fori_loop(0, n, lambda i, c: c * x, 1.0)
"""

UNROLL_SRC = """\
def body(c, x):
    c = jnp.sin(c) * x + c
    return c, c

def f(c0, xs, unroll):
    return lax.scan(body, c0, xs, unroll=unroll)
"""

# Length of the scanned sequence in the unroll comparison.
UNROLL_LENGTH = 16
UNROLLS = (1, 4)


def builtin(src: str) -> Callable[..., Any]:
    """``f`` of ``src`` (executed with ``jax``, ``jnp``, ``lax`` in scope)."""
    ns: dict[str, Any] = {"jax": jax, "jnp": jnp, "lax": lax}
    exec(compile(src, BUILTIN_FILENAME, "exec"), ns)
    fn: Callable[..., Any] = ns["f"]
    return fn


def primitives(closed: Any) -> list[str]:
    """The sorted primitive names of ``closed`` and every jaxpr nested in it."""
    return sorted({eqn.primitive.name for _, eqn in iter_eqns(closed.jaxpr)})


def _branch_primitives(closed: Any) -> list[list[str]]:
    """For the first ``cond`` eqn: each branch's primitive names (``branches`` order)."""
    for _, eqn in iter_eqns(closed.jaxpr):
        if eqn.primitive.name == "cond":
            return [
                sorted({e.primitive.name for _, e in iter_eqns(b.jaxpr)})
                for b in eqn.params["branches"]
            ]
    return []


def hlo_op_counts(text: str) -> Counter[str]:
    """Count the HLO instructions of ``compiled.as_text()`` by opcode (``%x = f32[] sine(...)``
    lines: the word before the first ``(`` after the result type)."""
    return Counter(m.group(1) for m in re.finditer(r"=\s*\S+\s+([a-z][\w-]*)\(", text))


def hlo_computation_counts(text: str, opcode: str) -> dict[str, int]:
    """Per computation of ``compiled.as_text()`` (``%name (...) -> ... {`` / ``ENTRY %name``
    blocks): how many ``opcode`` instructions it holds (computations without one left out)."""
    counts: dict[str, int] = {}
    name = ""
    pattern = re.compile(r"=\s*\S+\s+" + re.escape(opcode) + r"\(")
    for line in text.splitlines():
        if header := re.match(r"^(?:ENTRY\s+)?%?([\w.\-]+)\s.*\{\s*$", line):
            name = header.group(1)
        elif pattern.search(line):
            counts[name] = counts.get(name, 0) + 1
    return counts


def semantics(user_closed: Any, plan: Any) -> Iterator[ControlFlowShown]:
    """The semantics facts, each with the jaxpr that proves it."""
    cond_f = builtin(COND_SRC)
    closed = jax.make_jaxpr(cond_f)(1.0)
    per_branch = _branch_primitives(closed)
    yield ControlFlowShown(
        topic="cond_traces_both",
        claim="cond traces both branches: the jaxpr holds sin and cos, whatever x is.",
        holds=len(per_branch) == 2 and "cos" in per_branch[0] and "sin" in per_branch[1],
        code=COND_SRC,
        jaxpr=jaxpr_view(closed),
        primitives=primitives(closed),
    )

    batched = jax.make_jaxpr(jax.vmap(cond_f))(jnp.array([-1.0, 2.0]))
    prims = primitives(batched)
    yield ControlFlowShown(
        topic="cond_vmap_select",
        claim="Under vmap a cond with a batched predicate becomes select_n: both branches run "
        "on every example and select_n picks per example.",
        holds="select_n" in prims and "cond" not in prims,
        code=COND_SRC + "\njax.vmap(f)(jnp.array([-1.0, 2.0]))\n",
        jaxpr=jaxpr_view(batched),
        primitives=prims,
    )
    if user_closed is not None and "cond" in primitives(user_closed):
        yield from _user_cond_vmap(plan)

    static_f = builtin(FORI_STATIC_SRC)
    closed = jax.make_jaxpr(static_f)(2.0)
    prims = primitives(closed)
    grad = float(jax.grad(static_f)(2.0))
    yield ControlFlowShown(
        topic="fori_static_scan",
        claim="fori_loop with static bounds becomes a scan, and reverse mode works: "
        "jax.grad(f)(2.0) = 3·2² = 12.",
        holds="scan" in prims and "while" not in prims,
        code=FORI_STATIC_SRC,
        jaxpr=jaxpr_view(closed),
        primitives=prims,
        figures={"x": 2.0, "grad": grad},
    )

    traced_f = builtin(FORI_TRACED_SRC)
    closed = jax.make_jaxpr(traced_f)(2.0, 3)
    prims = primitives(closed)
    jitted = jax.jit(traced_f)
    _, tangent = jax.jvp(lambda x: jitted(x, 3), (2.0,), (1.0,))
    refusal: Exception | None = None
    try:
        jax.grad(jitted)(2.0, 3)
    except Exception as exc:  # JAX's refusal is the point shown
        refusal = exc
    yield ControlFlowShown(
        topic="fori_traced_while",
        claim="fori_loop with a traced bound becomes a while: forward mode works (jvp = 12) "
        "but reverse mode is refused with JAX's error.",
        holds="while" in prims and "scan" not in prims and refusal is not None,
        code=FORI_TRACED_SRC + "\njax.grad(jax.jit(f))(2.0, 3)\n",
        jaxpr=jaxpr_view(closed),
        primitives=prims,
        error_class=exception_class(refusal) if refusal is not None else None,
        message=exception_text(refusal) if refusal is not None else None,
        figures={"x": 2.0, "jvp": float(tangent)},
    )

    unroll_f = builtin(UNROLL_SRC)
    xs = jnp.linspace(0.0, 1.0, UNROLL_LENGTH, dtype=jnp.float32)
    figures: dict[str, float] = {"length": float(UNROLL_LENGTH)}
    for u in UNROLLS:
        text = (
            jax.jit(unroll_f, static_argnums=2).lower(jnp.float32(0.5), xs, u).compile().as_text()
        )
        ops = hlo_op_counts(text or "")
        figures[f"unroll_{u}_ops"] = float(sum(ops.values()))
        figures[f"unroll_{u}_sine"] = float(ops["sine"])
        # the loop body's copies: XLA fuses the unrolled body into one computation
        figures[f"unroll_{u}_sine_fused"] = float(
            max(hlo_computation_counts(text or "", "sine").values(), default=0)
        )
        figures[f"unroll_{u}_lines"] = float(len((text or "").splitlines()))
    closed = jax.make_jaxpr(unroll_f, static_argnums=2)(jnp.float32(0.5), xs, UNROLLS[-1])
    yield ControlFlowShown(
        topic="unroll_hlo",
        claim=f"scan's unroll parameter changes the compiled HLO: unroll={UNROLLS[-1]} copies "
        f"the body {UNROLLS[-1]} times into each trip of the loop, so one fused computation "
        f"holds {UNROLLS[-1]} sine instructions where unroll=1 holds one. The whole program counts "
        "more: XLA's fusion recomputes some copies in a second fusion that writes the stacked "
        f"outputs ys ({UNROLL_LENGTH} is a multiple of {UNROLLS[-1]}: no remainder loop).",
        holds=figures[f"unroll_{UNROLLS[-1]}_ops"] > figures[f"unroll_{UNROLLS[0]}_ops"]
        and all(figures[f"unroll_{u}_sine_fused"] == u for u in UNROLLS),
        code=UNROLL_SRC
        + f"\njax.jit(f, static_argnums=2).lower(0.5, xs, unroll).compile().as_text()"
        f"  # xs: f32[{UNROLL_LENGTH}]\n",
        jaxpr=jaxpr_view(closed),
        primitives=primitives(closed),
        figures=figures,
    )


def _user_cond_vmap(plan: Any) -> Iterator[ControlFlowShown]:
    """``cond_vmap_select`` on the user's own ``f``: ``vmap`` over a batch of two copies of the
    arguments (leading axis added to every dynamic leaf). The predicate is then batched only if
    it depends on the arguments; the claim holds when ``select_n`` replaced the ``cond``."""
    args = concrete_args(plan.args)
    static = set(plan.normalized_argnums())
    if static or plan.kwargs:
        return
    batch = jax.tree.map(lambda a: jnp.stack([jnp.asarray(a)] * 2), args)
    try:
        closed = jax.make_jaxpr(jax.vmap(plan.fun))(*batch)
    except Exception:  # the user's f may not vmap; the built-in version is shown regardless
        return
    prims = primitives(closed)
    yield ControlFlowShown(
        topic="cond_vmap_select",
        claim="Your f under vmap (two copies of args stacked): the cond became select_n."
        if "cond" not in prims
        else "Your f under vmap: the predicate does not depend on the batch, the cond stays.",
        holds="select_n" in prims and "cond" not in prims,
        on_user_code=True,
        jaxpr=jaxpr_view(closed),
        primitives=prims,
    )
