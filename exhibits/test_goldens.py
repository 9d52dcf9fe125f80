"""Every exhibit's golden event streams (``exhibits/<id>/golden/<example>.events.jsonl``, recorded
through the real sandbox with ``jaxscope run ID EXAMPLE --json``; vitest reads the same files in
``frontend/src/goldens.test.ts`` and the exhibits' view-model tests).

Each golden must: parse line by line with the event union, as the server re-validates a
worker's lines; number its events 0, 1, 2...; end with ``run_finished``; hold events of its own
exhibit; and still be what the exhibit emits: a fresh ``jaxscope run`` of the same example emits
the same exhibit events, in the same order (their types: values such as durations differ per
run, and each exhibit's own tests check the values against JAX). A golden with no example of
that name, or an exhibit without a golden of its default example, fails.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest
from jaxscope.protocol import EVENT_ADAPTER, EventBase, RunFinished
from jaxscope.sandbox.kinds import kind_problem

from exhibits.registry import EXHIBITS, Exhibit
from testkit import run_cli, sample

GOLDENS = [
    (exhibit, path)
    for exhibit in EXHIBITS.values()
    for path in sorted((exhibit.folder / "golden").glob("*.events.jsonl"))
]
# `make test` re-runs every exhibit's default example through the CLI and a fixed, seeded sample
# of six of the other goldens (most exhibits' own tests compare each of their goldens with what
# their probe emits now, in-process); `make test-all` re-runs all of them (testkit.py, design
# 0076).
_OTHERS = [g for g in GOLDENS if g[1].name != f"{g[0].default_example}.events.jsonl"]
_SAMPLED = sample(_OTHERS, 6, key="test_goldens")
_RERUN = [
    pytest.param(e, p, id=f"{e.id}/{p.name}", marks=pytest.mark.full)
    if (e, p) in _OTHERS and (e, p) not in _SAMPLED
    else pytest.param(e, p, id=f"{e.id}/{p.name}")
    for e, p in GOLDENS
]


def example_of(exhibit: Exhibit, golden: Path) -> Path:
    name = golden.name.removesuffix(".events.jsonl")
    paths = exhibit.example_paths()
    assert name in paths, f"{golden}: {exhibit.id} has no example {name!r}"
    return paths[name]


def own_types(exhibit: Exhibit, lines: list[str]) -> list[str]:
    own = {cls.model_fields["type"].default for cls in exhibit_events(exhibit)}
    return [t for t in (json.loads(x)["type"] for x in lines) if t in own]


def exhibit_events(exhibit: Exhibit) -> tuple[type[EventBase], ...]:
    module = importlib.import_module(exhibit.events_module)
    return tuple(module.EVENTS)


def test_every_exhibit_has_the_golden_of_its_default_example() -> None:
    for exhibit in EXHIBITS.values():
        golden = exhibit.folder / "golden" / f"{exhibit.default_example}.events.jsonl"
        assert golden.is_file(), f"{exhibit.id}: record {golden.relative_to(golden.parents[2])}"


@pytest.mark.parametrize(("exhibit", "golden"), _RERUN)
def test_a_golden_is_a_stream_the_exhibit_still_emits(exhibit: Exhibit, golden: Path) -> None:
    if (missing := kind_problem(exhibit.worker)) is not None:
        pytest.skip(missing)  # the torch venv is not installed here (`make torch`)
    lines = [x for x in golden.read_text().splitlines() if x.strip()]
    stream = [EVENT_ADAPTER.validate_json(x) for x in lines]
    assert [e.seq for e in stream] == list(range(len(stream)))
    assert isinstance(stream[-1], RunFinished)
    recorded = own_types(exhibit, lines)
    assert recorded, f"{golden.name} holds none of {exhibit.id}'s events"
    # The command's main in this process (a fork of its warm template): testkit.run_cli.
    proc = run_cli("run", exhibit.id, str(example_of(exhibit, golden)), "--json")
    assert proc.returncode in (0, 3), proc.stderr
    fresh = [x for x in proc.stdout.splitlines() if x.strip()]
    assert own_types(exhibit, fresh) == recorded, (
        f"{exhibit.id} now emits other events for {golden.name}: record it again with "
        f"jaxscope run {exhibit.id} EXAMPLE --json > {golden}"
    )
