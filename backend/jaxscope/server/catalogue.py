"""The exhibit catalogue (``GET /api/exhibits``) from the static registry; no JAX, no probe."""

from __future__ import annotations

from exhibits.registry import EXHIBITS, Exhibit, missing_parts, table_problems
from jaxscope.events import check_union
from jaxscope.protocol import Catalogue, ExhibitInfo
from jaxscope.sandbox.kinds import kind_problem


def build_catalogue(
    exhibits: dict[str, Exhibit] | None = None, *, hosted_pool: bool = False
) -> Catalogue:
    """Every exhibit's :class:`~jaxscope.protocol.ExhibitInfo` (with ``unavailable`` where its
    worker kind is not installed), and the source of every entry of an exhibit's picker
    (``Exhibit.picker_paths``, the one list of them): its examples keyed ``"<id>/<stem>"``, the
    real programs (``examples/real``) keyed ``"real/<stem>"``, once however many offer them.
    ``hosted_pool``: this server relays runs to a hosted pool (``--pool-socket``), whose
    container has the worker kinds, not this one (the web image has no torch venv, design
    0047): no exhibit is marked unavailable here; the pool refuses a run of a kind it lacks,
    with the same words."""
    table = EXHIBITS if exhibits is None else exhibits
    examples: dict[str, str] = {}
    for exhibit in table.values():
        for name, path in exhibit.picker_paths().items():
            key = name if name.startswith("real/") else f"{exhibit.id}/{name}"
            if key not in examples:
                examples[key] = path.read_text(encoding="utf-8")
    infos = [_info(e, check_kind=not hosted_pool) for e in table.values()]
    return Catalogue(exhibits=infos, examples=examples)


def _info(exhibit: Exhibit, *, check_kind: bool = True) -> ExhibitInfo:
    """The exhibit's entry, saying why this server cannot run it (its worker kind is not
    installed: the torch venv, design 0025) and how to add it."""
    info = exhibit.info()
    if check_kind:
        info.unavailable = kind_problem(exhibit.worker)
    return info


class IncompleteExhibit(RuntimeError):
    """An exhibit folder lacks a required part, its entry a navigation group or label, or its
    ``events.py`` defines an event the event union lacks (raised at server start)."""


def check_exhibits(exhibits: dict[str, Exhibit] | None = None) -> None:
    """Raise :class:`IncompleteExhibit` naming every exhibit part that is missing, every entry
    without a navigation group or label (``exhibits.registry.table_problems``), and every
    problem of the event union assembled from the exhibits' ``events.py``
    (:func:`jaxscope.events.check_union`: an event class its module does not list in
    ``EVENTS``, two events with the same ``type``)."""
    table = EXHIBITS if exhibits is None else exhibits
    problems = [
        f"exhibits/{e.id}/ lacks {', '.join(missing)}"
        for e in table.values()
        if (missing := missing_parts(e))
    ]
    problems += table_problems(table)
    if problems:
        raise IncompleteExhibit("incomplete exhibits: " + "; ".join(problems))
    if union := check_union(table):
        raise IncompleteExhibit("the event union is inconsistent: " + "; ".join(union))
