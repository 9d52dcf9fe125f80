"""The review exhibit's findings, each made from a record of what the step did (never from the
code's text): the line is where it happened, the message says what was seen with its counts,
the fix says what to change. ``docs/design/0033-review.md`` lists what each is made from."""

from __future__ import annotations

from collections import Counter
from typing import Any

import jax
import numpy as np
from jaxscope.exhibit_api import (
    BakedConstant,
    ErrorContext,
    HostRead,
    RandomCall,
    setting_line,
    tracer_errors,
)

from .events import FindingKind, ReviewFinding, ReviewFindingsFound

# A numpy constant of at least this many bytes in a jitted function's jaxpr is a finding
# (smaller ones are scalars and small tables, cheap to bake in).
BAKED_MIN_BYTES = 1024


def _times(n: int) -> str:
    return {1: "once", 2: "twice"}.get(n, f"{n} times")


def _steps_text(seen: int, steps: int) -> str:
    return f"in {seen} of {steps} steps" if steps else "while the step was traced"


def host_reads(reads: list[HostRead], step_reads: list[int], steps: int) -> list[ReviewFinding]:
    """One ``DeviceToHost`` per (line, op): in how many steps it happened."""
    per_step: list[list[HostRead]] = []
    at = 0
    for n in step_reads:
        per_step.append(reads[at : at + n])
        at += n
    seen: dict[tuple[int, str], set[int]] = {}
    avals: dict[tuple[int, str], str] = {}
    for i, step in enumerate(per_step):
        for r in step:
            seen.setdefault((r.line, r.op), set()).add(i)
            avals[(r.line, r.op)] = r.aval
    return [
        ReviewFinding(
            kind="DeviceToHost",
            line=line,
            message=f"{op} on an array ({avals[(line, op)]}) copies it from the device to the "
            "host: Python waits here until the device has computed it, "
            f"{_steps_text(len(s), steps)}, so the host cannot queue the next step's work "
            "meanwhile",
            fix="keep values on the device in the loop: return them from the step and read them "
            "every N steps (or once at the end), or print inside jit with jax.debug.print",
            steps=len(s),
        )
        for (line, op), s in seen.items()
    ]


def randomness(calls: list[RandomCall], steps: int) -> list[ReviewFinding]:
    """One ``ImplicitRandomness`` per (line, api)."""
    by: dict[tuple[int, str], list[RandomCall]] = {}
    for c in calls:
        by.setdefault((c.line, c.api), []).append(c)
    out = []
    for (line, api), cs in by.items():
        if any(c.tracing for c in cs):
            what = (
                f"{api} ran while JAX traced {cs[0].function}: its numbers were drawn once, at "
                "trace time, and baked into the program as constants, so every call reuses them"
            )
        else:
            what = (
                f"{api} ran {_times(len(cs))} in {steps} steps outside any trace: numpy's hidden "
                "global state, not a JAX key, decides these numbers, and jax.jit of the step "
                "would freeze them"
            )
        out.append(
            ReviewFinding(
                kind="ImplicitRandomness",
                line=line,
                message=what,
                fix="make randomness explicit: pass a jax.random key into the step, "
                "key, sub = jax.random.split(key), and draw with jax.random.normal(sub, shape)",
                steps=steps,
            )
        )
    return out


def _global_name(value: Any, namespace: dict[str, Any]) -> str | None:
    """The snippet global holding the numpy array ``value`` is a view of (same memory)."""
    for name, v in namespace.items():
        if isinstance(v, np.ndarray) and not name.startswith("_") and np.shares_memory(v, value):
            return name
    return None


def constants(
    consts: list[tuple[str, BakedConstant]], namespace: dict[str, Any], source: str
) -> list[ReviewFinding]:
    """One ``BakedConstant`` per numpy constant of at least :data:`BAKED_MIN_BYTES`."""
    out = []
    for function, c in consts:
        if not c.numpy or c.nbytes < BAKED_MIN_BYTES:
            continue
        name = _global_name(c.value, namespace)
        made = setting_line(source, name) if name else None
        which = f"the numpy array {name}" if name else "a numpy array"
        if made is not None:
            which += f" (set at line {made})"
        out.append(
            ReviewFinding(
                kind="BakedConstant",
                line=c.line,
                message=f"{which}, {c.aval} ({c.nbytes} bytes), is captured by {function} as a "
                "constant of its jaxpr: it is baked into the compiled program, copied into it at "
                "every compile, and a new value later does not reach the program",
                fix=f"pass {name or 'it'} to the jitted function as an argument (on the device: "
                "jax.device_put once); if it is meant to be random each step, draw it with "
                "jax.random from a key argument",
                steps=0,
            )
        )
    return out


def jits_in_loop(
    created: list[tuple[str, int | None]],
    traces: Counter[str],
    compiles: Counter[str],
    steps: int,
) -> list[ReviewFinding]:
    """One ``JitInLoop`` per line that made more than one jit object of a function JAX traced
    more than once in the run."""
    made = Counter(created)
    return [
        ReviewFinding(
            kind="JitInLoop",
            line=line,
            message=f"jax.jit({name}) makes a new jit object {_times(n)} in {steps} steps, and "
            f"JAX traced {name} {_times(traces[name])} and compiled it "
            f"{_times(compiles[name])}: jit's caches belong to the function object, and each "
            "call here brings a new one",
            fix="create the jitted function once, outside the step (at module level), and call "
            "that object in the step",
            steps=steps,
        )
        for (name, line), n in made.items()
        if n > 1 and traces[name] > 1
    ]


