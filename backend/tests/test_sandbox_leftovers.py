"""What a worker could inherit or leave for the next holder of its uid, and the pool's upkeep
(found by a break-it review of the namespaced sandbox)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time

import pytest
from jaxscope.sandbox.pool import WorkerPool
from jaxscope.server.app import client_of
from jaxscope.settings import Limits

from testkit import run_async

ADD_KEY = """
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
payload = b"left by the previous holder"
key = libc.syscall(248, b"user", b"plant", payload, len(payload), ctypes.c_long(-4))  # add_key
sys.exit(0 if key > 0 else 3)
"""
FIND_KEY = """
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
found = libc.syscall(250, 10, ctypes.c_long(-4), b"user", b"plant", 0)  # KEYCTL_SEARCH
sys.exit(0 if found > 0 else 1)
"""
CLEAR = "from jaxscope.sandbox import guard; guard.clear_keyrings()"


def _as_uid(uid: int, code: str) -> int:
    argv = ["setpriv", f"--reuid={uid}", "--regid=65534", "--clear-groups", sys.executable]
    return subprocess.run([*argv, "-c", code], timeout=60, check=False).returncode


@pytest.mark.skipif(os.geteuid() != 0 or os.uname().machine != "x86_64", reason="root, x86_64")
def test_a_workers_start_clears_the_keys_an_earlier_holder_of_its_uid_left() -> None:
    uid = 149_999  # the last slot: the tests' workers start elsewhere
    assert _as_uid(uid, ADD_KEY) == 0
    try:
        assert _as_uid(uid, FIND_KEY) == 0  # the key outlived its process: the uid's keyring
        assert _as_uid(uid, CLEAR) == 0
        assert _as_uid(uid, FIND_KEY) == 1
    finally:
        _as_uid(uid, CLEAR)


def test_the_runner_closes_every_descriptor_it_inherited(tmp_path: object) -> None:
    read, write = os.pipe()
    code = (
        "import os, sys\n"
        "from jaxscope.sandbox import guard\n"
        f"os.fstat({write})\n"  # inherited (pass_fds)
        "guard.close_inherited_fds()\n"
        "try:\n"
        f"    os.write({write}, b'leak')\n"
        "except OSError:\n"
        "    sys.exit(0)\n"
        "sys.exit(5)\n"
    )
    try:
        done = subprocess.run(
            [sys.executable, "-c", code], pass_fds=(write,), timeout=60, check=False
        )
        assert done.returncode == 0
    finally:
        os.close(read)
        os.close(write)


def test_every_loopback_address_is_one_client() -> None:
    assert client_of("127.0.0.1") == client_of("127.0.0.2") == client_of("::1") == "loopback"
    assert client_of("203.0.113.7") == "203.0.113.7"
    assert client_of(None) is None
    assert client_of("testclient") == "testclient"


def test_the_pool_keeps_its_spare_after_a_leased_worker_ends() -> None:
    """A worker that ends frees a slot: the pool starts a spare at once, not only when the next
    caller arrives (runs waited for cold starts)."""

    async def scenario() -> int:
        pool = WorkerPool(Limits(wall_s=30, cpu_s=30), size=1, max_workers=1)
        pool.start()
        try:
            worker = await pool.acquire()
            worker.kill()
            await worker.wait_closed()
            deadline = time.monotonic() + 60
            while pool.state()["idle"] < 1 and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
            return pool.state()["idle"]
        finally:
            await pool.close()

    assert run_async(scenario()) == 1
