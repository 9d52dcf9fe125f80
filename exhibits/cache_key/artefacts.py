"""The cache_key exhibit's ``--print`` table: ``key`` (the persistent cache key exactly as JAX
writes it) and ``digests`` (JSON ingredient name -> hex digest). Imports only the protocol."""

from __future__ import annotations

import json
from collections.abc import Sequence

from jaxscope.exhibit_api import EventBase

from exhibits.cache_key.events import CacheKeyComputed


def _first(events: Sequence[EventBase]) -> CacheKeyComputed | None:
    found = [e for e in events if isinstance(e, CacheKeyComputed)]
    return found[0] if found else None


def _key(events: Sequence[EventBase]) -> str | None:
    e = _first(events)
    return e.jax_key if e else None


def _digests(events: Sequence[EventBase]) -> str | None:
    e = _first(events)
    return json.dumps({i.name: i.digest for i in e.ingredients}) if e else None


ARTEFACTS = {"key": _key, "digests": _digests}
