"""Each exhibit owns its events (``exhibits/<id>/events.py``), and the union is assembled from them.

Checked here: the real union holds every event every events module defines, each ``type`` once;
the check (``jaxscope.events.union_problems``) catches an event its module does not list, two
events sharing a ``type``, and an event listed by a module that does not define it; the server
and the worker's runner refuse to start on such an exhibit; and the exhibit tests' ``run_probe``
fails a probe that emits an event the union lacks, as the worker would fail the real run.
"""

from __future__ import annotations

import functools
import importlib.util
import operator
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Annotated, Any, get_args

import pytest
from jaxscope import events as event_union
from jaxscope import protocol
from jaxscope.protocol import EventBase, RunOptions
from jaxscope.server import catalogue as catalogue_module
from jaxscope.server.app import create_app
from jaxscope.server.catalogue import IncompleteExhibit
from jaxscope.settings import Settings
from pydantic import Field, TypeAdapter

from exhibits import registry
from exhibits.conftest import EventNotInUnion, FakeContext, run_probe
from exhibits.registry import EXHIBITS, Exhibit
from exhibits.tracing.events import EqnRecorded, JitCalled
from exhibits.tracing.options import CallSpec

# No ``from __future__ import annotations``: the fake module is not in sys.modules, where pydantic
# would look its string annotations up.
FAKE_EVENTS = """
from typing import Literal

from jaxscope.protocol import EventBase, WireModel


class FakeView(WireModel):
    text: str


class FakeListed(EventBase):
    type: Literal["fake_listed"] = "fake_listed"
    view: FakeView | None = None


class FakeForgotten(EventBase):
    type: Literal["fake_forgotten"] = "fake_forgotten"
    text: str = ""

EVENTS = (FakeListed,)
"""


def _module_from(tmp_path: Path, name: str, source: str) -> ModuleType:
    path = tmp_path / f"{name.replace('.', '_')}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_union_holds_every_event_of_every_exhibit() -> None:
    union = set(get_args(protocol.EventModel))
    assert union == set(event_union.EVENT_CLASSES)
    assert event_union.check_union() == []
    for exhibit in EXHIBITS.values():
        module = importlib.import_module(exhibit.events_module)
        defined = event_union.defined_events(module)
        assert set(defined) == set(module.EVENTS), exhibit.id
        assert set(defined) <= union, exhibit.id
    mapping = event_union.EVENT_ADAPTER.json_schema()["discriminator"]["mapping"]
    assert set(mapping) == {event_union.event_type(cls) for cls in union}
    kinds = [event_union.event_type(cls) for cls in event_union.EVENT_CLASSES]
    assert len(kinds) == len(set(kinds))


def test_the_protocol_keeps_only_the_core_events() -> None:
    assert {event_union.event_type(c) for c in protocol.EVENTS} == {
        "run_started",
        "stage_started",
        "stage_timed",
        "stdout_printed",
        "jaxpr_staged",
        "run_queued",
        "run_accepted",
        "budget_scaled",
        "run_finished",
        "run_failed",
        "detail_failed",
        "watched_file_changed",
        # eqn ranges of a split jaxpr view (design 0045) and classroom rooms (design 0044):
        # the shell's, not an exhibit's
        "jaxpr_eqns_sent",
        "items_sent",
        "room_opened",
        "room_updated",
        "room_refused",
        "room_closed",
    }
    # exhibits' events are imported from their exhibit; the protocol says where
    with pytest.raises(AttributeError, match=r"exhibits\.tracing\.events"):
        _ = protocol.JitCalled


def test_an_event_missing_from_events_is_caught(tmp_path: Path) -> None:
    fake = _module_from(tmp_path, "exhibits_fake.events", FAKE_EVENTS)
    problems = event_union.union_problems([protocol, fake])
    assert len(problems) == 1
    assert "FakeForgotten" in problems[0] and "'fake_forgotten'" in problems[0]
    with pytest.raises(event_union.EventUnionError, match="FakeForgotten"):
        event_union.assemble([protocol, fake])


def test_deleting_an_event_from_an_exhibits_events_is_caught() -> None:
    real = importlib.import_module("exhibits.tracing.events")
    cut = ModuleType(real.__name__)
    cut.__dict__.update(vars(real), EVENTS=(EqnRecorded,))
    problems = event_union.union_problems([protocol, cut])
    assert len(problems) == 1 and "JitCalled" in problems[0]


