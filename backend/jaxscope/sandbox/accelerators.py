"""What an accelerator's runtime needs inside a sandbox worker: its settings in the environment
and its device nodes in the worker's ``/dev`` (design 0056).

A worker's environment is an allowlist (``worker.worker_env``) and its ``/dev`` is bubblewrap's
minimal one (``namespaces.bwrap_argv``). Each platform below names what its runtime reads from
the environment and which device nodes it opens; nothing else of the host is added. Where the
names come from:

- **TPU** (libtpu, loaded by jaxlib's TPU backend). ``TPU_*``: the topology and the process's
  place in it, which libtpu reads at start and aborts without
  (``learning/.../runtime/env_var_utils.cc:53`` in a worker that had none): a v5e host sets
  ``TPU_ACCELERATOR_TYPE``, ``TPU_TOPOLOGY``, ``TPU_CHIPS_PER_HOST_BOUNDS``, ``TPU_HOST_BOUNDS``,
  ``TPU_WORKER_HOSTNAMES``, ``TPU_SKIP_MDS_QUERY`` (``shared/reference/tpu-offline-compile.md``);
  JAX's ``_src/cloud_tpu_init.py`` reads ``TPU_LIBRARY_PATH`` and sets ``TPU_ML_PLATFORM*``,
  ``LIBTPU_INIT_ARGS`` (libtpu's own flags) and ``TPU_SKIP_MDS_QUERY``;
  ``_src/clusters/cloud_tpu_cluster.py`` reads ``TPU_WORKER_ID``, ``TPU_WORKER_HOSTNAMES``,
  ``TPU_PROCESS_ADDRESSES``, ``TPU_SKIP_MDS_QUERY`` and the multi-slice ``MEGASCALE_*``
  (``MEGASCALE_COORDINATOR_ADDRESS``, ``MEGASCALE_NUM_SLICES``, ``MEGASCALE_SLICE_ID``);
  ``_src/test_multiprocess.py`` splits a host's chips between processes with
  ``TPU_VISIBLE_CHIPS``, ``TPU_PROCESS_BOUNDS``, ``TPU_CHIPS_PER_PROCESS_BOUNDS``,
  ``TPU_PROCESS_PORT``, ``CLOUD_TPU_TASK_ID`` and ``ALLOW_MULTIPLE_LIBTPU_LOAD``. Device nodes:
  ``/dev/accel*`` (TPU v2-v4) and ``/dev/vfio`` (v5e and later: ``/dev/vfio/vfio`` and one
  ``/dev/vfio/N`` per chip).
- **CUDA** (NVIDIA's driver and runtime, jaxlib's CUDA plugin). The CUDA programming guide's
  environment variables appendix: ``CUDA_VISIBLE_DEVICES``, ``CUDA_DEVICE_ORDER``,
  ``CUDA_MANAGED_FORCE_DEVICE_ALLOC``, the JIT cache (``CUDA_CACHE_DISABLE``,
  ``CUDA_CACHE_PATH``, ``CUDA_CACHE_MAXSIZE``), ``CUDA_FORCE_PTX_JIT``,
  ``CUDA_DISABLE_PTX_JIT``, ``CUDA_MODULE_LOADING``, ``CUDA_LAUNCH_BLOCKING``,
  ``CUDA_DEVICE_MAX_CONNECTIONS``; JAX's ``_src/lib/__init__.py`` reads ``CUDA_ROOT`` (where
  ``ptxas`` and libdevice are); the container runtime's ``NVIDIA_*`` (``NVIDIA_VISIBLE_DEVICES``,
  ``NVIDIA_DRIVER_CAPABILITIES``...). Device nodes: ``/dev/nvidia*`` (``nvidia0``...,
  ``nvidiactl``, ``nvidia-uvm``, ``nvidia-caps``; JAX's ``_src/hardware_utils.py`` looks for
  ``/dev/nvidia0`` and ``/dev/nvidiactl``).
- **ROCm** (AMD's runtime, jaxlib's ROCm plugin). ROCm's environment variables reference:
  ``ROCR_VISIBLE_DEVICES``, ``HIP_VISIBLE_DEVICES``, ``GPU_DEVICE_ORDINAL`` (and
  ``CUDA_VISIBLE_DEVICES``, which HIP reads too), ``HSA_OVERRIDE_GFX_VERSION``. Device nodes:
  ``/dev/kfd`` (JAX's ``_src/hardware_utils.py`` counts GPUs through the KFD driver) and
  ``/dev/dri``.

Secret-looking names are dropped by ``worker.worker_env`` whatever list admits them (a
``TPU_API_TOKEN`` or a ``MEGASCALE_..._KEY`` never reaches user code). Where any node exists,
``/sys`` is bound read-only too, as it was for an NVIDIA GPU before: the runtimes find their
devices there (PCI ids, IOMMU groups)."""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from pathlib import Path

# The host's device directory; a test points :func:`bind_args` at a fake one.
DEV = Path("/dev")


@dataclass(frozen=True)
class Platform:
    """One accelerator runtime: the environment names it reads (exact names and prefixes) and
    its device nodes (glob patterns below ``/dev``; a directory is bound whole)."""

    name: str
    names: frozenset[str]
    prefixes: tuple[str, ...]
    nodes: tuple[str, ...]


