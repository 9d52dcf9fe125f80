"""The torch workers, bounded together and shared between clients (issue 31, item 3; design
0057). A torch run was measured at 3.8 GB resident, and one client could hold both workers of
the torch pool (``OTHER_KIND_MAX_WORKERS``) while another client's run waited: the client's
share (``tenancy.py``) counted all its workers against half the main pool, never the torch
pool's two. Now a pool beside the main one has a share of its own (half of it), and the
workers of a kind, in all the pools of it together, stay within the memory budget at
``KIND_MEMORY_BYTES`` each. No worker is started here."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import pytest
from jaxscope.protocol import WorkerKind
from jaxscope.sandbox import pool as pool_module
from jaxscope.sandbox.pool import KIND_MEMORY_BYTES, OTHER_KIND_MAX_WORKERS, WorkerPool
from jaxscope.sandbox.tenancy import Tenancy
from jaxscope.settings import RESERVED_MEMORY_BYTES, Limits

from exhibits.registry import EXHIBITS

GIB = 2**30


@dataclass(eq=False)
class Tenant:
    owner: str | None
    kind: WorkerKind | None = None  # the kind of the worker it holds; None: it holds none

    def holds_worker(self) -> bool:
        return self.kind is not None

    def held_kind(self) -> WorkerKind | None:
        return self.kind


def test_a_client_holding_one_torch_worker_waits_for_the_second() -> None:
    main = WorkerPool(Limits(), size=0, max_workers=8, memory_budget_bytes=64 * GIB)
    torch = main.for_exhibit("lazy_tensor")
    assert torch.kind == "torch" and torch.max_workers == OTHER_KIND_MAX_WORKERS == 2
    assert main.client_share is None and torch.client_share == 1
    tenancy = Tenancy(per_owner=4)  # half the main pool of 8: the share alone allowed both
    a1, b1 = Tenant("a", "torch"), Tenant("b")
    a2, b2 = Tenant("a"), Tenant("b")
    for t in (a1, a2, b1, b2):
        tenancy.join(t)
    assert tenancy.over_cap(a2, torch.kind, torch.client_share)  # a holds its torch share
    assert not tenancy.over_cap(b2, torch.kind, torch.client_share)  # b's run goes first
    assert not tenancy.over_cap(a2, main.kind, main.client_share)  # a JAX run still may
    a1.kind = None  # a's torch run ended
    assert not tenancy.over_cap(a2, torch.kind, torch.client_share)


def test_torch_workers_together_stay_within_the_memory_budget(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a TPU host: no RLIMIT_AS at all (Limits.address_space_bytes 0), so only the budget bounds
    # the torch workers' memory
    main = WorkerPool(Limits(address_space_bytes=0), size=0, memory_budget_bytes=6 * GIB)
    assert main.kind_cap("torch") == 6 * GIB // KIND_MEMORY_BYTES["torch"] == 1
    torch = main.for_exhibit("lazy_tensor")
    assert torch.max_workers == 1 and torch.client_share == 1
    # Two torch pools (exhibits with limits of their own): one worker of the kind in all.
    with_rlimit = WorkerPool(Limits(), size=0, memory_budget_bytes=9 * GIB)
    other = dataclasses.replace(EXHIBITS["seam"], address_space_bytes=7 * GIB)
    monkeypatch.setitem(EXHIBITS, "seam", other)
    first, second = with_rlimit.for_exhibit("lazy_tensor"), with_rlimit.for_exhibit("seam")
    assert first is not second and first.kind == second.kind == "torch"
    assert first._room_to_start() and second._room_to_start()

    @dataclass(eq=False)
    class Alive:
        alive: bool = True

    first._leased.add(Alive())  # type: ignore[arg-type]  # a leased torch worker
    assert first._room_to_start()  # 2 torch workers fit 9 GiB at 4 GiB each
    second._leased.add(Alive())  # type: ignore[arg-type]
    assert not first._room_to_start() and not second._room_to_start()
    # at least one may always start, however small the budget
    assert WorkerPool(Limits(), size=0, memory_budget_bytes=0).kind_cap("torch") == 1


def test_the_budget_defaults_to_the_available_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pool_module, "_available_memory_bytes", lambda: 12 * GIB)
    main = WorkerPool(Limits(), size=0)
    assert main.kind_cap("torch") == (12 * GIB - RESERVED_MEMORY_BYTES) // (4 * GIB)
