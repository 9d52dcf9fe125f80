"""The exhibit table (backend side): static metadata of every exhibit, and how to read each
artefact that ``jaxscope run --print ARTEFACT`` can print out of a run's events.

The server and the CLI read this table without importing JAX or any probe; the sandbox worker
imports ``exhibits.<id>.probe`` by id. ``frontend/src/exhibits.ts`` is the frontend's table; a test
checks that both list the same ids and that every exhibit folder has all its parts.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from jaxscope.protocol import (
    EventModel,
    ExecutableCompiled,
    ExhibitInfo,
    JaxprStaged,
    ModuleLowered,
    ProgramExecuted,
)

EXHIBITS_DIR = Path(__file__).resolve().parent

Extractor = Callable[[Sequence[EventModel]], str | None]


T = TypeVar("T")


def _last(events: Sequence[EventModel], kind: type[T]) -> T | None:
    found = [e for e in events if isinstance(e, kind)]
    return found[-1] if found else None


def _jaxpr(events: Sequence[EventModel]) -> str | None:
    e = _last(events, JaxprStaged)
    return e.jaxpr.text if e else None


def _stablehlo(events: Sequence[EventModel]) -> str | None:
    e = _last(events, ModuleLowered)
    return e.stablehlo if e else None


def _hlo(events: Sequence[EventModel]) -> str | None:
    e = _last(events, ModuleLowered)
    return e.hlo if e else None


def _compiled(events: Sequence[EventModel]) -> str | None:
    e = _last(events, ExecutableCompiled)
    return e.compiled_text if e else None


def _cost(events: Sequence[EventModel]) -> str | None:
    e = _last(events, ExecutableCompiled)
    return json.dumps(e.cost, indent=2, sort_keys=True) if e else None


def _memory(events: Sequence[EventModel]) -> str | None:
    e = _last(events, ExecutableCompiled)
    return json.dumps(e.memory, indent=2, sort_keys=True) if e else None


def _output(events: Sequence[EventModel]) -> str | None:
    e = _last(events, ProgramExecuted)
    if e is None:
        return None
    lines = [f"{o.path or 'output'}: {o.dtype}{o.shape}\n{o.preview}" for o in e.outputs]
    if e.zeros_for:
        note = ", ".join(e.zeros_for)
        lines.insert(0, f"# ran on zeros for {note} (ShapeDtypeStruct arguments have no values)")
    return "\n".join(lines)


@dataclass(frozen=True)
class Exhibit:
    """One exhibit: its folder is ``exhibits/<id>/`` (probe.py, View.svelte, narrative.md,
    examples/*.py, golden/*.json, tests)."""

    id: str
    title: str
    summary: str
    default_example: str
    artefacts: dict[str, Extractor] = field(default_factory=dict)
    # Other exhibits whose examples this one offers too (the same real models serve several
    # exhibits; the files live once, in the first exhibit that uses them).
    examples_from: tuple[str, ...] = ()

    @property
    def folder(self) -> Path:
        return EXHIBITS_DIR / self.id

    def example_paths(self) -> dict[str, Path]:
        """Example name (file stem) -> snippet file: this exhibit's own ``examples/*.py`` first,
        then those of ``examples_from`` under names not taken yet."""
        paths: dict[str, Path] = {}
        for folder in (self.id, *self.examples_from):
            for p in sorted((EXHIBITS_DIR / folder / "examples").glob("*.py")):
                paths.setdefault(p.stem, p)
        return paths

    def examples(self) -> list[str]:
        """Example names, sorted."""
        return sorted(self.example_paths())

    def info(self) -> ExhibitInfo:
        return ExhibitInfo(
            id=self.id,
            title=self.title,
            summary=self.summary,
            artefacts=list(self.artefacts),
            default_example=self.default_example,
            examples=self.examples(),
        )


EXHIBITS: dict[str, Exhibit] = {
    e.id: e
    for e in [
        Exhibit(
            id="tracing",
            title="Tracing → jaxpr",
            summary="Watch JAX run your function once with tracers and record each equation.",
            default_example="mlp_loss",
            artefacts={"jaxpr": _jaxpr},
        ),
        Exhibit(
            id="stations",
            title="The four stations of a jitted call",
            summary="Traced, Lowered, Compiled, Run: jaxpr, StableHLO, optimized HLO, the device.",
            default_example="mlp_loss",
            examples_from=("tracing",),
            artefacts={
                "jaxpr": _jaxpr,
                "stablehlo": _stablehlo,
                "hlo": _hlo,
                "compiled": _compiled,
                "cost": _cost,
                "memory": _memory,
                "output": _output,
            },
        ),
    ]
}

# Each exhibit folder must hold these parts (checked at server start and in tests).
REQUIRED_PARTS = ("probe.py", "View.svelte", "narrative.md", "examples", "golden")


def missing_parts(exhibit: Exhibit) -> list[str]:
    """The required parts that ``exhibits/<id>/`` lacks (empty when complete)."""
    return [p for p in REQUIRED_PARTS if not (exhibit.folder / p).exists()]
