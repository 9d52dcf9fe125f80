"""Shared fixtures for exhibit tests: run a probe in-process with a recording ProbeContext.

The real runner (``jaxscope.sandbox``) runs probes in a sandboxed worker; these tests run them
in-process with :class:`FakeContext`, which records emitted events and the stdout written inside
each stage (as the runner attributes it), so that each artefact can be checked against JAX.

Every event is checked on the way in as the worker checks it: serialized as the runner writes it
(``runner.event_json``) and parsed back with the union the server validates with
(``jaxscope.events.EVENT_ADAPTER``). An event missing from the union (a class that no events
module lists, or one defined outside ``exhibits/<id>/events.py``) fails the exhibit's own tests
here, as it would fail every real run with ``invalid_event``.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import io
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest
from jaxscope import events as event_union
from jaxscope.protocol import EventModel, RunOptions, Stage, StageStarted, StdoutPrinted
from jaxscope.sandbox.probe_api import Snippet
from jaxscope.sandbox.runner import event_json, global_state, state_changed
from jaxscope.sandbox.snippet import load_snippet
from pydantic import ValidationError

from testkit import run_cli

EXHIBITS = Path(__file__).resolve().parent
# Real user problems with their right values (copied from the shared cases: cases/README.md).
CASES = Path(__file__).resolve().parents[1] / "cases"

T = TypeVar("T")

# The CLI of the venv running the tests, as a user runs it (the sandboxed worker included).
JAXSCOPE = str(Path(sys.executable).parent / "jaxscope")


# The snippet as a plain script in a fresh Python, JAX logging every trace and compile
# (``jax_log_compiles``) of the loop: the driver ``f(*args)``, or ``jax.jit(f)`` (with the
# snippet's statics) on each tuple of ``calls``; what the module did while it loaded is left out.
# The modules whose truths are plain_jax_log's of the same cases (NJ01, C05): one test process.
PLAIN_LOG_GROUP = "plain_jax_logs"

_PLAIN_LOG = """
import logging, io, runpy, sys
import jax
jax.config.update("jax_log_compiles", True)
buf = io.StringIO()
handler = logging.StreamHandler(buf)
handler.setLevel(logging.DEBUG)
logging.getLogger("jax").addHandler(handler)
logging.getLogger("jax").setLevel(logging.DEBUG)
ns = runpy.run_path(sys.argv[1], run_name="snippet")
buf.truncate(0)
buf.seek(0)
if "calls" in ns:
    f = ns["f"]
    if not hasattr(f, "lower"):
        f = jax.jit(
            f,
            static_argnums=ns.get("static_argnums", ()),
            static_argnames=ns.get("static_argnames", ()),
        )
    for call in ns["calls"]:
        f(*call)
else:
    ns["f"](*ns["args"])
