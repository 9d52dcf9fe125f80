"""The event union: the core's events plus every registered exhibit's ``events.py``.

Each exhibit owns its events: ``exhibits/<id>/events.py`` defines its event classes (subclasses
of :class:`jaxscope.protocol.EventBase` with a ``type`` literal) and the views only they use, and
lists its events in a tuple ``EVENTS``. This module imports that module for every exhibit of
``exhibits/registry.py`` (``Exhibit.events_module``), after the core's own
:data:`jaxscope.protocol.EVENTS`, and assembles the union the wire is validated with
(:data:`EVENT_ADAPTER`, used by the server for every worker line and by the exhibit tests'
``run_probe`` for every emitted event).

Assembling fails (:class:`EventUnionError`, so the server, the worker's runner and every test
fail at start-up) when an events module defines an event class it does not list, lists one it
does not define, or when two events share a ``type`` (or two models a class name: the generated
TypeScript names them by class). :func:`union_problems` is the check, :func:`check_union` runs
it for a registry table (``create_app``'s exhibit check).

The import graph stays acyclic: ``jaxscope.protocol`` imports no exhibit;
``exhibits/<id>/events.py`` imports only pydantic, ``jaxscope.protocol`` and (for a view or event
another exhibit owns) that exhibit's ``events.py``; the registry imports events and artefacts
modules; this module imports the registry. The protocol resolves ``EVENT_ADAPTER``/``EventModel``
from here on first use.

Statically (for mypy) ``EventModel`` is :class:`~jaxscope.protocol.EventBase`; at run time it is
the union of :data:`EVENT_CLASSES` (``typing.get_args`` lists them).

``python -m jaxscope.events`` prints the JSON Schema ``npm run gen`` compiles to
``frontend/src/gen/``.
"""

from __future__ import annotations

import importlib
import json
import operator
from collections.abc import Mapping, Sequence
from functools import reduce
from types import ModuleType
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeAlias, get_args, get_origin

from pydantic import Field, TypeAdapter

from exhibits.registry import EXHIBITS, Exhibit
from jaxscope import protocol
from jaxscope.protocol import Catalogue, EventBase, Request, WireModel


class EventUnionError(RuntimeError):
    """An events module's ``EVENTS`` and the event classes it defines disagree, or two events
    share a ``type``: the union would reject an event a probe emits."""


def event_type(cls: type[EventBase]) -> str | None:
    """The ``type`` string of an event class (its ``type: Literal["..."]`` field), else ``None``
    (a base class, or a model that is not an event)."""
    field = cls.model_fields.get("type")
    if field is None or get_origin(field.annotation) is not Literal:
        return None
    args = get_args(field.annotation)
    return args[0] if len(args) == 1 and isinstance(args[0], str) else None


def _defined_here(module: ModuleType) -> list[type[WireModel]]:
    return [
        value
        for value in vars(module).values()
        if isinstance(value, type)
        and issubclass(value, WireModel)
        and value.__module__ == module.__name__
    ]


def defined_events(module: ModuleType) -> list[type[EventBase]]:
    """The event classes ``module`` itself defines (not those it imports)."""
    return [
        cls
        for cls in _defined_here(module)
        if issubclass(cls, EventBase) and event_type(cls) is not None
    ]


def listed_events(module: ModuleType) -> Sequence[type[EventBase]] | None:
    """``module.EVENTS`` (``None`` when it has none)."""
    listed = getattr(module, "EVENTS", None)
    return tuple(listed) if isinstance(listed, tuple | list) else None


