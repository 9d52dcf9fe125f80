"""The exhibit catalogue (``GET /api/exhibits``) from the static registry; no JAX, no probe."""

from __future__ import annotations

from exhibits.registry import EXHIBITS, Exhibit, missing_parts
from jaxscope.events import check_union
from jaxscope.protocol import Catalogue, ExhibitInfo
from jaxscope.sandbox.kinds import kind_problem


def build_catalogue(exhibits: dict[str, Exhibit] | None = None) -> Catalogue:
    """Every exhibit's :class:`~jaxscope.protocol.ExhibitInfo` (with ``unavailable`` where its
    worker kind is not installed), and the source of every example an exhibit offers
    (``Exhibit.example_paths``) keyed ``"<id>/<stem>"``."""
    table = EXHIBITS if exhibits is None else exhibits
    examples: dict[str, str] = {}
    for exhibit in table.values():
        for stem, path in exhibit.example_paths().items():
            examples[f"{exhibit.id}/{stem}"] = path.read_text(encoding="utf-8")
    return Catalogue(exhibits=[_info(e) for e in table.values()], examples=examples)


def _info(exhibit: Exhibit) -> ExhibitInfo:
    """The exhibit's entry, saying why this server cannot run it (its worker kind is not
    installed: the torch venv, design 0025) and how to add it."""
    info = exhibit.info()
    info.unavailable = kind_problem(exhibit.worker)
    return info


class IncompleteExhibit(RuntimeError):
    """An exhibit folder lacks a required part, or its ``events.py`` defines an event the event
    union lacks (raised at server start)."""


def check_exhibits(exhibits: dict[str, Exhibit] | None = None) -> None:
    """Raise :class:`IncompleteExhibit` naming every exhibit part that is missing, and every
    problem of the event union assembled from the exhibits' ``events.py``
    (:func:`jaxscope.events.check_union`: an event class its module does not list in
    ``EVENTS``, two events with the same ``type``)."""
    table = EXHIBITS if exhibits is None else exhibits
    problems = [
        f"exhibits/{e.id}/ lacks {', '.join(missing)}"
        for e in table.values()
        if (missing := missing_parts(e))
    ]
    if problems:
        raise IncompleteExhibit("incomplete exhibits: " + "; ".join(problems))
    if union := check_union(table):
        raise IncompleteExhibit("the event union is inconsistent: " + "; ".join(union))
