"""The namespace layer (``sandbox/namespaces.py``): the bwrap command line, uid leases, and the
refusal to start where namespaces cannot be made."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

import pytest
from jaxscope.sandbox import namespaces
from jaxscope.sandbox.namespaces import bwrap_argv, lease_uid, readonly_paths

ROOT = Path(__file__).resolve().parents[2]
JAXSCOPE = Path(sys.executable).parent / "jaxscope"
SIN = "import jax.numpy as jnp\ndef f(x):\n    return jnp.sin(x)\nargs = (1.0,)\n"

needs_bwrap = pytest.mark.skipif(
    namespaces.bwrap_path() is None, reason="bubblewrap is not installed (make test installs it)"
)


def _pairs(argv: list[str], flag: str) -> list[tuple[str, str]]:
    return [(argv[i + 1], argv[i + 2]) for i, a in enumerate(argv) if a == flag]


@needs_bwrap
def test_bwrap_argv_unshares_everything_and_binds_only_what_the_worker_imports() -> None:
    argv = bwrap_argv(["/bin/true"], uid=None, tmp_bytes=2**20)
    separator = argv.index("--")
    options = argv[:separator]
    for flag in ("--die-with-parent", "--unshare-pid", "--unshare-net", "--unshare-ipc"):
        assert flag in options
    # Read-only binds only; the one writable place is the private tmpfs /tmp, the cwd.
    assert "--bind" not in options
    bound = {dest for _, dest in _pairs(options, "--ro-bind")}
    assert set(readonly_paths()) <= bound
    assert str(ROOT) not in bound  # the checkout itself (.git, node_modules...) is not visible
    assert "/root" not in bound and "/home" not in bound and "/etc" not in bound
    tmpfs = options.index("--tmpfs")
    assert options[tmpfs + 1] == "/tmp" and options[tmpfs - 1] == str(2**20)
    assert options[options.index("--chdir") + 1] == "/tmp"
    assert argv[separator + 1 :] == ["/bin/true"]


@needs_bwrap
def test_a_root_worker_is_switched_to_its_uid_by_setpriv_without_groups() -> None:
    argv = bwrap_argv(["/bin/true"], uid=123456, tmp_bytes=2**20)
    tail = argv[argv.index("--") + 1 :]
    assert tail[0].endswith("setpriv")
    assert "--reuid=123456" in tail and "--clear-groups" in tail and "--no-new-privs" in tail
    assert tail[-1] == "/bin/true"


@needs_bwrap
def test_the_sandbox_runs_commands_with_no_network_and_only_its_own_processes() -> None:
    uid = lease_uid() if os.geteuid() == 0 else None
    try:
        argv = bwrap_argv(
            ["/bin/sh", "-c", "id -u; ls /proc | grep -c '^[0-9]'; cat /proc/net/dev | wc -l"],
            uid=uid.uid if uid else None,
            tmp_bytes=2**20,
        )
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=True)
    finally:
        if uid is not None:
            uid.release()
    user, processes, net_lines = done.stdout.split()
    if uid is not None:
        assert int(user) == uid.uid
    # sh, ls, grep and bwrap's init: nothing of the host.
    assert int(processes) <= 5
    # The header (2 lines) and the namespace's own loopback: no host interface.
    assert int(net_lines) == 3


def test_uid_leases_are_exclusive_and_not_reused_at_once(tmp_path: Path) -> None:
    original = namespaces.UID_LOCK_DIR
    namespaces.UID_LOCK_DIR = tmp_path
    try:
        a, b = lease_uid(), lease_uid()
        assert a.uid != b.uid
        a.release()
        c = lease_uid()
        assert c.uid not in (a.uid, b.uid)  # the search goes on after the last lease
        # A uid held by another process (another jaxscope server) is skipped.
        held = (namespaces._Cursor.next % namespaces.UID_SLOTS) + namespaces.WORKER_UID_BASE
        fd = os.open(tmp_path / str(held), os.O_RDWR | os.O_CREAT)
        holder = subprocess.Popen(
            [
                sys.executable,
                "-c",
                f"import fcntl, time; fcntl.flock({fd}, fcntl.LOCK_EX); print(1, flush=True); "
                "time.sleep(30)",
            ],
            pass_fds=(fd,),
            stdout=subprocess.PIPE,
        )
        try:
            assert holder.stdout is not None and holder.stdout.readline().strip() == b"1"
            d = lease_uid()
            assert d.uid != held
            d.release()
        finally:
            holder.kill()
            holder.wait()
            os.close(fd)
        b.release()
        c.release()
        # Released leases can be taken again (a blocking flock succeeds at once).
        probe = os.open(tmp_path / str(b.uid), os.O_RDWR)
        fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.close(probe)
    finally:
        namespaces.UID_LOCK_DIR = original


def _cli(args: list[str], env: dict[str, str], code: str = SIN) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(JAXSCOPE), *args],
        input=code,
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
        check=False,
    )


def test_without_bubblewrap_the_cli_refuses_to_start_and_says_why() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JAXSCOPE_")}
    env["PATH"] = "/nonexistent"  # no bwrap to be found
    done = _cli(["run", "tracing", "-", "--print", "jaxpr"], env)
    assert done.returncode == 2
    assert "cannot start" in done.stderr and "bubblewrap" in done.stderr
    assert "--unsafe-no-sandbox" in done.stderr
    served = _cli(["serve", "--port", "1"], env)
    assert served.returncode == 2 and "bubblewrap" in served.stderr


def test_unsafe_no_sandbox_runs_without_namespaces() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JAXSCOPE_")}
    env["PATH"] = "/nonexistent"
    done = _cli(["run", "tracing", "-", "--print", "jaxpr", "--unsafe-no-sandbox"], env)
    assert done.returncode == 0, done.stderr
    assert "sin" in done.stdout
