"""Settings of a jaxscope process: sandbox limits, pool size and where the server binds.

Every field can be overridden by an environment variable ``JAXSCOPE_<FIELD>`` (upper case, e.g.
``JAXSCOPE_WALL_S=20``, ``JAXSCOPE_ADDRESS_SPACE_BYTES=4294967296``, ``JAXSCOPE_MAX_WORKERS=8``)
and by the CLI flags of ``jaxscope serve`` / ``jaxscope run``. Prefer ``JAXSCOPE_TOKEN`` to
``--token``: a command line is readable by every local process. No ``JAXSCOPE_*`` variable reaches
a sandbox worker. This module imports nothing from JAX.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import os
from dataclasses import dataclass, field
from pathlib import Path

from exhibits.registry import EXHIBITS_DIR

GiB = 2**30

# Measured on the 2-core CI machine (see docs/design/0001-sandbox.md): `import jax`, 8 virtual
# CPU devices and a jitted conv peak at ~1.6 GiB of address space (VmPeak); 1.5 GiB fails
# (pthread_create of an XLA thread fails). 3 GiB leaves room for user arrays and compiles.
DEFAULT_ADDRESS_SPACE_BYTES = 3 * GiB

# Present when an NVIDIA driver is loaded (a GPU JAX would make its default backend).
NVIDIA_CONTROL_DEVICE = Path("/dev/nvidiactl")


def default_address_space_bytes(
    nvidia_device: Path = NVIDIA_CONTROL_DEVICE, dev: Path = Path("/dev")
) -> int:
    """3 GiB, or 0 (no ``RLIMIT_AS``) where an accelerator is attached. CUDA reserves far more
    virtual address space than it uses, so an address-space limit breaks GPU initialisation (a
    well-known CUDA constraint; not measured here, this machine has no GPU). libtpu does the
    same: on the lent TPU v5e host (chip ``/dev/vfio/N``) a worker under the 3 GiB limit stalled
    in ``make_tpu_client`` until its 120 s start limit, and started with no limit (design 0056).
    There, host memory is bounded by the machine's or container's limit and device memory by
    XLA's allocator. ``dev``: where to look for TPU nodes (``accel*``, ``vfio/<n>``)."""
    tpu = any(dev.glob("accel*")) or any(p.name.isdigit() for p in dev.glob("vfio/*"))
    return 0 if nvidia_device.exists() or tpu else DEFAULT_ADDRESS_SPACE_BYTES


# What one worker costs, for sizing the pool from the machine: resident memory while it runs a
# snippet (measured ~220 MB warm, up to ~0.7 GB compiling a conv net; counted generously).
WORKER_MEMORY_BYTES = 768 * 2**20
# Memory left to the server, the browser of a local user and the system.
RESERVED_MEMORY_BYTES = 2 * 2**30


