"""A fair share of the pool's workers per client.

A worker serves one run (``session.py``), so sessions hold workers only while they run. Without
a cap, a client that opens ``max_workers`` websockets and keeps them running would hold every
worker while everyone else waits. :class:`Tenancy` is shared by the sessions of one pool: a
client (``owner``: the websocket's client address) may hold at most ``per_owner`` workers at
once. A run of a client at its share keeps its place in the pool's first-come queue and lets the
runs of other clients by (``pool.acquire``'s ``eligible``); the page is told why it waits
(``run_queued`` with reason ``client_share``). Behind a reverse proxy every client has the
proxy's address: raise ``JAXSCOPE_MAX_WORKERS_PER_CLIENT`` there.

The share applies to a pool beside the main one too (the torch workers, two at most:
``WorkerPool.for_exhibit``), with that pool's own stricter share (``WorkerPool.client_share``,
half of it): one client cannot hold both torch workers while another client waits (design 0057).
"""

from __future__ import annotations

import weakref
from typing import Protocol

from jaxscope.protocol import WorkerKind


class Tenant(Protocol):
    """What :class:`Tenancy` reads of a session (``jaxscope.sandbox.session.Session``)."""

    owner: str | None

    def holds_worker(self) -> bool:
        """Whether the session holds a live worker (it is running)."""
        ...

    def held_kind(self) -> WorkerKind | None:
        """The kind of the live worker the session holds, or None."""
        ...


class Tenancy:
    """The sessions of one pool; ``per_owner`` workers at most per client (``None``: no cap)."""

    def __init__(self, per_owner: int | None) -> None:
        if per_owner is not None and per_owner < 1:
            raise ValueError(f"per_owner must be at least 1, not {per_owner}")
        self.per_owner = per_owner
        self._tenants: weakref.WeakSet[Tenant] = weakref.WeakSet()

    def join(self, tenant: Tenant) -> None:
        self._tenants.add(tenant)

    def leave(self, tenant: Tenant) -> None:
        self._tenants.discard(tenant)

    def holding(self, owner: str | None) -> list[Tenant]:
        """The sessions of ``owner`` that hold a live worker."""
        return [t for t in self._tenants if t.owner == owner and t.holds_worker()]

    def over_cap(
        self, tenant: Tenant, kind: WorkerKind | None = None, kind_share: int | None = None
    ) -> bool:
        """Whether ``tenant``'s client already holds its share of workers (``tenant`` itself
        holds none: it is about to lease one): ``per_owner`` in all, and, for a worker of a pool
        with a share of its own (``kind``, ``kind_share``), that many workers of ``kind``."""
        if self.per_owner is None or tenant.owner is None:
            return False
        holding = self.holding(tenant.owner)
        if len(holding) >= self.per_owner:
            return True
        if kind is None or kind_share is None:
            return False
        return sum(t.held_kind() == kind for t in holding) >= kind_share
