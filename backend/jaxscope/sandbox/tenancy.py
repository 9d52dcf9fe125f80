"""Who holds the pool's workers: a fair share per client, and idle sessions give theirs back.

Each session keeps its worker between runs (``session.py``), so without this a client that opens
``max_workers`` sessions (websockets) and keeps them busy, or just open, holds every worker and
everyone else's runs wait until they fail with "all N sandbox workers are busy". :class:`Tenancy`
is shared by the sessions of one pool and applies two rules when a session needs a worker:

- **Per client** (``owner``: the websocket's client address): a client may hold at most
  ``per_owner`` workers. At the cap, its own idle session used least recently gives its worker
  up; while all of its sessions are running, the new run waits for one to end (up to its wall
  clock), then fails with a message saying why.
- **Pool full**: while a run waits for a worker and every worker is leased, the session (of any
  client) idle the longest gives its worker up, so open but idle tabs never lock others out; a
  session waiting in the pool counts toward its client's share.

A session that gave its worker up gets a fresh one on its next run, as after a worker crash
(``Session._lease``); nothing a user sees depends on keeping a worker between runs.
"""

from __future__ import annotations

import time
import weakref
from typing import Protocol


class Tenant(Protocol):
    """What :class:`Tenancy` reads of a session (``jaxscope.sandbox.session.Session``)."""

    owner: str | None
    last_used: float

    def holds_worker(self) -> bool:
        """Whether the session holds a live worker."""
        ...

    def claims_worker(self) -> bool:
        """Whether the session holds a live worker or is waiting in the pool for one."""
        ...

    def running(self) -> bool:
        """Whether a run of the session is in progress (its worker busy)."""
        ...

    def give_up_worker(self) -> None:
        """Kill the session's worker (it is idle); the next run leases a new one."""
        ...


class Tenancy:
    """The sessions of one pool; ``per_owner`` workers at most per client (``None``: no cap)."""

    def __init__(self, per_owner: int | None) -> None:
        if per_owner is not None and per_owner < 1:
            raise ValueError(f"per_owner must be at least 1, not {per_owner}")
        self.per_owner = per_owner
        self._tenants: weakref.WeakSet[Tenant] = weakref.WeakSet()
        self.evicted = 0

    def join(self, tenant: Tenant) -> None:
        self._tenants.add(tenant)

    def leave(self, tenant: Tenant) -> None:
        self._tenants.discard(tenant)

    def holding(self, owner: str | None) -> list[Tenant]:
        """The sessions of ``owner`` that hold a live worker or wait in the pool for one."""
        return [t for t in self._tenants if t.owner == owner and t.claims_worker()]

    def over_cap(self, tenant: Tenant) -> bool:
        """Whether ``tenant``'s client already holds its share of workers (``tenant`` itself
        holds none: it is about to lease one)."""
        if self.per_owner is None or tenant.owner is None:
            return False
        return len(self.holding(tenant.owner)) >= self.per_owner

    def evict_idle(self, owner: str | None = None, *, any_owner: bool = False) -> bool:
        """Make the idle session used least recently (of ``owner``, or of any client with
        ``any_owner``) give its worker up. Returns whether one did."""
        idle = [
            t
            for t in self._tenants
            if t.holds_worker() and not t.running() and (any_owner or t.owner == owner)
        ]
        if not idle:
            return False
        victim = min(idle, key=lambda t: t.last_used)
        victim.give_up_worker()
        self.evicted += 1
        return True

    def busy_message(self, tenant: Tenant) -> str:
        """Why a run of ``tenant`` could not get a worker while its client was at its cap."""
        return (
            f"this client already has {self.per_owner} runs in progress, the most one client may "
            "run at once; wait for one to end (or close a tab) and try again"
        )


def now() -> float:
    """The clock ``last_used`` is read on (monotonic seconds)."""
    return time.monotonic()