def static_changes(changes: list[Any], compiles: Counter[str], steps: int) -> list[ReviewFinding]:
    """One ``StaticChanged`` per jitted function that compiled again because a static part of
    its input structure was not equal to the cached one (``(function, line, StructureChange)``
    from the probe): JAX's explanation down to the object, and the fix for that object."""
    return [
        ReviewFinding(
            kind="StaticChanged",
            line=line,
            message=f"JAX compiled {name} {_times(compiles[name])} in {steps} steps: "
            + change.text(),
            fix=change.fix(),
            steps=steps,
        )
        for name, line, change in changes
    ]


def transfers(
    found: list[tuple[int | None, str]], source: str, complete: bool = True
) -> list[ReviewFinding]:
    """One ``HostToDevice`` per transfer the guard stopped; ``complete``: the guarded step ran
    to its end (else the last one says the search stopped there)."""
    out = []
    for line, message in found:
        where = line
        if line is None:
            where = setting_line(source, "calls") or setting_line(source, "args")
            what = (
                "an argument the step is called with (a Python scalar or a host value) is "
                "copied to the device on every call"
            )
            fix = "put the values on the device once (jax.device_put) and pass those arrays, "
            fix += "or mark Python constants static (static_argnums)"
        else:
            what = (
                "a host value used here (a Python scalar in an eager op, a numpy array) is "
                "copied to the device on every step"
            )
            fix = "move this computation into the jitted function (a Python scalar there is "
            fix += "a constant of the program), or convert the value once, before the loop"
        out.append(
            ReviewFinding(
                kind="HostToDevice",
                line=where,
                message=f"{what}; jax.transfer_guard('disallow') stopped the second step here: "
                f"{message.split(', dst_sharding=')[0]}",
                fix=fix,
                steps=1,
            )
        )
    if out and not complete:
        out[
            -1
        ].message += (
            f" (the search stopped after {len(found)} lines: the step may make more transfers)"
        )
    return out


# JAX's tracer errors by finding kind, the most specific first (TracerBoolConversionError is a
# ConcretizationTypeError).
TRACER_KINDS: tuple[tuple[type[Exception], FindingKind], ...] = (
    (jax.errors.TracerBoolConversionError, "TracerBoolConversion"),
    (jax.errors.TracerIntegerConversionError, "TracerIntegerConversion"),
    (jax.errors.TracerArrayConversionError, "TracerArrayConversion"),
    (jax.errors.NonConcreteBooleanIndexError, "NonConcreteBooleanIndex"),
    (jax.errors.UnexpectedTracerError, "UnexpectedTracer"),
    (jax.errors.ConcretizationTypeError, "ConcretizationTypeError"),
)


def tracer(exc: BaseException, frames: list[Any]) -> list[ReviewFinding]:
    """The tracer error JAX raised in a step, at the deepest snippet line of its traceback."""
    explained = tracer_errors(exc, ErrorContext())
    kind: FindingKind = "ConcretizationTypeError"
    for cls, name in TRACER_KINDS:
        if isinstance(exc, cls):
            kind = name
            break
    first = str(exc).strip().splitlines()[0]
    return [
        ReviewFinding(
            kind=kind,
            line=frames[-1].line if frames else None,
            message=(
                "a Python decision on a traced value"
                if kind == "TracerBoolConversion"
                else "a concrete Python value asked of a traced value"
            )
            + f": JAX raised {type(exc).__name__}: {first.rstrip('.')}."
            + (f" {explained.explanation}" if explained else ""),
            fix=explained.fix if explained and explained.fix else "",
            steps=0,
        )
    ]


def findings_found(
    *,
    steps: int,
    reads: list[HostRead],
    step_reads: list[int],
    randoms: list[RandomCall],
    created: list[tuple[str, int | None]],
    changed_statics: list[Any] | None = None,
    traces: Counter[str],
    compiles: Counter[str],
    guard_stops: list[tuple[int | None, str]],
    guard_complete: bool,
    consts: list[tuple[str, BakedConstant]],
    tracer_error: BaseException | None,
    tracer_frames: list[Any],
    namespace: dict[str, Any],
    source: str,
) -> ReviewFindingsFound:
    """The ``review_findings_found`` event: every finding, in line order."""
    all_found = [
        *host_reads(reads, step_reads, steps),
        *randomness(randoms, steps),
        *constants(consts, namespace, source),
        *jits_in_loop(created, traces, compiles, steps),
        *static_changes(changed_statics or [], compiles, steps),
        *transfers(guard_stops, source, guard_complete),
        *(tracer(tracer_error, tracer_frames) if tracer_error is not None else []),
    ]
    all_found.sort(key=lambda x: (x.line is None, x.line or 0, x.kind))
    return ReviewFindingsFound(steps=steps, findings=all_found)
