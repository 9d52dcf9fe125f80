"""The base of every model on the wire, alone, so that anything may import it without a cycle.

:mod:`jaxscope.protocol` composes ``RunOptions`` from the options model of each exhibit
(``exhibits/<id>/options.py``) while it is defined, and every exhibit's ``events.py`` imports
:mod:`jaxscope.protocol`: an exhibit's ``options.py`` therefore imports its base from here, not
from :mod:`jaxscope.protocol` (which re-exports it). Imports pydantic only, never JAX: the server
and the CLI import the protocol, and so this, without paying for JAX.
"""

from __future__ import annotations

from typing import TypeVar

from pydantic import BaseModel, ConfigDict


class WireModel(BaseModel):
    """The base of every model on the wire: unknown fields are an error."""

    model_config = ConfigDict(extra="forbid", frozen=False)


WireModelT = TypeVar("WireModelT", bound=WireModel)