TPU = Platform(
    name="tpu",
    names=frozenset({"ALLOW_MULTIPLE_LIBTPU_LOAD", "CLOUD_TPU_TASK_ID"}),
    # TPU_: TPU_LIBRARY_PATH, the topology, TPU_VISIBLE_CHIPS...; LIBTPU_: LIBTPU_INIT_ARGS.
    prefixes=("TPU_", "LIBTPU_", "MEGASCALE_"),
    nodes=("accel*", "vfio"),
)
CUDA = Platform(
    name="cuda",
    names=frozenset(
        {
            "CUDA_VISIBLE_DEVICES",
            "CUDA_DEVICE_ORDER",
            "CUDA_MANAGED_FORCE_DEVICE_ALLOC",
            "CUDA_CACHE_DISABLE",
            "CUDA_CACHE_PATH",
            "CUDA_CACHE_MAXSIZE",
            "CUDA_FORCE_PTX_JIT",
            "CUDA_DISABLE_PTX_JIT",
            "CUDA_MODULE_LOADING",
            "CUDA_LAUNCH_BLOCKING",
            "CUDA_DEVICE_MAX_CONNECTIONS",
            "CUDA_ROOT",
        }
    ),
    prefixes=("NVIDIA_",),
    nodes=("nvidia*",),
)
ROCM = Platform(
    name="rocm",
    names=frozenset(
        {
            "ROCR_VISIBLE_DEVICES",
            "HIP_VISIBLE_DEVICES",
            "GPU_DEVICE_ORDINAL",
            "HSA_OVERRIDE_GFX_VERSION",
        }
    ),
    prefixes=(),
    nodes=("kfd", "dri"),
)
PLATFORMS = (TPU, CUDA, ROCM)


def runtime_setting(name: str) -> bool:
    """Whether ``name`` is a setting some accelerator runtime reads (before the secret filter,
    which ``worker.worker_env`` applies to every name)."""
    return any(name in p.names or name.startswith(p.prefixes) for p in PLATFORMS)


def device_nodes(dev: Path = DEV) -> list[Path]:
    """The accelerator device nodes (or node directories) that exist in ``dev``, sorted."""
    found = {node for p in PLATFORMS for pattern in p.nodes for node in dev.glob(pattern)}
    return sorted(found)


def bind_args(dev: Path = DEV) -> list[str]:
    """bubblewrap arguments that show the worker the accelerators of this host: ``/sys``
    read-only and a ``--dev-bind`` of each node of :func:`device_nodes` at its place below the
    worker's ``/dev``; nothing where no node exists. They must come after ``--dev /dev`` on the
    command line: bubblewrap mounts in order, and its fresh ``/dev`` hides binds made before."""
    nodes = device_nodes(dev)
    if not nodes:
        return []
    args = ["--ro-bind", "/sys", "/sys"]
    for node in nodes:
        args += ["--dev-bind", str(node), str(Path("/dev") / node.relative_to(dev))]
    return args


# Names the accelerator this host has for a test or an operator ("tpu", "cuda", "rocm"; "none":
# no accelerator) instead of looking for device nodes (design 0069).
ACCELERATOR_ENV = "JAXSCOPE_ACCELERATOR"
# Seconds a fresh process takes to open each platform's chip (``jax.devices()``): 13.5 s on the
# lent TPU v5e host (design 0056); the GPUs' are guesses until measured.
OPEN_S = {"tpu": 13.5, "cuda": 5.0, "rocm": 5.0}
# The platform names the page and the CLI show.
SHOWN = {"tpu": "the TPU", "cuda": "the GPU", "rocm": "the GPU"}


def attached(dev: Path | None = None, env: dict[str, str] | None = None) -> str | None:
    """The accelerator platform of this host ("tpu", "cuda", "rocm"), or None: what
    :data:`ACCELERATOR_ENV` names, else what the device nodes of ``dev`` (default :data:`DEV`)
    show: a TPU's ``accel*`` or ``vfio/<n>``, NVIDIA's ``nvidiactl``, AMD's ``kfd``."""
    named = (os.environ if env is None else env).get(ACCELERATOR_ENV, "").strip().lower()
    if named:
        return None if named == "none" else named
    root = DEV if dev is None else dev
    if any(root.glob("accel*")) or any(p.name.isdigit() for p in root.glob("vfio/*")):
        return "tpu"
    if (root / "nvidiactl").exists():
        return "cuda"
    if (root / "kfd").exists():
        return "rocm"
    return None


# JAX's refusals of a mesh larger than the backend's devices (jax 0.10.2: ``make_mesh`` and
# ``mesh_utils.create_device_mesh``, ``_src/sharding_impls.py`` and ``_src/mesh_utils.py``): the
# run then goes to the 8 virtual CPU devices.
_TOO_FEW_DEVICES = re.compile(
    r"Number of devices (\d+) must (?:be >=|equal) the product\s+of mesh_shape \(([\d, ]+)\)"
)


def needs_more_devices(message: str, cpu_devices: int) -> bool:
    """Whether a run's error says it needs more devices than the backend has, and no more than
    ``cpu_devices``."""
    found = _TOO_FEW_DEVICES.search(message)
    if found is None:
        return False
    shape = [int(n) for n in found.group(2).replace(" ", "").split(",") if n]
    return int(found.group(1)) < math.prod(shape) <= cpu_devices


# The virtual CPU devices of every JAX worker (``worker.DEVICE_COUNT_FLAG``).
CPU_DEVICES = 8


def fallback_note(platform: str, devices: int) -> str:
    """What the page and the CLI say about a run that went to the CPU devices for that."""
    return (
        f"this program needs more devices than {SHOWN.get(platform, platform)} has "
        f"({devices} on this host): it ran on the {CPU_DEVICES} virtual CPU devices beside it"
    )
