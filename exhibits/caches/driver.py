"""The caches exhibit's driver-mode summary: what JAX did that the timeline's calls do not account
for, and the plain note the page and ``jaxscope run`` show when the timeline is empty or
incomplete ("where the exhibit cannot be sure, it says so", issue 15).

The truth is JAX's own count: the watch (``internals.jit_watch.JitWatch``) counts, for the whole
run, the ``jaxpr_trace_duration`` and ``backend_compile_duration`` events of each snippet function
(each is one ``jax_log_compiles`` line); what the observed calls of that function counted is
subtracted; the rest happened outside them (an eager ``jax.vmap``/``jax.grad`` of a jitted
function, a jit object out of the watcher's reach, calls past the limit).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from exhibits.caches.events import DriverRunSummary, TransformedCallView, WorkOutsideCalls

WHERE_WATCHED = (
    "the exhibit watches jit objects in the snippet's globals, in dicts, lists and tuples "
    "there, in classes (methods) and instances defined in the snippet, in the closures of its "
    "functions, inside Flax transforms there (nnx.jit), and every jax.jit made while f runs "
    "(of a function, bound method, partial or callable object)"
)


def _times(n: int) -> str:
    return "once" if n == 1 else f"{n} times"


def _work_text(outside: list[WorkOutsideCalls], total: bool) -> str:
    """``compiled jit(g) 3 times, traced g once`` over the functions, outside or in all."""
    parts = []
    for w in outside:
        compiles = w.compiles_total if total else w.compiles
        traces = w.traces_total if total else w.traces
        if compiles:
            parts.append(f"compiled jit({w.function}) {_times(compiles)}")
        if traces:
            parts.append(f"traced {w.function} {_times(traces)}")
    return ", ".join(parts)


def _transformed_text(transformed: list[TransformedCallView]) -> str:
    return "; ".join(
        f"{t.function} called under {t.how}"
        + (f" at line {t.line}" if t.line is not None else "")
        + (f" ({t.count} calls)" if t.count > 1 else "")
        for t in transformed
    )


def summary(
    watch: Any,
    observed_traces: Counter[str],
    observed_compiles: Counter[str],
    observed_calls: int,
    beyond_limit: int,
) -> DriverRunSummary:
    """The ``driver_run_summary`` of a driver run: ``watch`` is the run's ``JitWatch`` (its
    ``traces``/``compiles`` per name, ``transformed`` calls, ``watched`` count); the observed
    counters are what the emitted calls' own records counted (trace and compile events of their
    function), ``observed_calls`` how many calls were emitted."""
    outside = []
    for name in sorted(set(watch.traces) | set(watch.compiles)):
        traces = watch.traces[name] - observed_traces[name]
        compiles = watch.compiles[name] - observed_compiles[name]
        if traces > 0 or compiles > 0:
            outside.append(
                WorkOutsideCalls(
                    function=name,
                    traces=max(traces, 0),
                    compiles=max(compiles, 0),
                    traces_total=watch.traces[name],
                    compiles_total=watch.compiles[name],
                )
            )
    seen: Counter[tuple[str, str, int | None]] = Counter(
        (t.function, t.how, t.line) for t in watch.transformed
    )
    transformed = [
        TransformedCallView(function=f, how=h, line=line, count=n)
        for (f, h, line), n in seen.items()
    ]
    return DriverRunSummary(
        observed_calls=observed_calls,
        watched_jits=watch.watched,
        outside=outside,
        transformed=transformed,
        beyond_limit=beyond_limit,
        note=_note(observed_calls, outside, transformed, beyond_limit),
    )


def _note(
    observed_calls: int,
    outside: list[WorkOutsideCalls],
    transformed: list[TransformedCallView],
    beyond_limit: int,
) -> str | None:
    if observed_calls == 0 and not outside:
        how = f" ({_transformed_text(transformed)})" if transformed else ""
        return (
            "no jitted call of your code was observed: f(*args) called no jitted function of "
            f"the snippet with arrays{how}, and JAX traced and compiled none of the snippet's "
            "functions (f ran op by op, eagerly). What to try: wrap f (or its step) in jax.jit, "
            "define `calls` (argument tuples, each passed to jax.jit(f)), or pick a preset."
        )
    if observed_calls == 0:
        why = (
            f": {_transformed_text(transformed)}"
            if transformed
            else f", through jit objects out of the exhibit's reach ({WHERE_WATCHED})"
        )
        return (
            f"no jitted call of your code was observed: JAX {_work_text(outside, True)}, but "
            f"not in a call the exhibit could watch{why}. What to try: bind the jitted function "
            "to a module-level name (step = jax.jit(step_fn)) and call that from f, or define "
            "`calls` (argument tuples, each passed to jax.jit(f)), or pick a preset."
        )
    if not outside:
        return None
    reasons = []
    if transformed:
        reasons.append(
            f"{_transformed_text(transformed)}: a jitted function called eagerly under a "
            "transformation makes JAX compile a variant of its jit (batched, differentiated), "
            "which is not a call of the jit object, so it has no column"
        )
    if beyond_limit:
        reasons.append(f"{beyond_limit} calls past the first ones shown ran unobserved")
    if not reasons:
        reasons.append(f"some calls were made through jit objects out of reach ({WHERE_WATCHED})")
    return (
        f"the timeline does not show all of JAX's work: outside the calls shown, JAX "
        f"{_work_text(outside, False)} (in all: {_work_text(outside, True)}); "
        + "; ".join(reasons)
        + "."
    )