def test_two_events_sharing_a_type_are_caught(tmp_path: Path) -> None:
    source = FAKE_EVENTS.replace('"fake_forgotten"', '"run_finished"').replace(
        "EVENTS = (FakeListed,)", "EVENTS = (FakeListed, FakeForgotten)"
    )
    fake = _module_from(tmp_path, "exhibits_dup.events", source)
    problems = event_union.union_problems([protocol, fake])
    assert len(problems) == 1
    assert "two events share the type 'run_finished'" in problems[0]
    assert "jaxscope.protocol.RunFinished" in problems[0]


def test_an_event_listed_by_a_module_that_does_not_define_it_is_caught(tmp_path: Path) -> None:
    steal = "from jaxscope.protocol import RunFinished\n"
    steal += "EVENTS = (FakeListed, FakeForgotten, RunFinished)"
    source = FAKE_EVENTS.replace("EVENTS = (FakeListed,)", steal)
    fake = _module_from(tmp_path, "exhibits_steal.events", source)
    problems = event_union.union_problems([protocol, fake])
    assert len(problems) == 1
    assert "lists RunFinished, which jaxscope.protocol defines" in problems[0]


def test_a_module_without_events_is_caught(tmp_path: Path) -> None:
    fake = _module_from(tmp_path, "exhibits_bare.events", "X = 1\n")
    assert event_union.union_problems([protocol, fake]) == [
        "exhibits_bare.events has no EVENTS tuple (list its event classes there)"
    ]


def test_startup_fails_on_an_event_missing_from_the_union(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "fake"
    folder.mkdir()
    for part in registry.REQUIRED_PARTS:
        (folder / part).mkdir() if "." not in part else (folder / part).write_text("")
    (folder / "events.py").write_text(FAKE_EVENTS)
    fake_events = _module_from(tmp_path, "exhibits.fake.events", FAKE_EVENTS)
    monkeypatch.setattr(registry, "EXHIBITS_DIR", tmp_path)
    monkeypatch.setitem(sys.modules, "exhibits.fake.events", fake_events)
    fake = Exhibit(
        id="fake", title="Fake", summary="", default_example="x", group="Debugging", label="Fake"
    )
    assert registry.missing_parts(fake) == []
    monkeypatch.setattr(catalogue_module, "EXHIBITS", {"fake": fake})
    with pytest.raises(IncompleteExhibit, match=r"event union.*FakeForgotten"):
        create_app(Settings(workers=0))


def test_run_probe_fails_a_probe_emitting_an_event_outside_the_union(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_events = _module_from(tmp_path, "exhibits.fake.events", FAKE_EVENTS)
    probe = ModuleType("exhibits.fake.probe")

    def run(ctx: FakeContext) -> None:
        ctx.emit(fake_events.FakeListed())

    probe.__dict__["run"] = run
    monkeypatch.setitem(sys.modules, "exhibits.fake.probe", probe)
    with pytest.raises(EventNotInUnion, match=r"FakeListed \(type 'fake_listed'\)"):
        run_probe("fake", "f = lambda x: x\nargs = (1.0,)\n")


def test_an_event_deleted_from_the_union_fails_the_exhibits_own_tests(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    source = "def f(x):\n    return x * 2.0\n\nargs = (1.0,)\n"
    options = RunOptions(calls=[CallSpec(change="same")])
    assert run_probe("tracing", source, options).of_type(JitCalled)
    without = [c for c in event_union.EVENT_CLASSES if c is not JitCalled]
    union: Any = functools.reduce(operator.or_, without)
    adapter: TypeAdapter[EventBase] = TypeAdapter(Annotated[union, Field(discriminator="type")])
    monkeypatch.setattr(event_union, "EVENT_ADAPTER", adapter)
    with pytest.raises(EventNotInUnion, match=r"JitCalled \(type 'jit_called'\)"):
        run_probe("tracing", source, options)


def test_the_server_fails_at_start_up_on_an_event_missing_from_the_union() -> None:
    # In a fresh process: tracing's events module loses JitCalled from EVENTS before the
    # server's app loads (it assembles the union, which it validates every worker line with;
    # a worker does not: it imports the events of the exhibit it runs, design 0059).
    code = (
        "import exhibits.tracing.events as t\n"
        "t.EVENTS = (t.EqnRecorded,)\n"
        "import jaxscope.server.app\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert out.returncode != 0
    assert "EventUnionError" in out.stderr
    assert "defines the event JitCalled (type 'jit_called')" in out.stderr
