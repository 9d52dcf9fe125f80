"""The torch worker kind (design 0025): its limits, environment and interpreter, and real torch
workers in the sandbox (skipped, with the reason, where the torch venv is not installed; `make
test` installs it, so CI runs them)."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest
from jaxscope.protocol import RunRequest
from jaxscope.sandbox import kinds
from jaxscope.sandbox.session import request_problem
from jaxscope.sandbox.worker import WorkerProcess, WorkerStartError, worker_env
from jaxscope.settings import GiB, Limits

from exhibits.registry import EXHIBITS, Exhibit
from testkit import run_async

TORCH_PROBLEM = kinds.kind_problem("torch")
needs_torch = pytest.mark.skipif(TORCH_PROBLEM is not None, reason=str(TORCH_PROBLEM))


def test_exhibit_limits_replace_only_the_address_space(monkeypatch: pytest.MonkeyPatch) -> None:
    own = Exhibit(
        id="torch_probe_x",
        title="t",
        summary="s",
        default_example="e",
        worker="torch",
        address_space_bytes=8 * GiB,
    )
    monkeypatch.setitem(EXHIBITS, own.id, own)
    base = Limits(address_space_bytes=3 * GiB, wall_s=7.0, cpu_s=9.0, nproc=99)
    limits = kinds.exhibit_limits(own.id, base)
    assert limits == dataclasses.replace(base, address_space_bytes=8 * GiB)
    # No limit at all (a GPU host, --memory-gib 0) stays no limit.
    unlimited = dataclasses.replace(base, address_space_bytes=0)
    assert kinds.exhibit_limits(own.id, unlimited) == unlimited
    # A JAX exhibit keeps the sandbox's limits.
    assert kinds.exhibit_limits("tracing", base) is base


def test_torch_env_sets_pjrt_and_no_jax_device_flag() -> None:
    env = worker_env(
        {"PATH": "/bin", "XLA_FLAGS": "--xla_dump_to=/x", "SECRET_TOKEN": "s"}, kind="torch"
    )
    assert env["PJRT_DEVICE"] == "CPU"
    assert env["XLA_FLAGS"] == "--xla_dump_to=/x"  # kept, and no device-count flag added
    assert "SECRET_TOKEN" not in env
    assert env["USER"] == env["LOGNAME"] == "jaxscope-worker"
    # No PYTHONPATH: the command imports jaxscope and exhibits by name (test_hosted_image.py).
    assert "PYTHONPATH" not in env
    jax_env = worker_env({"PATH": "/bin"})
    assert "PJRT_DEVICE" not in jax_env and "device_count=8" in jax_env["XLA_FLAGS"]


def test_missing_torch_venv_is_refused_before_any_worker(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    own = Exhibit(id="torch_probe_y", title="t", summary="s", default_example="e", worker="torch")
    monkeypatch.setitem(EXHIBITS, own.id, own)
    monkeypatch.setenv(kinds.TORCH_PYTHON_ENV, str(tmp_path / "nowhere" / "bin" / "python"))
    problem = request_problem(RunRequest(run_id="r1", exhibit=own.id, code=""), [own.id])
    assert problem is not None and "make torch" in problem and "nowhere" in problem
    with pytest.raises(WorkerStartError, match="not installed"):
        run_async(WorkerProcess.spawn(Limits(), "torch"))


@needs_torch
def test_torch_worker_starts_in_the_sandbox_only_with_its_own_address_space() -> None:
    async def spawn(limit: int) -> WorkerProcess:
        return await WorkerProcess.spawn(Limits(address_space_bytes=limit), "torch")

    async def main() -> None:
        worker = await spawn(8 * GiB)
        try:
            assert worker.info["torch_xla_version"] == "2.9.0"
            assert worker.info["jax_version"] == ""
            assert worker.info["backend"] == "CPU"
            assert worker.kind == "torch"
            assert int(str(worker.info["uid"])) != 0 or not worker.limits.namespaces
        finally:
            worker.kill()
            await worker.wait_closed()
        # The JAX workers' 3 GiB does not hold `import torch` (reference: VmPeak 5-6 GB).
        with pytest.raises(WorkerStartError, match="failed to map segment"):
            await spawn(3 * GiB)

    run_async(main())


def test_which_torch_workers_are_forked(monkeypatch: pytest.MonkeyPatch) -> None:
    """A torch worker forks from its template (design 0053) unless templates are off, its
    address space is below what the template has mapped, or nothing is forked here at all."""
    from jaxscope.sandbox import forked

    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(forked, "_template_paths", lambda kind: ("/usr", "/work/.venv-torch"))
    torch_limits = Limits(address_space_bytes=8 * GiB)
    assert forked.zygote_problem("torch", torch_limits) is None
    assert forked.zygote_problem("torch", Limits(address_space_bytes=0)) is None
    small = forked.zygote_problem("torch", Limits(address_space_bytes=3 * GiB))
    assert small is not None and "address space" in small
    assert forked.zygote_problem("tf", torch_limits) is not None
    no_ns = forked.zygote_problem("torch", dataclasses.replace(torch_limits, namespaces=False))
    assert no_ns is not None
    monkeypatch.setenv(forked.ENV_SWITCH, "0")
    assert forked.zygote_problem("torch", torch_limits) == f"{forked.ENV_SWITCH}=0"
    monkeypatch.delenv(forked.ENV_SWITCH)
    monkeypatch.setattr(forked, "_template_paths", lambda kind: ("/tmp/venv-torch",))
    under_tmp = forked.zygote_problem("torch", torch_limits)
    assert under_tmp is not None and "/tmp" in under_tmp