print(buf.getvalue())
"""


@functools.cache
def plain_jax_log(path: Path) -> str:
    """What JAX logs (``jax_log_compiles``: "Finished tracing <name> for jit", "Finished XLA
    compilation of jit(<name>)", ...) while a fresh ``python`` runs the snippet at ``path`` as a
    user would (:data:`_PLAIN_LOG`); the independent truth of the cache exhibits' counts. One
    fresh process per path and test process: the NJ01 and C05 cases are read by two modules
    each, which share the xdist group :data:`PLAIN_LOG_GROUP` so that one process makes both."""
    proc = subprocess.run(
        [sys.executable, "-c", _PLAIN_LOG, str(path)], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout + proc.stderr


def jaxscope_run(exhibit: str, path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """``jaxscope run EXHIBIT PATH EXTRA...`` from the repository's root, its stdout and stderr
    captured as text. The exit status is the caller's to check: 0 fine, 1 failed, 3 JAX refused
    the code or the exhibit found a problem. The command's ``main`` runs in this process
    (``testkit.run_cli``): its worker is a fork of the process's warm template, as a server's
    are, instead of a cold interpreter, the CLI's imports and a template of its own."""
    return run_cli("run", exhibit, str(path), *extra, cwd=CASES.parent)


# The template (``exhibits/_template/``) is registered nowhere, so its events are in no union: its
# tests run in the registered copy ``exhibits/test_template.py`` makes (docs/adding-an-exhibit.md).
collect_ignore = ["_template"]


class EventNotInUnion(AssertionError):
    """A probe emitted an event the worker would reject (``invalid_event`` in a real run)."""


def check_wire(event: EventModel) -> None:
    """Validate ``event`` as the worker does: the runner's NDJSON line, parsed with the union's
    adapter, must give back an event of the same class (read at call time, so a test can swap
    the adapter for one without some event)."""
    line = event_json(event)
    try:
        parsed = event_union.EVENT_ADAPTER.validate_json(line)
    except ValidationError as exc:
        raise EventNotInUnion(
            f"{type(event).__name__} (type {event.type!r}) is not a valid wire event: the worker "
            f"would fail the run with invalid_event. {exc.errors()[0]['msg']}; is it listed in "
            "the EVENTS of its exhibits/<id>/events.py?"
        ) from exc
    if type(parsed) is not type(event):
        raise EventNotInUnion(
            f"{type(event).__name__} came back from the wire as {type(parsed).__name__}"
        )


@dataclass
class FakeContext:
    """A :class:`ProbeContext` that records events; stdout inside a stage becomes
    ``StdoutPrinted`` events, as the runner does."""

    snippet: Snippet
    options: RunOptions = field(default_factory=RunOptions)
    run_id: str = "test"
    exhibit: str = "test"
    events: list[EventModel] = field(default_factory=list)
    on_demand: bool = False

    def emit(self, event: EventModel) -> None:
        check_wire(event)
        self.events.append(event)

    @contextlib.contextmanager
    def stage(self, stage: Stage, call_index: int | None = None) -> Iterator[None]:
        self.emit(StageStarted(stage=stage, call_index=call_index))
        buf = io.StringIO()
        real = sys.stdout
        sys.stdout = buf
        try:
            yield
        finally:
            sys.stdout = real
            # jax.debug.print goes through a host callback: flush JAX's effects first.
            if buf.getvalue():
                self.emit(StdoutPrinted(text=buf.getvalue(), stage=stage, call_index=call_index))

    def of_type(self, kind: type[T]) -> list[T]:
        return [e for e in self.events if isinstance(e, kind)]

    def one(self, kind: type[T]) -> T:
        found = self.of_type(kind)
        assert len(found) == 1, f"expected one {kind.__name__}, got {len(found)}"
        return found[0]


Runner = Callable[..., FakeContext]


def run_probe(exhibit: str, source: str, options: RunOptions | None = None) -> FakeContext:
    """Load ``source`` as a snippet and run ``exhibits.<exhibit>.probe`` on it in-process."""
    probe: Any = importlib.import_module(f"exhibits.{exhibit}.probe")
    snippet = load_snippet(source)
    # After loading: the snippet itself may define primitives (that is the user's doing).
    state = global_state()
    ctx = FakeContext(snippet=snippet, options=options or RunOptions())
    ctx.exhibit = exhibit
    probe.run(ctx)
    # A probe must leave the process as it found it (jax.config, the jax modules, the cwd):
    # otherwise the sandbox retires the session's worker after every run of this exhibit.
    assert not state_changed(state, global_state()), f"the {exhibit} probe changed global state"
    return ctx


@pytest.fixture
def probe_runner() -> Runner:
    """``probe_runner(exhibit, source, options=None) -> FakeContext`` (events recorded)."""
    return run_probe


def example_sources(exhibit: str) -> dict[str, str]:
    """``{name: source}`` of ``exhibits/<exhibit>/examples/*.py``."""
    return {p.stem: p.read_text() for p in sorted((EXHIBITS / exhibit / "examples").glob("*.py"))}