def union_problems(modules: Sequence[ModuleType]) -> list[str]:
    """What is wrong with the union of ``modules``' ``EVENTS`` (empty: nothing)."""
    problems: list[str] = []
    by_type: dict[str, type[EventBase]] = {}
    by_name: dict[str, type[WireModel]] = {}
    for module in modules:
        where = module.__name__
        listed = listed_events(module)
        if listed is None:
            problems.append(f"{where} has no EVENTS tuple (list its event classes there)")
            listed = ()
        for cls in listed:
            if not (isinstance(cls, type) and issubclass(cls, EventBase) and event_type(cls)):
                problems.append(
                    f"{where}.EVENTS lists {cls!r}, which is not an event class "
                    "(a subclass of jaxscope.protocol.EventBase with a type literal)"
                )
            elif cls.__module__ != where:
                problems.append(
                    f"{where}.EVENTS lists {cls.__name__}, which {cls.__module__} defines: "
                    "list an event only in the module that defines it"
                )
        for cls in defined_events(module):
            if cls not in listed:
                problems.append(
                    f"{where} defines the event {cls.__name__} (type {event_type(cls)!r}) but "
                    "its EVENTS does not list it, so it is not in the event union: every run "
                    "that emits it would fail with invalid_event"
                )
        for cls in listed:
            kind = event_type(cls) if isinstance(cls, type) and issubclass(cls, EventBase) else None
            if kind is None:
                continue
            other = by_type.setdefault(kind, cls)
            if other is not cls:
                problems.append(
                    f"two events share the type {kind!r}: {other.__module__}.{other.__name__} "
                    f"and {cls.__module__}.{cls.__name__}"
                )
        for model in _defined_here(module):
            other_model = by_name.setdefault(model.__name__, model)
            if other_model is not model:
                problems.append(
                    f"two wire models share the class name {model.__name__} "
                    f"({other_model.__module__} and {model.__module__}): the generated "
                    "TypeScript names types by class name"
                )
    return problems


def events_modules(exhibits: Mapping[str, Exhibit] | None = None) -> list[ModuleType]:
    """The core (``jaxscope.protocol``) and the events module of every exhibit in ``exhibits``
    (default: the registry) whose folder has an ``events.py`` (a missing one is a missing part,
    which ``check_exhibits`` reports)."""
    table = EXHIBITS if exhibits is None else exhibits
    modules: list[ModuleType] = [protocol]
    for exhibit in table.values():
        if (exhibit.folder / "events.py").exists():
            modules.append(importlib.import_module(exhibit.events_module))
    return modules


def check_union(exhibits: Mapping[str, Exhibit] | None = None) -> list[str]:
    """:func:`union_problems` of the registry's (or ``exhibits``') events modules."""
    return union_problems(events_modules(exhibits))


def assemble(modules: Sequence[ModuleType]) -> tuple[type[EventBase], ...]:
    """Every listed event of ``modules``, in order; raises :class:`EventUnionError`."""
    problems = union_problems(modules)
    if problems:
        raise EventUnionError("the event union is inconsistent: " + "; ".join(problems))
    return tuple(cls for module in modules for cls in listed_events(module) or ())


EVENT_MODULES: list[ModuleType] = events_modules()
EVENT_CLASSES: tuple[type[EventBase], ...] = assemble(EVENT_MODULES)

# Every wire model of the events modules by class name (``jaxscope.protocol`` resolves the names
# of exhibits' models through this for importers that still import them from there).
MODELS_BY_NAME: dict[str, type[WireModel]] = {
    model.__name__: model for module in EVENT_MODULES for model in _defined_here(module)
}

if TYPE_CHECKING:
    EventModel: TypeAlias = EventBase
    Event: TypeAlias = EventBase
else:
    EventModel = reduce(operator.or_, EVENT_CLASSES)
    # The discriminated union the wire is validated with (the same classes, keyed by ``type``).
    Event = Annotated[EventModel, Field(discriminator="type")]

EVENT_ADAPTER: TypeAdapter[EventBase] = TypeAdapter(Event)


class WireSchema(WireModel):
    """Root of the generated JSON Schema: one field per top-level type the frontend uses."""

    request: Request
    event: Event
    catalogue: Catalogue


def json_schema() -> dict[str, Any]:
    """The JSON Schema that ``frontend/src/gen/protocol.ts`` is generated from."""
    return WireSchema.model_json_schema()


# ``jaxscope.protocol`` resolves the union from here once this is set (see its ``__getattr__``).
ASSEMBLED = True


if __name__ == "__main__":
    print(json.dumps(json_schema(), indent=2, sort_keys=True))
