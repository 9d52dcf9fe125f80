"""A worker on an accelerator host (issue 34, part 1; design 0056): the environment keeps what
each runtime reads (``sandbox/accelerators.py``, ``worker.worker_env``) and drops secrets, the
sandbox binds the accelerator's device nodes and nothing else, and where namespaces cannot be
made at all (gVisor) the refusal says why and what to do. No accelerator is needed: the host's
environment, ``/dev`` and ``uname`` are recorded ones."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from jaxscope.sandbox import accelerators, namespaces
from jaxscope.sandbox.namespaces import KernelSays, bwrap_argv, refusal, under_gvisor
from jaxscope.sandbox.worker import worker_env

needs_bwrap = pytest.mark.skipif(
    namespaces.bwrap_path() is None, reason="bubblewrap is not installed (make test installs it)"
)

# The environment of a TPU v5e host with one chip (2026-12-06): the TPU_* names and values of
# shared/reference/tpu-offline-compile.md, the three more TPU_* names the host had (values
# illustrative), and other variables of that host that no runtime needs.
TPU_HOST = {
    "TPU_ACCELERATOR_TYPE": "v5litepod-4",
    "TPU_TOPOLOGY": "2x2",
    "TPU_CHIPS_PER_HOST_BOUNDS": "2,2,1",
    "TPU_HOST_BOUNDS": "1,1,1",
    "TPU_WORKER_HOSTNAMES": "localhost",
    "TPU_WORKER_ID": "0",
    "TPU_SKIP_MDS_QUERY": "true",
    "TPU_TOPOLOGY_ALT": "false",
    "TPU_TOPOLOGY_WRAP": "false,false,false",
    "TPU_RUNTIME_METRICS_PORTS": "8431",
}
# libtpu's own settings and the multi-process / multi-slice names JAX reads or sets.
TPU_SETTINGS = {
    "LIBTPU_INIT_ARGS": "--xla_tpu_use_enhanced_launch_barrier=true",
    "TPU_LIBRARY_PATH": "/opt/libtpu/libtpu.so",
    "ALLOW_MULTIPLE_LIBTPU_LOAD": "1",
    "TPU_VISIBLE_CHIPS": "0",
    "TPU_PROCESS_BOUNDS": "1,1,1",
    "TPU_CHIPS_PER_PROCESS_BOUNDS": "1,1,1",
    "CLOUD_TPU_TASK_ID": "0",
    "MEGASCALE_COORDINATOR_ADDRESS": "10.0.0.2:8080",
    "MEGASCALE_NUM_SLICES": "1",
}
OTHER_HOST = {
    "HOME": "/home/tpu",
    "PYTHONPATH": "/opt/site",
    "SSL_CERT_FILE": "/etc/ssl/cert.pem",
    "GRPC_DEFAULT_SSL_ROOTS_FILE_PATH": "/etc/ssl/cert.pem",
    "PYENV_ROOT": "/root/.pyenv",
    "CONTAINER_NAME": "tpu-host",
}
SECRETS = {
    "TPU_API_TOKEN": "tpu-token-1",
    "TPU_SERVICE_ACCOUNT_KEY": "tpu-key-2",
    "LIBTPU_AUTH_HEADER": "Bearer libtpu-3",
    "MEGASCALE_SECRET": "megascale-4",
    "GOOGLE_APPLICATION_CREDENTIALS": "/root/gce-credentials-5.json",
    "CLOUDSDK_AUTH_ACCESS_TOKEN": "gce-access-token-6",
    "GCE_METADATA_TOKEN": "gce-metadata-7",
    "CUDA_MPS_TOKEN": "cuda-8",
    "NVIDIA_API_KEY": "nvapi-9",
    "JAXSCOPE_TOKEN": "jaxscope-10",
}


def test_worker_env_keeps_what_libtpu_reads_and_drops_secrets() -> None:
    env = worker_env({**TPU_HOST, **TPU_SETTINGS, **OTHER_HOST, **SECRETS, "PATH": "/usr/bin"})
    for name, value in {**TPU_HOST, **TPU_SETTINGS}.items():
        assert env.get(name) == value, name
    for name in (*OTHER_HOST, *SECRETS):
        if name != "HOME":
            assert name not in env, name
    assert env["HOME"] == "/tmp"  # the worker's own, not the host's
    secret_values = set(SECRETS.values())
    assert not any(value in secret_values for value in env.values())
    # The torch worker gets them too (torch_xla on a TPU reads the same libtpu settings).
    torch_env = worker_env({**TPU_HOST, **SECRETS}, kind="torch")
    assert torch_env["TPU_TOPOLOGY"] == "2x2" and "TPU_API_TOKEN" not in torch_env


def test_worker_env_keeps_what_cuda_and_rocm_read_and_drops_secrets() -> None:
    gpu = {
        "CUDA_VISIBLE_DEVICES": "0,1",
        "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
        "CUDA_CACHE_PATH": "/var/cache/cuda",
        "CUDA_MODULE_LOADING": "LAZY",
        "CUDA_ROOT": "/usr/local/cuda",
        "NVIDIA_VISIBLE_DEVICES": "all",
        "NVIDIA_DRIVER_CAPABILITIES": "compute,utility",
        "NVIDIA_REQUIRE_CUDA": "cuda>=12.8",
        "ROCR_VISIBLE_DEVICES": "0",
        "HIP_VISIBLE_DEVICES": "0",
        "GPU_DEVICE_ORDINAL": "0",
        "HSA_OVERRIDE_GFX_VERSION": "11.0.0",
    }
    env = worker_env({**gpu, **SECRETS, "CUDA_HOME_SECRET": "s", "LD_LIBRARY_PATH": "/x"})
    for name, value in gpu.items():
        assert env.get(name) == value, name
    assert not set(SECRETS) & env.keys()
    assert "CUDA_HOME_SECRET" not in env and "LD_LIBRARY_PATH" not in env


def test_runtime_settings_are_the_platforms_names_only() -> None:
    assert accelerators.runtime_setting("TPU_WORKER_HOSTNAMES")
    assert accelerators.runtime_setting("LIBTPU_INIT_ARGS")
    assert accelerators.runtime_setting("HIP_VISIBLE_DEVICES")
    # Not a prefix match for CUDA (only the names of NVIDIA's list), nor other vendors' names.
    assert not accelerators.runtime_setting("CUDA_VISIBLE_DEVICES_EXTRA")
    assert not accelerators.runtime_setting("GCE_METADATA_IP")
    assert not accelerators.runtime_setting("TPUX")


@pytest.fixture
def fake_dev(tmp_path: Path) -> Iterator[Path]:
    """A /dev with every accelerator's nodes (files stand in for them) and others that must
    not be bound."""
    dev = tmp_path / "dev"
    (dev / "vfio").mkdir(parents=True)
    (dev / "nvidia-caps").mkdir()
    (dev / "dri").mkdir()
    for name in (
        "vfio/vfio",
        "vfio/3",
        "accel0",
        "accel1",
        "nvidia0",
        "nvidiactl",
        "nvidia-uvm",
        "kfd",
        "dri/renderD128",
        # Not accelerators: never bound.
        "kvm",
        "fuse",
        "loop0",
        "mem",
        "vga_arbiter",
    ):
        (dev / name).touch()
    yield dev


def _dev_binds(argv: list[str]) -> list[tuple[str, str]]:
    return [(argv[i + 1], argv[i + 2]) for i, a in enumerate(argv) if a == "--dev-bind"]


def test_the_accelerator_nodes_that_exist_are_bound_and_nothing_else(fake_dev: Path) -> None:
    args = accelerators.bind_args(fake_dev)
    expected = [
        "accel0",
        "accel1",
        "dri",
        "kfd",
        "nvidia-caps",
        "nvidia-uvm",
        "nvidia0",
        "nvidiactl",
        "vfio",
    ]
    assert _dev_binds(args) == [(str(fake_dev / name), f"/dev/{name}") for name in expected]
    assert args[:3] == ["--ro-bind", "/sys", "/sys"]


def test_the_one_chip_v5e_host_binds_its_vfio_folder(tmp_path: Path) -> None:
    """What the borrowed TPU v5e host had: /dev/vfio/vfio and one /dev/vfio/N (N was 3 there,
    2 on another one), no /dev/accel*: the folder is bound whole, whatever N is."""
    (tmp_path / "vfio").mkdir()
    (tmp_path / "vfio" / "vfio").touch()
    (tmp_path / "vfio" / "3").touch()
    (tmp_path / "kvm").touch()
    args = accelerators.bind_args(tmp_path)
    assert args == ["--ro-bind", "/sys", "/sys", "--dev-bind", str(tmp_path / "vfio"), "/dev/vfio"]


def test_no_accelerator_no_binds(tmp_path: Path) -> None:
    (tmp_path / "kvm").touch()
    assert accelerators.bind_args(tmp_path) == []
    assert accelerators.bind_args(tmp_path / "absent") == []


@needs_bwrap
@pytest.mark.parametrize("template", [False, True])
def test_both_command_lines_bind_the_nodes_after_the_fresh_dev(
    fake_dev: Path, template: bool
) -> None:
    argv = bwrap_argv(["/bin/true"], uid=None, tmp_bytes=2**20, template=template, dev=fake_dev)
    options = argv[: argv.index("--")]
    binds = _dev_binds(options)
    assert ("/dev/vfio", "/dev/vfio") not in binds  # the fake tree, not the host's
    assert (str(fake_dev / "vfio"), "/dev/vfio") in binds and len(binds) == 9
    # bwrap mounts in order: a node bound before --dev /dev would be hidden by it.
    fresh_dev = options.index("--dev")
    assert options[fresh_dev + 1] == "/dev"
    assert all(options.index(str(fake_dev / name)) > fresh_dev for name in ("vfio", "kfd"))


@needs_bwrap
def test_a_bound_node_is_there_in_the_sandbox(tmp_path: Path) -> None:
    """Through bwrap itself: a node of the (fake) accelerator /dev is a character device in the
    worker's /dev, and the host's other nodes are not there."""
    dev = tmp_path / "dev"
    dev.mkdir()
    (dev / "accel0").symlink_to("/dev/full")  # a character device every Linux has
    (dev / "kvm").symlink_to("/dev/full")
    argv = bwrap_argv(
        ["/bin/sh", "-c", "test -c /dev/accel0 && echo accel0; test -e /dev/kvm && echo kvm; true"],
        uid=None,
        tmp_bytes=2**20,
        dev=dev,
    )
    done = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["accel0"]


# What the borrowed TPU host said (2026-12-06, as uid nobody): `uname -n`, `-r`, `-v` and
# /proc/version; `unshare -U`, `-p -f`, `-n` all failed with "Function not implemented" (errno
# 38). bubblewrap was not installed there; the line is what its clone() failure prints
# (die_with_error("Creating new namespace failed") with strerror(ENOSYS)).
GVISOR = KernelSays(
    nodename="runsc",
    release="4.4.0",
    version="#1 SMP Sun Jan 10 15:06:54 PST 2016",
    proc_version="Linux version 4.4.0 #1 SMP Sun Jan 10 15:06:54 PST 2016",
)
ENOSYS_LINE = "bwrap: Creating new namespace failed: " + os.strerror(38)
LINUX = KernelSays(
    nodename="vm",
    release="6.18.44-fc-v1272",
    version="#1 SMP PREEMPT_DYNAMIC @0",
    proc_version="Linux version 6.18.44-fc-v1272 (builder@sandboxing) #1 SMP PREEMPT_DYNAMIC @0",
)
EPERM_LINE = (
    "bwrap: No permissions to creating new namespace, likely because the kernel does not allow "
    "non-privileged user namespaces."
)


def test_gvisor_is_recognised_from_what_uname_says() -> None:
    assert under_gvisor(GVISOR)
    assert under_gvisor(KernelSays("host", "4.4.0", "#1 SMP Sun Jan 10 15:06:54 PST 2016", ""))
    assert under_gvisor(KernelSays("runsc", "5.15.0", "#1", ""))
    assert not under_gvisor(LINUX)
    assert not under_gvisor(KernelSays("gvisor-build-box", LINUX.release, LINUX.version, ""))
    # A real (Ubuntu 16.04) 4.4 kernel is not gVisor.
    ubuntu = KernelSays(
        "box", "4.4.0-210-generic", "#242-Ubuntu SMP Fri Apr 16 09:57:56 UTC 2021", ""
    )
    assert not under_gvisor(ubuntu)


def test_the_refusal_under_gvisor_says_why_and_what_runs() -> None:
    text = refusal(ENOSYS_LINE, GVISOR)
    assert "gVisor" in text and "4.4.0" in text
    assert "ENOSYS" in text and "Function not implemented" in text
    assert "user, pid and network namespaces" in text
    assert "--unsafe-no-sandbox" in text
    assert "gVisor machine is the boundary" in text
    # Not the advice for an ordinary kernel, which cannot help here.
    assert "sysctl" not in text


def test_the_refusal_for_enosys_without_gvisor_and_for_an_ordinary_kernel() -> None:
    enosys = refusal(ENOSYS_LINE, LINUX)
    assert "ENOSYS" in enosys and "--unsafe-no-sandbox" in enosys and "boundary" in enosys
    assert "sysctl" not in enosys
    ordinary = refusal(EPERM_LINE, LINUX)
    assert "gVisor" not in ordinary and "sysctl kernel.unprivileged_userns_clone=1" in ordinary
    assert EPERM_LINE in ordinary and "--unsafe-no-sandbox" in ordinary


def test_sandbox_problem_under_gvisor_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """The start-up check itself, on the recorded host: no bwrap there, and installing it would
    not help."""
    monkeypatch.setattr(namespaces, "bwrap_path", lambda: None)
    monkeypatch.setattr(KernelSays, "here", classmethod(lambda cls: GVISOR))
    namespaces.sandbox_problem.cache_clear()
    try:
        text = namespaces.sandbox_problem()
    finally:
        namespaces.sandbox_problem.cache_clear()
    assert text is not None
    assert "not installed" in text and "gVisor" in text and "--unsafe-no-sandbox" in text
    assert "apt-get install bubblewrap" not in text
