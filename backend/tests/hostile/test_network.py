"""Hostile inputs (issue 12): the network.

A worker has a network namespace of its own: its loopback is not the host's, so listeners of
the host on 127.0.0.1/::1 (TCP and UDP), and abstract Unix sockets (which belong to a network
namespace), are out of reach whatever the snippet uses: ``socket`` (refused by the audit hook),
``_socket`` and ``fileno=`` tricks, ctypes ``connect``/``sendto``, urllib, asyncio; a listener
the snippet opens is not reachable from the host; DNS fails. Each input ends with one terminal
event, promptly (no hang), a ``user_exception`` with a clear message at the snippet's line (or
finishes, where the snippet only reports what it got); nothing reached the host's listeners and
nothing of the worker is left behind.

Only loopback addresses are used, and each attempt is bounded in time."""

from __future__ import annotations

import os
import select
import socket
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from jaxscope.protocol import EventModel, StdoutPrinted
from jaxscope.sandbox.session import Session

from tests.harness import SandboxHarness
from tests.hostile.hostile_kit import OK_TAIL, Outcome, assert_nothing_left, run


def _has_ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as probe:
            probe.bind(("::1", 0))
        return True
    except OSError:
        return False


@dataclass
class Listeners:
    """The host's listeners a snippet tries to reach (non-blocking: a pending connection or a
    datagram makes one readable)."""

    tcp4: socket.socket
    udp4: socket.socket
    abstract: socket.socket
    unix_path: Path
    unix: socket.socket
    tcp6: socket.socket | None = None
    all: list[socket.socket] = field(default_factory=list)

    @property
    def port4(self) -> int:
        return int(self.tcp4.getsockname()[1])

    @property
    def port6(self) -> int:
        return int(self.tcp6.getsockname()[1]) if self.tcp6 is not None else 0

    @property
    def udp_port(self) -> int:
        return int(self.udp4.getsockname()[1])

    @property
    def abstract_name(self) -> str:
        name = self.abstract.getsockname()
        return name.decode() if isinstance(name, bytes) else str(name)

    def reached(self) -> list[str]:
        """The listeners something reached (a connection pending or a datagram waiting)."""
        readable, _, _ = select.select(self.all, [], [], 0.2)
        return [str(sock.getsockname()) for sock in readable]


@pytest.fixture(scope="module")
def listeners(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Listeners]:
    tcp4 = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    tcp4.bind(("127.0.0.1", 0))
    tcp4.listen(8)
    udp4 = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp4.bind(("127.0.0.1", 0))
    abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    abstract.bind(f"\0jaxscope-hostile-{os.getpid()}")
    abstract.listen(8)
    unix_path = tmp_path_factory.mktemp("net") / "server.sock"
    unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    unix.bind(str(unix_path))
    unix.listen(8)
    found = Listeners(tcp4, udp4, abstract, unix_path, unix)
    if _has_ipv6_loopback():
        found.tcp6 = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        found.tcp6.bind(("::1", 0))
        found.tcp6.listen(8)
    found.all = [s for s in (tcp4, udp4, abstract, unix, found.tcp6) if s is not None]
    for sock in found.all:
        sock.setblocking(False)
    yield found
    for sock in found.all:
        sock.close()


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


CTYPES = "import ctypes, os, socket, struct\nlibc = ctypes.CDLL(None, use_errno=True)\n"
# After CTYPES: raise the errno of a failed libc call as Python's OSError subclass.
CHECK = (
    "def check(r):\n"
    "    if r < 0:\n"
    "        e = ctypes.get_errno()\n"
    "        raise OSError(e, os.strerror(e))\n"
    "    return r\n"
)
SIN4 = (
    "def sin4(port):\n"
    "    return struct.pack('=H', 2) + struct.pack('!H', port) + bytes([127, 0, 0, 1]) + bytes(8)\n"
)
SIN6 = (
    "def sin6(port):\n"
    "    return struct.pack('=H', 10) + struct.pack('!HI', port, 0) + bytes(15) + b'\\x01'"
    " + bytes(4)\n"
)
PRELUDE = CTYPES + CHECK + SIN4 + SIN6
L = PRELUDE.count("\n")  # the snippet's line L + n is the n-th line after PRELUDE

HOOK = "jaxscope's sandbox does not allow"

