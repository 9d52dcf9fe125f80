"""The run queue's wire format and key names on Redis (design 0065), shared by the web tier
(``serve --queue``, :mod:`jaxscope.bus.web`) and the pool hosts (``pool --queue``,
:mod:`jaxscope.bus.host`).

Keys (all under ``jaxscope:``):

* ``lane:<lane>``: a stream per lane (``light``, ``heavy``, ``torch``, ``accelerator``); an entry's
  field ``job`` is a :class:`Job`'s JSON; the pool hosts read it through the consumer group
  :data:`GROUP` (one consumer per host, named by its host id).
* ``run:<key>:events``: a stream per run, the run's events as the worker sent them (field ``e``);
  kept :data:`KEEP_S` after the run's terminal event, so that a page that reconnects, to any
  web replica, gets what it missed (``resume``).
* ``run:<key>:ctl``: a stream per run from the web tier to the host that runs it: ``cancel``,
  ``detail`` requests, ``release`` (the page ran again: its details may go).
* ``run:<key>:meta``: the run's page ``run_id`` and client (for resume and the sweeper).
* ``run:<key>:started``: set once, by the host that starts the run (never twice: ``SET NX``).
* ``running``: a hash ``key -> {host, client}`` of started runs, for the sweeper that ends a
  dead host's runs with ``host_lost``; ``clients``: a hash ``client -> runs running``, the
  per-client share across hosts.
* ``host:<id>``: a host's heartbeat (its lanes), expiring :data:`HOST_TTL_S` after the last;
  ``hostruns:<id>``: the runs it holds (JSON list), written with it: a run in ``running`` that
  its live host no longer lists was dropped by it and the sweeper ends it.
* ``queued:<client>``: the client's jobs queued and not started (a sorted set by time), for
  :data:`QUEUED_PER_CLIENT`.

A job carries the run request and the client's hashed address, nothing else: no token, no
password, no host path (a pool host trusts only this format, and validates it).
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
from typing import Literal, TypeAlias
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field

from exhibits.registry import EXHIBITS
from jaxscope.protocol import RunOptions, RunRequest
from jaxscope.sandbox.kinds import worker_kind

Lane: TypeAlias = Literal["light", "heavy", "torch", "accelerator"]
LANES: tuple[Lane, ...] = ("light", "heavy", "torch", "accelerator")
PREFIX = "jaxscope:"
GROUP = "pool"
JOB_VERSION = 1
# A finished run's stream (and its ctl, meta) outlives its end this long: a page that lost its
# socket has this long to reconnect and resume.
KEEP_S = 600
# A run's keys expire this long after it was queued, whatever happens (nothing leaks when every
# process that knew of it died).
RUN_TTL_S = 3 * 3600
HEARTBEAT_S = 1.0
# A host whose heartbeat is older than this is dead: its started runs end with ``host_lost`` and
# the runs it took but had not started go back on their lane.
HOST_TTL_S = 4.0
# The most entries a lane holds: a run queued on a full lane is refused (never trimmed).
LANE_MAXLEN = 10_000
# The most jobs one client may have queued and not started, all lanes together: one page cannot
# fill a lane for everyone (a new run past it is refused, saying so).
QUEUED_PER_CLIENT = 20
# The password, when the URL has none (an environment variable: a command line is visible to
# every local process).
PASSWORD_ENV = "JAXSCOPE_QUEUE_PASSWORD"
# The web tier's word on a run's ctl stream that the page ran again: its details may go.
RELEASE = '{"type":"release"}'

_KEY = re.compile(r"^[0-9a-f]{32}$")
_HOST_ID = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
# Exhibits whose runs need more than a snippet's time (the exhibit's budget multiplies the
# sandbox's limits: the autodiff and compile-heavy ones) go on the heavy lane, so that a burst of
# them never holds up the light runs.
HEAVY_BUDGET = 3.0


class Job(BaseModel):
    """One run on a lane: what a pool host reads and validates before anything runs."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    v: Literal[1] = 1  # JOB_VERSION
    key: str = Field(pattern=_KEY.pattern)
    lane: Lane
    # The client's address, hashed (the per-client share needs identity, not the address).
    client: str = Field(min_length=1, max_length=32, pattern=r"^[0-9a-f]+$")
    run: RunRequest


