"""A sandbox worker's environment (:func:`worker_env`), alone: a light module, so that
``jaxscope serve`` starts the JAX workers' template (``sandbox/forked.py``) with the workers'
environment before it imports the rest of the server (``cli._prestart_template``; the supervisor,
``sandbox/worker.py``, imports the event union). Imports neither pydantic nor the protocol at
run time."""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

from jaxscope.sandbox import accelerators
from jaxscope.sandbox.kinds import tpu_compile_env

if TYPE_CHECKING:
    from jaxscope.protocol import WorkerKind

DEVICE_COUNT_FLAG = "--xla_force_host_platform_device_count=8"

# The worker's environment is an allowlist: these names, names with these prefixes (JAX's and
# XLA's settings) and what an accelerator's runtime reads (``accelerators.runtime_setting``:
# TPU, CUDA, ROCm), minus secret-looking ones; nothing else of the server's environment
# (tokens, DSNs, keys, ``JAXSCOPE_*``) reaches user code.
_ALLOWED_NAMES = frozenset(
    {
        "PATH",
        "LANG",
        "LANGUAGE",
        "LC_ALL",
        "LC_CTYPE",
        "LC_NUMERIC",
        "TZ",
        "TF_CPP_MIN_LOG_LEVEL",
        "TF_CPP_MAX_VLOG_LEVEL",
        "TF_CPP_VMODULE",
    }
)
_ALLOWED_PREFIXES = ("JAX_", "XLA_")
_SECRET_NAME = re.compile(
    r"TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|_KEY$|_PAT$|_AUTH|_PEM$|DSN", re.IGNORECASE
)


def _passed_to_worker(name: str) -> bool:
    allowed = (
        name in _ALLOWED_NAMES
        or name.startswith(_ALLOWED_PREFIXES)
        or accelerators.runtime_setting(name)
    )
    return allowed and not _SECRET_NAME.search(name)


def worker_env(
    base: dict[str, str] | None = None, *, home: str = "/tmp", kind: WorkerKind = "jax"
) -> dict[str, str]:
    """The worker's environment, by allowlist: from ``base`` (default ``os.environ``) only
    ``PATH``, the locale and time zone, TF/XLA log levels, ``JAX_*``/``XLA_*`` and the settings
    of the accelerator runtimes (libtpu's ``TPU_*``, ``LIBTPU_*``, ``MEGASCALE_*``; CUDA's and
    ROCm's device selection and caches: ``sandbox/accelerators.py``), never a secret-looking
    name; with the 8-device flag added to ``XLA_FLAGS``
    (existing flags kept), ``XLA_PYTHON_CLIENT_PREALLOCATE=false`` unless set, and
    ``HOME``/``TMPDIR`` set to ``home`` (the worker's private ``/tmp`` in its namespaces).
    ``JAX_PLATFORMS`` is left alone in an "accelerator" worker, so the chip is its default
    backend; on a host with an accelerator every other JAX worker gets ``JAX_PLATFORMS=cpu``
    (one process at a time may hold the chip: design 0069).

    A torch worker (``kind="torch"``, design 0025) gets ``PJRT_DEVICE=CPU`` (torch_xla's CPU
    client; its probes may set other torch_xla settings before they create the client), no
    device-count flag (JAX's flag leaves torch_xla at one device), and no ``PYTHONPATH``: its
    command imports the ``jaxscope`` and ``exhibits`` packages, which its venv does not install,
    by name alone (``kinds.runner_command``, design 0047).

    A TensorFlow worker (``kind="tf"``, design 0066) runs JAX too and gets a JAX worker's
    environment, with TensorFlow's C++ info logs off (``TF_CPP_MIN_LOG_LEVEL=2`` unless set):
    its import prints a dozen lines of them to the worker's stderr.

    A TPU compile worker (``kind="tpu_compile"``, design 0067) is a JAX worker whose
    ``TPU_LIBRARY_PATH`` names libtpu's folder and whose other ``TPU_*`` settings are libtpu's
    offline topology (``kinds.tpu_compile_env``), with ``JAX_PLATFORMS=cpu``."""
    env = {k: v for k, v in (os.environ if base is None else base).items() if _passed_to_worker(k)}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    if kind == "torch":
        env["PJRT_DEVICE"] = "CPU"
        # `import torch_xla` reaches torch._inductor, which names its cache folder after
        # getpass.getuser(): the worker's uid has no passwd entry, so the name comes from here.
        env["USER"] = env["LOGNAME"] = "jaxscope-worker"
        env["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(home, "torchinductor")
        _common_env(env, home)
        return env
    flags = env.get("XLA_FLAGS", "")
    if "xla_force_host_platform_device_count" not in flags:
        env["XLA_FLAGS"] = (flags + " " + DEVICE_COUNT_FLAG).strip()
    # On a GPU, XLA would otherwise preallocate 75% of device memory in every warm worker, so
    # a second worker could not start; allocate on demand instead (no effect on CPU).
    env.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    if kind == "tf":
        env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    if kind in ("jax", "tf") and accelerators.attached() is not None:
        # One process at a time may hold the chip (design 0069): only the "accelerator" worker
        # opens it; every other JAX worker stays on the CPU, whatever the host's setting.
        env["JAX_PLATFORMS"] = "cpu"
    if kind == "tpu_compile":
        # libtpu for an offline topology (design 0067): a TPU host's own chip settings are not
        # this compile's; only this kind's environment names libtpu at all.
        env = {k: v for k, v in env.items() if not k.startswith(("TPU_", "LIBTPU_"))}
        env.update(tpu_compile_env())
    _common_env(env, home)
    return env


def _common_env(env: dict[str, str], home: str) -> None:
    env["PYTHONUNBUFFERED"] = "1"
    # The worker must not write .pyc files (its view of the venv is read-only anyway).
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["HOME"] = env["TMPDIR"] = home