# id -> (snippet with PORT/PORT6/UDP/ABSTRACT/UNIXPATH placeholders, error class or "finished",
# line, a piece of the message).
ATTEMPTS: dict[str, tuple[str, str, int, str]] = {
    "create_connection": (
        "import socket\nsocket.create_connection(('127.0.0.1', PORT), timeout=2)\n",
        "PermissionError",
        2,
        HOOK,
    ),
    "socket_inet_stream": (
        "import socket\nsocket.socket(socket.AF_INET, socket.SOCK_STREAM)\n",
        "PermissionError",
        2,
        HOOK,
    ),
    "socket_inet6_stream": (
        "import socket\nsocket.socket(socket.AF_INET6, socket.SOCK_STREAM)\n",
        "PermissionError",
        2,
        HOOK,
    ),
    "socket_udp_sendto": (
        "import socket\ns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
        "s.sendto(b'x', ('127.0.0.1', UDP))\n",
        "PermissionError",
        2,
        HOOK,
    ),
    "_socket_default_connect": (
        "import _socket\ns = _socket.socket()\ns.connect(('127.0.0.1', PORT))\n",
        "PermissionError",
        2,
        HOOK,
    ),
    "_socket_default_connect_ex": (
        "import _socket\ns = _socket.socket()\nprint(s.connect_ex(('127.0.0.1', PORT)))\n",
        "PermissionError",
        2,
        HOOK,
    ),
    "_socket_default_sendto": (
        "import _socket\ns = _socket.socket(-1, 2)\ns.sendto(b'x', ('127.0.0.1', UDP))\n",
        "PermissionError",
        2,
        HOOK,
    ),
    "socket_from_a_ctypes_fd": (
        PRELUDE + "fd = check(libc.socket(2, 1, 0))\n"
        "s = socket.socket(fileno=fd)\n"
        "s.connect(('127.0.0.1', PORT))\n",
        "PermissionError",
        L + 2,
        HOOK,
    ),
    "ctypes_connect_v4": (
        PRELUDE + "fd = check(libc.socket(2, 1, 0))\n"
        "addr = sin4(PORT)\n"
        "check(libc.connect(fd, addr, len(addr)))\n",
        "ConnectionRefusedError",
        L + 3,
        "Connection refused",
    ),
    "ctypes_connect_v6": (
        PRELUDE + "fd = check(libc.socket(10, 1, 0))\n"
        "addr = sin6(PORT6)\n"
        "check(libc.connect(fd, addr, len(addr)))\n",
        "ConnectionRefusedError",
        L + 3,
        "Connection refused",
    ),
    "ctypes_connect_nonblocking": (
        PRELUDE + "fd = check(libc.socket(2, 1 | 2048, 0))\n"
        "addr = sin4(PORT)\n"
        "libc.connect(fd, addr, len(addr))\n"
        "import select\n"
        "p = select.poll()\np.register(fd, select.POLLOUT)\n"
        "print('poll', p.poll(3000))\n"
        "err = ctypes.c_int()\nsize = ctypes.c_int(4)\n"
        "check(libc.getsockopt(fd, 1, 4, ctypes.byref(err), ctypes.byref(size)))\n"
        "raise OSError(err.value, os.strerror(err.value))\n",
        "ConnectionRefusedError",
        L + 11,
        "Connection refused",
    ),
    "ctypes_udp_sendto": (
        PRELUDE + "fd = check(libc.socket(2, 2, 0))\n"
        "addr = sin4(UDP)\n"
        "print('sent', check(libc.sendto(fd, b'ping', 4, 0, addr, len(addr))))\n" + OK_TAIL,
        "finished",
        0,
        "sent 4",
    ),
    "ctypes_raw_icmp_socket": (
        PRELUDE + "check(libc.socket(2, 3, 1))\n",
        "PermissionError",
        L + 1,
        "Operation not permitted",
    ),
    "ctypes_packet_socket": (
        PRELUDE + "check(libc.socket(17, 3, socket.htons(3)))\n",
        "PermissionError",
        L + 1,
        "Operation not permitted",
    ),
    "abstract_unix_socket": (
        "import socket\ns = socket.socket(socket.AF_UNIX)\ns.connect(ABSTRACT)\n",
        "ConnectionRefusedError",
        3,
        "Connection refused",
    ),
    "unix_socket_path": (
        "import socket\ns = socket.socket(socket.AF_UNIX)\ns.connect(UNIXPATH)\n",
        "FileNotFoundError",
        3,
        "No such file",
    ),
    "urllib_http": (
        "import urllib.request\nurllib.request.urlopen('http://127.0.0.1:PORT/', timeout=2)\n",
        "URLError",
        2,
        HOOK,
    ),
    "asyncio_open_connection": (
        "import asyncio\nasyncio.run(asyncio.open_connection('127.0.0.1', PORT))\n",
        "PermissionError",
        2,
        HOOK,
    ),
    "dns_getaddrinfo": (
        "import socket\nsocket.getaddrinfo('example.com', 80)\n",
        "gaierror",
        2,
        "name resolution",
    ),
    "dns_gethostbyname": (
        "import socket\nsocket.gethostbyname('pypi.org')\n",
        "gaierror",
        2,
        "name resolution",
    ),
    "dns_ctypes_getaddrinfo": (
        PRELUDE + "res = ctypes.c_void_p()\n"
        "r = libc.getaddrinfo(b'example.com', b'80', None, ctypes.byref(res))\n"
        "libc.gai_strerror.restype = ctypes.c_char_p\n"
        "raise socket.gaierror(r, libc.gai_strerror(r).decode())\n",
        "gaierror",
        L + 4,
        "name resolution",
    ),
}


