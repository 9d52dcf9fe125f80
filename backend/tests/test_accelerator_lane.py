"""The accelerator as a single-holder resource (design 0069), checked on a CPU machine.

The host's accelerator is faked (``JAXSCOPE_ACCELERATOR=tpu``, or a fake ``/dev`` for the
detection itself): routing, the environments, the pool's single holder and its warm spare, and
the fallback of a mesh larger than the accelerator to the 8 CPU devices run real workers; on
this host the "accelerator" worker opens the CPU. What the real chip showed is in
``recordings/tpu-v5e/`` (``lane.json``, and the two fallback streams that
``test_accelerator_recordings.py`` replays)."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

import jax
import pytest
from jaxscope.protocol import (
    EventModel,
    RunFailed,
    RunFinished,
    RunQueued,
    RunRequest,
    RunStarted,
    StageStarted,
)
from jaxscope.sandbox import accelerators
from jaxscope.sandbox import worker as worker_module
from jaxscope.sandbox.kinds import worker_kind
from jaxscope.sandbox.pool import WorkerPool
from jaxscope.sandbox.session import HeldPreamble, Session, reap_all
from jaxscope.sandbox.worker import worker_env
from jaxscope.settings import Limits

from exhibits.registry import EXHIBITS
from testkit import run_async

NOTE = (
    "this program needs more devices than the TPU has (1 on this host): it ran on the 8 "
    "virtual CPU devices beside it"
)


@pytest.fixture
def tpu_host(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(accelerators.ACCELERATOR_ENV, "tpu")


def test_attached_reads_the_device_nodes(tmp_path: Path) -> None:
    dev = tmp_path / "dev"
    dev.mkdir()
    assert accelerators.attached(dev, env={}) is None
    (dev / "vfio").mkdir()
    (dev / "vfio" / "vfio").touch()  # the VFIO control node alone is no chip
    assert accelerators.attached(dev, env={}) is None
    (dev / "vfio" / "2").touch()  # the lent v5e host's chip
    assert accelerators.attached(dev, env={}) == "tpu"
    assert accelerators.attached(dev, env={accelerators.ACCELERATOR_ENV: "none"}) is None
    other = tmp_path / "gpu"
    other.mkdir()
    (other / "nvidiactl").touch()
    assert accelerators.attached(other, env={}) == "cuda"
    assert accelerators.attached(other, env={accelerators.ACCELERATOR_ENV: "tpu"}) == "tpu"


def test_routing(tpu_host: None, monkeypatch: pytest.MonkeyPatch) -> None:
    assert worker_kind("stations") == "accelerator"
    assert worker_kind("stations", device="accelerator") == "accelerator"
    assert worker_kind("stations", device="cpu") == "jax"
    torch = next(i for i, e in EXHIBITS.items() if e.worker == "torch")
    assert worker_kind(torch) == "torch"  # other kinds never go to the chip
    monkeypatch.setenv(accelerators.ACCELERATOR_ENV, "none")
    assert worker_kind("stations") == "jax"
    assert worker_kind("stations", device="accelerator") == "jax"  # nothing to go to


def test_only_the_accelerator_worker_may_open_the_chip(
    tpu_host: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = {"PATH": "/bin", "TPU_ACCELERATOR_TYPE": "v5litepod-1", "XLA_FLAGS": ""}
    assert worker_env(base, kind="jax")["JAX_PLATFORMS"] == "cpu"
    assert worker_env(base, kind="tf")["JAX_PLATFORMS"] == "cpu"
    chip = worker_env(base, kind="accelerator")
    assert "JAX_PLATFORMS" not in chip
    assert chip["TPU_ACCELERATOR_TYPE"] == "v5litepod-1"
    # the 8 CPU devices stay beside the chip, for a mesh larger than it
    assert worker_module.DEVICE_COUNT_FLAG in chip["XLA_FLAGS"]
    monkeypatch.setenv(accelerators.ACCELERATOR_ENV, "none")
    assert "JAX_PLATFORMS" not in worker_env(base, kind="jax")


def test_needs_more_devices_reads_jaxs_own_refusal() -> None:
    cpus = jax.devices("cpu")
    with pytest.raises(ValueError) as one:
        jax.make_mesh((2, 4), ("x", "y"), devices=cpus[:1])
    assert accelerators.needs_more_devices(str(one.value), 8)
    with pytest.raises(ValueError) as too_many:
        jax.make_mesh((4, 4), ("x", "y"), devices=cpus[:1])
    assert not accelerators.needs_more_devices(str(too_many.value), 8)  # more than the CPUs
    assert not accelerators.needs_more_devices("Number of devices must be positive", 8)


def _started(backend: str, devices: list[str]) -> RunStarted:
    return RunStarted(
        run_id="r",
        seq=0,
        exhibit="sharding",
        jax_version=jax.__version__,
        backend=backend,
        devices=devices,
        cpu_device_count=8,
    )


def test_held_preamble(tpu_host: None) -> None:
    async def go() -> None:
        out: list[EventModel] = []

        async def emit(event: EventModel) -> None:
            out.append(event)

        held = HeldPreamble(emit)
        queued = RunQueued(run_id="r", position=1, waiting=1, reason="worker_starting")
        await held.emit(queued)
        await held.emit(_started("tpu", ["TPU_0(process=0,(0,0,0,0))"]))
        await held.emit(StageStarted(run_id="r", seq=1, stage="load"))
        message = "Number of devices 1 must be >= the product of mesh_shape (2, 4)"
        await held.emit(RunFailed(run_id="r", seq=2, kind="user_exception", message=message))
        assert out == [queued] and held.fallback == NOTE

        out.clear()
        held = HeldPreamble(emit)
        events: list[EventModel] = [
            _started("tpu", ["TPU_0(process=0,(0,0,0,0))"]),
            StageStarted(run_id="r", seq=1, stage="load"),
            RunFailed(run_id="r", seq=2, kind="user_exception", message="NameError: x"),
        ]
        for event in events:
            await held.emit(event)
        assert out == events and held.fallback is None

    run_async(go())


def _accelerator_workers() -> int:
    """Processes alive whose command line runs an "accelerator" worker (/proc, independent of
    the pool's books)."""
    count = 0
    for entry in Path("/proc").iterdir():
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"--kind" in argv and b"accelerator" in argv[argv.index(b"--kind") + 1 :][:1]:
            count += 1
    return count


def _code(exhibit: str) -> str:
    spec = EXHIBITS[exhibit]
    return spec.picker_paths()[spec.default_example].read_text()


async def _run(
    session: Session, exhibit: str, run_id: str, hold_s: float = 0.0
) -> list[EventModel]:
    """The exhibit's default example run in ``session``; ``hold_s``: seconds its module body
    sleeps first (the run holds its worker that long)."""
    events: list[EventModel] = []

    async def emit(event: EventModel) -> None:
        events.append(event)

    code = (f"import time\ntime.sleep({hold_s})\n" if hold_s else "") + _code(exhibit)
    await session.run(RunRequest(run_id=run_id, exhibit=exhibit, code=code), emit)
    return events


LIMITS = dataclasses.replace(Limits(), namespaces=False)


# Never beside a fork bomb (hostile/test_resources.py, the same xdist group): the sampler below
# reads /proc/*/cmdline every 50 ms, and the bomb's ~4,000 processes made this test 33 s (4 s).
@pytest.mark.xdist_group("fork_bomb")
def test_one_holder_a_warm_spare_and_the_wait_told(tpu_host: None) -> None:
    """A pool with a warm spare: the accelerator pool (started with the main pool) holds one
    worker at most; it is ready before the first run; two runs at once are served one after the
    other, the second told it waits for the accelerator; a fresh spare follows each run."""

    async def go() -> None:
        pool = WorkerPool(LIMITS, size=1)
        pool.start()
        # the server's pool starts the chip's spare with its own, before any run asks
        assert [p.kind for p in pool._others.values()] == ["accelerator"]
        chip = pool.for_exhibit("tracing")
        assert chip is next(iter(pool._others.values()))
        assert (chip.kind, chip.max_workers) == ("accelerator", 1)
        holders: list[int] = []

        async def sample() -> None:
            while True:
                holders.append(_accelerator_workers())
                await asyncio.sleep(0.05)

        sampler = asyncio.ensure_future(sample())
        try:
            while chip.state()["idle"] < 1:
                await asyncio.sleep(0.05)
            spare = next(iter(chip._idle))
            assert not isinstance(spare, BaseException)
            environ = Path(f"/proc/{spare.pid}/environ").read_bytes().split(b"\0")
            assert not any(e.startswith(b"JAX_PLATFORMS=") for e in environ)
            a = Session(pool, EXHIBITS, report_starts=True)
            b = Session(pool, EXHIBITS, report_starts=True)
            # Each run holds the chip 1 s: the other waits past the queue's first report
            # (QUEUE_REPORT_S), however fast a worker starts and a small run ends.
            first, second = await asyncio.gather(
                _run(a, "tracing", "a", hold_s=1.0), _run(b, "tracing", "b", hold_s=1.0)
            )
            for events in (first, second):
                assert isinstance(events[-1], RunFinished)
            queued = [e for e in first + second if isinstance(e, RunQueued)]
            assert queued and {e.worker_kind for e in queued} == {"accelerator"}
            assert {e.reason for e in queued} <= {"pool_full", "worker_starting"}
            while chip.state()["idle"] < 1:  # the next spare
                await asyncio.sleep(0.05)
            assert chip.spawned == 3
            for session in (a, b):
                await session.close()
        finally:
            sampler.cancel()
            await pool.close()
            await reap_all()
        assert max(holders) == 1

    run_async(go())


def test_a_mesh_larger_than_the_accelerator_runs_on_the_cpu_devices(
    tpu_host: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fake accelerator worker is given one device (as the lent v5e host's chip): sharding's
    (2, 4) mesh fails there and the run goes to a CPU worker's 8 devices, with one run_started
    that says so and nothing of the failed try."""
    real = worker_module.worker_env

    def one_device(*args: object, **kwargs: object) -> dict[str, str]:
        env = real(*args, **kwargs)  # type: ignore[arg-type]
        if kwargs.get("kind") == "accelerator":
            env["XLA_FLAGS"] = "--xla_force_host_platform_device_count=1"
        return env

    monkeypatch.setattr(worker_module, "worker_env", one_device)

    async def go() -> list[EventModel]:
        pool = WorkerPool(LIMITS, size=0)
        session = Session(pool, EXHIBITS)
        try:
            return await _run(session, "sharding", "s")
        finally:
            await session.close()
            await pool.close()
            await reap_all()

    events = run_async(go())
    started = [e for e in events if isinstance(e, RunStarted)]
    assert len(started) == 1 and started[0].device_note is not None
    assert started[0].device_note.startswith("this program needs more devices than the TPU has")
    assert started[0].devices == [f"cpu:{i}" for i in range(8)]
    assert isinstance(events[-1], RunFinished)
    assert [e.seq for e in events if e.seq] == list(range(1, len(events)))
