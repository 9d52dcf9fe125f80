"""``RunOptions``, composed from the registry: one base per exhibit whose entry names an options
model (``Exhibit.options``, the class of that name in ``exhibits/<id>/options.py``), in the
registry's order, as :mod:`jaxscope.events` composes the event union (design 0059).

Each exhibit with controls owns its options (fields, limits, descriptions, ``x-exhibits``);
the core names none of them. :mod:`jaxscope.protocol` re-exports :data:`RunOptions` (the
requests carry it), so this module must load before the protocol is defined: it imports the
registry, which imports nothing of jaxscope while it loads, and the options modules, which
import only pydantic and :mod:`jaxscope.wire` (``WireModel`` through ``jaxscope.exhibit_api``,
lazily). No JAX.

Statically (for mypy) ``RunOptions`` is a :class:`~jaxscope.wire.WireModel` with no fields of
its own: code that reads an option reads it through its exhibit's model,
``options_as(ctx.options, VmapOptions).in_axes`` (``jaxscope.exhibit_api``), which is typed
and checks that the model is one of the bases.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from exhibits.registry import EXHIBITS, Exhibit
from jaxscope.wire import WireModel

ModelT = TypeVar("ModelT", bound=WireModel)

_DOC = """Per-run options: the controls of the exhibits that rerun with a change, composed of each
    exhibit's options model (``exhibits/<id>/options.py``). Each field's description and its
    ``x-exhibits`` name the exhibits that read it. An option given as a Python expression
    (``in_axes``, ``mesh``...) is evaluated inside the sandbox, never in the server."""


class OptionsRegistryError(RuntimeError):
    """An entry names an options model its ``options.py`` lacks, or a registered exhibit's
    folder has an ``options.py`` its entry names no model of: the composed ``RunOptions``
    would lack controls the exhibit's probe reads (raised when the protocol is imported)."""


def options_models(exhibits: Mapping[str, Exhibit]) -> list[type[WireModel]]:
    """The options model of every entry of ``exhibits`` that names one, in its order; raises
    :class:`OptionsRegistryError`."""
    models: list[type[WireModel]] = []
    problems: list[str] = []
    for exhibit in exhibits.values():
        if exhibit.options is None:
            if (exhibit.folder / "options.py").exists():
                problems.append(
                    f"exhibits/{exhibit.id}/options.py exists but the registry entry of "
                    f"{exhibit.id} names no options model (options=...)"
                )
            continue
        module = importlib.import_module(exhibit.options_module)
        model = getattr(module, exhibit.options, None)
        if not (isinstance(model, type) and issubclass(model, WireModel)):
            problems.append(
                f"{exhibit.id}: options={exhibit.options!r} is not a WireModel of "
                f"{exhibit.options_module}"
            )
            continue
        models.append(model)
    if problems:
        raise OptionsRegistryError("the options registry is inconsistent: " + "; ".join(problems))
    return models


def compose(exhibits: Mapping[str, Exhibit]) -> type[WireModel]:
    """The ``RunOptions`` model of ``exhibits``: a subclass of each of their options models
    (:func:`options_models`), with no field of its own. Pydantic collects the fields of the
    last base first; nothing reads that order but ``jaxscope run --help``."""
    bases = tuple(options_models(exhibits)) or (WireModel,)
    namespace = {"__doc__": _DOC, "__module__": __name__, "__qualname__": "RunOptions"}
    return type("RunOptions", bases, namespace)


if TYPE_CHECKING:

    class RunOptions(WireModel):
        """Per-run options (statically: their fields are read through each exhibit's model,
        :func:`options_as`; any option may be given by name, the composed model checks it)."""

        def __init__(self, **data: Any) -> None: ...

else:
    RunOptions = compose(EXHIBITS)


def options_as(options: RunOptions, model: type[ModelT]) -> ModelT:
    """``options`` (a run's ``RunOptions``) as the exhibit options model ``model``, one of its
    bases: a probe's typed view of the controls it reads. Raises ``TypeError`` when ``model``
    is not one of them (its exhibit's entry names no options model)."""
    if not isinstance(options, model):
        raise TypeError(
            f"{model.__name__} is not a base of RunOptions: name it in its exhibit's registry "
            "entry (options=...)"
        )
    return options