def fill(code: str, found: Listeners) -> str:
    return (
        code.replace("PORT6", str(found.port6 or 1))
        .replace("PORT", str(found.port4))
        .replace("UDP", str(found.udp_port))
        .replace("ABSTRACT", repr(found.abstract_name))
        .replace("UNIXPATH", repr(str(found.unix_path)))
    )


@pytest.mark.parametrize("name", list(ATTEMPTS))
def test_the_hosts_listeners_are_out_of_reach(
    sandbox: SandboxHarness, listeners: Listeners, name: str
) -> None:
    code, expected, line, needle = ATTEMPTS[name]
    if name == "ctypes_connect_v6" and listeners.tcp6 is None:
        pytest.skip("no IPv6 loopback on this host")
    outcome = run(sandbox, fill(code, listeners))
    if expected == "finished":
        outcome.finished()
        assert needle in outcome.printed
    else:
        failed = outcome.failed("user_exception")
        assert failed.error_class == expected, failed
        assert needle in failed.message, failed.message
        # The line of the attempt: the deepest snippet frame, or (when a libc call failed) the
        # caller of check(), whose raise is the deepest frame.
        assert failed.source is not None
        assert line in (failed.source.line, *(frame.line for frame in failed.traceback)), failed
    assert outcome.run_s < 6.0, "the attempt should fail promptly, not hang"
    assert listeners.reached() == []
    assert_nothing_left(outcome)


# The snippet listens inside its namespace and waits; the host tries to connect meanwhile.
LISTEN_INSIDE = {
    "ctypes_listen_any": (
        PRELUDE + "fd = check(libc.socket(2, 1, 0))\n"
        "addr = struct.pack('=H', 2) + struct.pack('!H', PORT) + bytes(12)\n"
        "check(libc.bind(fd, addr, len(addr)))\n"
        "check(libc.listen(fd, 8))\n"
        "print('LISTENING', PORT)\n"
        "import time\ntime.sleep(1.5)\n"
    ),
    "ctypes_listen_autobind": (
        PRELUDE + "fd = check(libc.socket(2, 1, 0))\n"
        "check(libc.listen(fd, 8))\n"
        "addr = ctypes.create_string_buffer(16)\nsize = ctypes.c_int(16)\n"
        "check(libc.getsockname(fd, addr, ctypes.byref(size)))\n"
        "print('LISTENING', struct.unpack('!H', addr.raw[2:4])[0])\n"
        "import time\ntime.sleep(1.5)\n"
    ),
}


@pytest.mark.parametrize("name", list(LISTEN_INSIDE))
def test_a_listener_in_the_sandbox_is_not_reachable_from_the_host(
    sandbox: SandboxHarness, name: str
) -> None:
    port = free_port()
    attempts: list[str] = []

    def watch(event: EventModel, session: Session) -> None:
        if isinstance(event, StdoutPrinted) and "LISTENING" in event.text:
            listening = int(event.text.split()[1])
            try:
                socket.create_connection(("127.0.0.1", listening), timeout=0.5).close()
                attempts.append("connected")
            except OSError as exc:
                attempts.append(type(exc).__name__)

    code = LISTEN_INSIDE[name].replace("PORT", str(port)) + OK_TAIL
    outcome: Outcome = run(sandbox, code, watch=watch)
    outcome.finished()
    assert attempts == ["ConnectionRefusedError"], attempts
    assert_nothing_left(outcome)


def test_the_audit_hook_refuses_a_default_socket(sandbox: SandboxHarness) -> None:
    """``_socket.socket()`` with no arguments: its audit event carries family -1, yet the socket
    is AF_INET (it could listen() with an auto-bind, no bind event); refused at creation."""
    outcome = run(sandbox, "import _socket\n_socket.socket()\n" + OK_TAIL)
    failed = outcome.failed("user_exception")
    assert failed.error_class == "PermissionError" and HOOK in failed.message
    assert failed.source is not None and failed.source.line == 2
    assert_nothing_left(outcome)
