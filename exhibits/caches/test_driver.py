"""The caches exhibit's driver mode on jits where users keep them, and what it says when it
cannot see all of JAX's work (issue 15: "where the exhibit cannot be sure, it says so").

* A jitted method (``@partial(jax.jit, static_argnums=0)``) and jits in a dict, a tuple, a closure
  and an instance attribute are observed, call by call, with the layers a plain-JAX replay of the
  same calls reports (the jit object's C++ cache size and JAX's trace/compile events); the
  snippet's objects are put back after the run.
* ``jax.vmap``/``jax.grad`` of a jitted ``g`` called eagerly: the summary counts the compiles of
  ``jit(g)`` no call accounts for and names the lines; the totals equal JAX's log in a fresh
  process (``test_fresh_process_truth.py``).
* No jit call observed: the page's note and ``jaxscope run`` (stderr, exit 0) say so plainly,
  with why and what to try, for eager code and for a jit out of reach.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from exhibits.caches.artefacts import NOTES
from exhibits.caches.events import DriverRunSummary, JitCallObserved
from exhibits.conftest import jaxscope_run, run_probe

CASES = Path(__file__).resolve().parent / "driver_cases"


def source(name: str) -> str:
    return (CASES / f"{name}.py").read_text()


def run(name: str) -> tuple[list[JitCallObserved], DriverRunSummary]:
    events = run_probe("caches", source(name)).events
    calls = [e for e in events if isinstance(e, JitCallObserved)]
    (summary,) = [e for e in events if isinstance(e, DriverRunSummary)]
    return calls, summary


def line_of(name: str, text: str) -> int:
    """The 1-based line of ``name``'s source that contains ``text`` (exactly one)."""
    (line,) = [i + 1 for i, t in enumerate(source(name).splitlines()) if text in t]
    return line


def plain_layers(name: str) -> list[tuple[str, bool, bool, bool]]:
    """Per call of the jitted methods in ``method_jit``, replayed in plain JAX: (function, cpp
    hit, traced, compiled), from the jit object's C++ cache size and JAX's monitoring events."""
    import jax
    import jax.monitoring

    ns: dict[str, object] = {}
    exec(compile(source(name), "plain.py", "exec"), ns)
    jax.clear_caches()  # type: ignore[no-untyped-call]
    scale: Any = ns["Scale"]
    jitted = vars(scale)["apply"]
    events: list[str] = []

    def listen(event: str, duration_secs: float, **kw: str | int) -> None:
        del duration_secs
        if kw.get("fun_name") in ("apply", "jit(apply)"):
            events.append(event)

    jax.monitoring.register_event_duration_secs_listener(listen)
    out = []
    try:
        for k in (2, 2, 3):
            events.clear()
            before = jitted._cache_size()
            scale(k).apply(jax.numpy.ones(3))
            traced = any(e.endswith("jaxpr_trace_duration") for e in events)
            compiled = any(e.endswith("backend_compile_duration") for e in events)
            out.append(("apply", jitted._cache_size() == before, traced, compiled))
    finally:
        jax.monitoring.unregister_event_duration_listener(listen)
    return out


def test_a_jitted_method_is_observed_call_by_call() -> None:
    calls, summary = run("method_jit")
    got = [(c.function, c.layer == "cpp", c.traced, c.compiled) for c in calls]
    assert got == plain_layers("method_jit")
    # equal instances are one static entry (JAX looks statics up by hash and equality): the
    # diff shows the class and hash, not object.__repr__'s address
    statics = [next(e for e in c.entries if e.name == "static self") for c in calls]
    assert [s.now for s in statics] == [
        f"Scale instance, hash {hash(2)}",
        f"Scale instance, hash {hash(2)}",
        f"Scale instance, hash {hash(3)}",
    ]
    assert [s.differs for s in statics] == [False, False, True]
    assert [c.source.line if c.source else None for c in calls] == [
        line_of("method_jit", "return Scale(2).apply(x)")
    ] * 3
    assert summary.observed_calls == 3 and summary.outside == [] and summary.note is None


def test_jits_in_a_dict_tuple_closure_and_instance_are_observed() -> None:
    calls, summary = run("stores")
    assert [c.function for c in calls] == ["double", "inc", "inc", "shift", "inc"]
    assert summary.outside == [] and summary.note is None
    assert summary.watched_jits == 4


def test_the_snippets_objects_are_put_back_after_the_run() -> None:
    import jax
    from jaxscope.internals.api import is_jitted

    ctx = run_probe("caches", source("stores"))
    ns = ctx.snippet.namespace
    assert is_jitted(ns["table"]["double"]) and is_jitted(ns["pair"][0])
    assert is_jitted(ns["model"].step)
    (cell,) = ns["runner"].__closure__
    assert is_jitted(cell.cell_contents)
    assert jax.jit.__module__.startswith("jax")
    ctx = run_probe("caches", source("method_jit"))
    assert is_jitted(vars(ctx.snippet.namespace["Scale"])["apply"])


def test_vmap_and_grad_of_a_jitted_function_are_counted_and_said() -> None:
    calls, summary = run("vmap_of_jit")
    assert [(c.function, c.layer) for c in calls] == [("g", "compile"), ("g", "cpp")]
    (work,) = summary.outside
    assert work.function == "g"
    # the compiles no call accounts for, and JAX's totals (the fresh-process test checks the
    # totals against jax_log_compiles): the timeline's one plus these
    assert work.compiles_total == sum(c.compiled for c in calls) + work.compiles
    assert work.compiles > 0 and work.traces == 0
    assert [(t.function, t.line) for t in summary.transformed] == [
        ("g", line_of("vmap_of_jit", "jax.vmap(g)")),
        ("g", line_of("vmap_of_jit", "jax.grad(")),
    ]
    assert summary.transformed[0].how == "jax.vmap"
    assert "autodiff" in summary.transformed[1].how
    assert summary.note is not None
    assert summary.note.startswith("the timeline does not show all of JAX's work")
    assert f"compiled jit(g) {work.compiles} times" in summary.note


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("eager_only", "f ran op by op, eagerly"),
        ("out_of_reach", "out of the exhibit's reach"),
    ],
)
def test_no_observed_call_is_said_plainly(name: str, why: str) -> None:
    calls, summary = run(name)
    assert calls == [] and summary.observed_calls == 0
    assert summary.note is not None
    assert summary.note.startswith("no jitted call of your code was observed")
    assert why in summary.note and "What to try" in summary.note
    if name == "out_of_reach":
        assert [(w.function, w.compiles) for w in summary.outside] == [("double", 1)]
    assert NOTES([summary]) == [summary.note]


def test_cli_says_no_jitted_call_was_observed() -> None:
    done = jaxscope_run("caches", CASES / "eager_only.py", "--print", "timeline")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
    assert done.stderr.startswith("jaxscope: note: no jitted call of your code was observed")