def lane_of(exhibit: str, options: RunOptions | None = None, device: str | None = None) -> Lane:
    """The lane a run of ``exhibit`` goes on: ``torch`` for the torch workers' exhibits;
    ``accelerator`` for a JAX run that asks for the accelerator (``RunRequest.device``, design
    0069: served only by the hosts started with that lane, design 0071); ``heavy`` for the
    exhibits with a large budget, else ``light`` (where a host runs JAX on its CPU devices)."""
    spec = EXHIBITS.get(exhibit)
    if spec is None:
        return "light"
    if spec.worker == "torch":
        return "torch"
    if device == "accelerator" and worker_kind(exhibit, options, "cpu") == "jax":
        return "accelerator"
    return "heavy" if spec.budget >= HEAVY_BUDGET else "light"


def lane_problem(job: Job) -> str | None:
    """Why ``job`` may not run from its lane, or None: the chip is reached through the
    ``accelerator`` lane only, and that lane carries only JAX runs that ask for it (a pool host
    checks this before anything runs; the web tier never queues such a job)."""
    wants = job.run.device == "accelerator"
    if job.lane == "accelerator":
        if not wants:
            return "a run on the accelerator lane that does not ask for the accelerator"
        if worker_kind(job.run.exhibit, job.run.options, "cpu") != "jax":
            return "a run on the accelerator lane that is not a JAX exhibit's"
    elif wants and lane_of(job.run.exhibit, job.run.options, "accelerator") == "accelerator":
        return f"a run for the accelerator on the {job.lane} lane"
    return None


def new_key() -> str:
    """A run's key: 128 random bits, also the page's resume token."""
    return secrets.token_hex(16)


def valid_key(key: str) -> bool:
    return bool(_KEY.match(key))


def client_id(owner: str | None) -> str:
    """The hashed client for a job (``app.client_of``'s address, or ``anonymous``)."""
    return hashlib.sha256((owner or "anonymous").encode()).hexdigest()[:16]


def default_host_id() -> str:
    """This host's consumer name: hostname and pid (a restarted host is a new consumer)."""
    name = re.sub(r"[^A-Za-z0-9_.-]", "-", os.uname().nodename)[:40] or "host"
    return f"{name}-{os.getpid()}"


def valid_host_id(host_id: str) -> bool:
    return bool(_HOST_ID.match(host_id))


def lane_key(lane: str) -> str:
    return f"{PREFIX}lane:{lane}"


def events_key(key: str) -> str:
    return f"{PREFIX}run:{key}:events"


def ctl_key(key: str) -> str:
    return f"{PREFIX}run:{key}:ctl"


def meta_key(key: str) -> str:
    return f"{PREFIX}run:{key}:meta"


def started_key(key: str) -> str:
    return f"{PREFIX}run:{key}:started"


def host_key(host_id: str) -> str:
    return f"{PREFIX}host:{host_id}"


def runs_key(host_id: str) -> str:
    """The runs a host holds (a JSON list of keys), written with its heartbeat."""
    return f"{PREFIX}hostruns:{host_id}"


def queued_key(client: str) -> str:
    """A sorted set of the client's jobs queued and not started (score: when queued)."""
    return f"{PREFIX}queued:{client}"


RUNNING = f"{PREFIX}running"
CLIENTS = f"{PREFIX}clients"


class BadQueueUrl(ValueError):
    """``--queue`` is not a Redis URL jaxscope accepts; ``str()`` says why."""


def check_url(url: str) -> str:
    """``url`` when it is a ``redis://`` (or ``rediss://``, TLS) URL with a host; raises
    :class:`BadQueueUrl` otherwise. The password may be in the URL or in
    ``JAXSCOPE_QUEUE_PASSWORD``."""
    parts = urlsplit(url)
    if parts.scheme not in ("redis", "rediss") or not parts.hostname:
        raise BadQueueUrl(
            f"--queue wants redis://HOST:PORT/DB (or rediss:// for TLS), not {redact(url)!r}"
        )
    return url


def redact(url: str) -> str:
    """``url`` with its password replaced by ``***`` (for messages and logs)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user = parts.username or ""
    netloc = f"{user}:***@{parts.hostname}" + (f":{parts.port}" if parts.port else "")
    return parts._replace(netloc=netloc).geturl()