def _available_memory_bytes() -> int:
    try:
        with open("/proc/meminfo", "rb") as meminfo:
            for line in meminfo:
                if line.startswith(b"MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 8 * 2**30


def auto_sizes(cores: int | None = None, memory_bytes: int | None = None) -> tuple[int, int]:
    """(warm idle workers, most workers) for a machine with ``cores`` CPUs and ``memory_bytes``
    available (default: this one's, from ``os.sched_getaffinity`` and ``/proc/meminfo``): up to
    4 workers per core (runs are mostly short and users read between them), as many as memory
    holds at :data:`WORKER_MEMORY_BYTES` each, at least 2 and at most 64; one warm spare per
    core, at least 1 and at most 8 (a spare costs a worker start, ~2 CPU s)."""
    if cores is None:
        cores = len(os.sched_getaffinity(0)) or 1
    if memory_bytes is None:
        memory_bytes = _available_memory_bytes()
    by_memory = max(0, memory_bytes - RESERVED_MEMORY_BYTES) // WORKER_MEMORY_BYTES
    most = max(2, min(4 * cores, int(by_memory), 64))
    warm = max(1, min(cores, 8, most))
    return warm, most


@dataclass(frozen=True)
class Limits:
    """Per-run limits of a sandboxed worker.

    ``wall_s``: wall-clock seconds per run (supervisor kills the process group);
    ``cpu_s``: CPU seconds per run (``RLIMIT_CPU`` soft limit, SIGXCPU);
    ``address_space_bytes``: ``RLIMIT_AS`` of the worker in bytes (0 = no limit);
    ``nproc``: ``RLIMIT_NPROC`` (processes+threads of the user; ignored for root, 0 = no limit);
    ``namespaces``: run each worker in its own Linux namespaces through bubblewrap
    (``sandbox/namespaces.py``; False only with ``--unsafe-no-sandbox``);
    ``tmp_bytes``: the size cap of a namespaced worker's private ``/tmp`` (a tmpfs, in memory);
    ``per_eqn_ms``/``ceiling_s``: how a run's wall-clock and CPU limits grow with the size of the
    program it shows (milliseconds per eqn, times the exhibit's budget; the most seconds a
    scaled limit reaches), see :func:`scaled_limit`.
    """

    wall_s: float = 10.0
    cpu_s: float = 10.0
    # 8 (was 4): the transpose exhibit on the jitted GPT stack (2,752 eqns inside its calls)
    # needed 54 s at load 2-3 on 2 cores against 63 s at 4 ms, and ran past it loaded.
    per_eqn_ms: float = 8.0
    ceiling_s: float = 120.0
    address_space_bytes: int = field(default_factory=default_address_space_bytes)
    nproc: int = 4096
    namespaces: bool = True
    tmp_bytes: int = 256 * 2**20


# A run's limits scale with its program only past this many eqns: a snippet keeps the limits it
# always had, and a real model (hundreds to tens of thousands of eqns) gets time in proportion.
SCALE_FROM_EQNS = 200


def scaled_limit(base_s: float, budget: float, eqns: int, limits: Limits) -> float:
    """Seconds a run may take (wall clock or CPU) once it showed a program of ``eqns`` eqns:
    ``base_s × budget`` (the exhibit's limit) plus ``per_eqn_ms`` per eqn times ``budget``, at
    most ``limits.ceiling_s`` but never below the exhibit's limit (``jaxscope run --timeout 300``
    keeps its 300 s). ``budget`` is the exhibit's multiplier (``exhibits.registry.run_budget``)."""
    unscaled = base_s * budget
    if eqns <= SCALE_FROM_EQNS:
        return unscaled
    grown = unscaled + eqns * limits.per_eqn_ms / 1e3 * budget
    return max(unscaled, min(grown, limits.ceiling_s))


# A trace that streams its eqns one by one (the tracing and stations exhibits) and is still going
# after this many is not a program any example here is (the 20,000-eqn unrolled loop of
# examples/real/loop_20k.py is the largest, by half again): once it is also past the run's
# unscaled limit, it is ended as a trace that keeps growing (an unbounded Python loop: ``while
# True: x = x + 1`` adds one eqn per turn) instead of being given time in proportion up to the
# ceiling. On this 2-core machine such a loop streams ~2,000-3,000 eqns/s through the sandbox
# when the machine is quiet and ~700/s when it is loaded: it is ended after ~10-45 s, where the
# scaled limit let it run to the 120 s ceiling (or the 64 MiB cap of one run's events).
TRACE_GROWTH_EQNS = 30_000


def trace_kept_growing(streamed: int, elapsed_s: float, unscaled_s: float) -> bool:
    """Whether a run still in its trace stage, having streamed ``streamed`` eqns in
    ``elapsed_s`` seconds, is to be ended as an endless trace: more eqns than a finite program
    of this size traces (:data:`TRACE_GROWTH_EQNS`) and longer than the exhibit's unscaled
    limit ``unscaled_s`` (``base × budget``: a hand-set ``--timeout 300`` gives it 300 s)."""
    return streamed > TRACE_GROWTH_EQNS and elapsed_s > unscaled_s


# The load stage (the snippet's module body) has a limit of its own: this many times the
# exhibit's unscaled limit. A real model's build runs eagerly, op by op, and compiles each new
# op: the Flax NNX train step of examples/real loads in ~3.5 s on an idle 2-core machine and took
# over 10 s on one at load average 15; nothing tells its size before it is built. 1: a module
# body has the limit a snippet always had, now its own (not charged to the run); 3 let the Flax
# builds through at load 15 but made every endless module body run 3x longer (design 0046).
LOAD_LIMIT_FACTOR = 1.0


def load_limit(unscaled_s: float) -> float:
    """Seconds the load stage may take (:data:`LOAD_LIMIT_FACTOR` × the exhibit's limit)."""
    return unscaled_s * LOAD_LIMIT_FACTOR


def load_credit(load_s: float, unscaled_s: float) -> float:
    """Seconds of the load stage (the snippet's module body: building a Flax model, loading
    weights) that do not count against the run's limit: all of it, up to the load stage's own
    limit (:func:`load_limit` of the exhibit's unscaled limit ``unscaled_s``). A real model's
    build then does not eat the time its trace and compile need, and an endless module body
    still ends, at the load stage's limit."""
    return max(0.0, min(load_s, load_limit(unscaled_s)))


# A run's deadline moves by the time a busy machine made its worker wait for a CPU, once that
# is at least this many seconds (below it, a read of /proc is not worth the move).
MIN_WAIT_CREDIT_S = 0.5


def wait_credit(waited_s: float, credited_s: float, wall_s: float) -> float:
    """Seconds to move a run's deadline when it is reached: the time its worker was runnable
    but waiting for a CPU since the run began (``waited_s``, the kernel's ``run_delay``), less
    what was credited before (``credited_s``), when at least :data:`MIN_WAIT_CREDIT_S`; in all
    at most the run's wall limit ``wall_s`` (a run gets at most twice its limit). On a loaded
    machine a real program's run then ends by its own time, not by the other processes'; a
    worker that sleeps or blocks waits for no CPU and gains nothing."""
    credit = min(max(0.0, waited_s), wall_s) - credited_s
    return credit if credit >= MIN_WAIT_CREDIT_S else 0.0


# Where a wheel carries the built frontend (``make wheel`` copies frontend/dist there).
PACKAGED_DIST = Path(__file__).resolve().parent / "_frontend"


def _default_dist() -> Path:
    """The built frontend: the checkout's ``frontend/dist`` (``npm run build``), or, in an
    installed wheel, the copy it carries (:data:`PACKAGED_DIST`)."""
    checkout = EXHIBITS_DIR.parent / "frontend" / "dist"
    if (checkout / "index.html").exists() or not (PACKAGED_DIST / "index.html").exists():
        return checkout
    return PACKAGED_DIST


@dataclass(frozen=True)
class Settings:
    """Everything ``create_app`` and the CLI need.

    ``workers``: warm idle workers kept by the pool; ``max_workers``: the most workers (leased,
    idle and starting) at once, i.e. runs at once (``JAXSCOPE_MAX_WORKERS``; both default to
    what the machine holds, :func:`auto_sizes`; further runs wait in a queue);
    ``max_workers_per_client``: the most of them one client address holds at once (0: half of
    ``max_workers``, rounded up; ``JAXSCOPE_MAX_WORKERS_PER_CLIENT``, see ``sandbox/tenancy.py``);
    ``token``:
    the access token (required, and generated by the CLI when absent, for a non-loopback
    ``host``); ``check_exhibits``: fail at
    startup when an exhibit folder lacks a part; ``frontend_dist``: the built frontend;
    ``pool_socket``: the Unix socket of a hosted pool (``jaxscope pool``) to relay sessions to
    instead of running workers in this process; ``queue``: the run queue's Redis URL
    (``serve --queue``, ``JAXSCOPE_QUEUE``; design 0065): runs go to the pool hosts on it;
    ``forwarded_allow_ips``: the proxies (comma-separated addresses or networks, ``*`` for any)
    whose ``X-Forwarded-For``/``-Proto`` name the client (``serve --forwarded-allow-ips``;
    design 0065): the per-client share then keys on the forwarded address. None (the default):
    the socket's peer address, whatever the headers say.
    """

    host: str = "127.0.0.1"
    port: int = 8000
    token: str | None = None
    workers: int = field(default_factory=lambda: auto_sizes()[0])
    max_workers: int = field(default_factory=lambda: auto_sizes()[1])
    max_workers_per_client: int = 0
    limits: Limits = field(default_factory=Limits)
    frontend_dist: Path = field(default_factory=_default_dist)
    check_exhibits: bool = True
    pool_socket: Path | None = None
    queue: str | None = None
    forwarded_allow_ips: str | None = None

    @property
    def per_client(self) -> int:
        """The workers one client may hold: ``max_workers_per_client``, or half the pool."""
        if self.max_workers_per_client > 0:
            return min(self.max_workers_per_client, self.max_workers)
        return max(1, -(-self.max_workers // 2))

    @property
    def loopback(self) -> bool:
        """True when ``host`` only accepts connections from this machine."""
        return is_loopback(self.host)


def is_loopback(host: str) -> bool:
    """``localhost`` or a loopback IP (127.0.0.0/8, ::1); ``0.0.0.0``/``::`` are not."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _coerce(raw: str, current: object) -> object:
    if isinstance(current, bool):
        return raw.strip().lower() in ("1", "true", "yes", "on")
    if isinstance(current, int):
        return int(raw)
    if isinstance(current, float):
        return float(raw)
    if isinstance(current, Path):
        return Path(raw)
    return raw


def limits_from_env(base: Limits | None = None, env: dict[str, str] | None = None) -> Limits:
    """``base`` (default :class:`Limits`) with ``JAXSCOPE_WALL_S`` etc. applied."""
    base = base or Limits()
    env = dict(os.environ) if env is None else env
    changes: dict[str, object] = {}
    for f in dataclasses.fields(base):
        raw = env.get(f"JAXSCOPE_{f.name.upper()}")
        if raw is not None:
            changes[f.name] = _coerce(raw, getattr(base, f.name))
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def settings_from_env(env: dict[str, str] | None = None, **overrides: object) -> Settings:
    """:class:`Settings` from ``JAXSCOPE_*`` variables, then ``overrides`` (CLI flags) on top;
    an override whose value is ``None`` is ignored."""
    env = dict(os.environ) if env is None else env
    base = Settings()
    changes: dict[str, object] = {"limits": limits_from_env(env=env)}
    for f in dataclasses.fields(base):
        if f.name == "limits":
            continue
        raw = env.get(f"JAXSCOPE_{f.name.upper()}")
        if raw is not None:
            current = getattr(base, f.name)
            if f.name == "pool_socket":
                changes[f.name] = Path(raw) if raw else None
            else:
                changes[f.name] = raw if current is None else _coerce(raw, current)
    changes.update({k: v for k, v in overrides.items() if v is not None})
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]
