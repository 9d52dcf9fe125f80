"""The Redis side of the run queue (design 0065): connecting, the atomic steps every process
shares (start a run once, end it once), and the sweeper that ends a dead host's runs.

Both a run's terminal event and the sweeper's ``host_lost`` go through :data:`_END`, a Lua script
(atomic in Redis): the event is written only by the one that removes the run from ``running``, so
a run has exactly one terminal event even when a host that was thought dead comes back, or two
sweepers race. A run starts through :data:`_START` (``SET NX`` of its ``started`` key and its entry
in ``running`` together), so a job delivered twice (re-queued from a dead host) never runs twice
once it has started.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from typing import Any, TypeAlias, cast
from urllib.parse import urlsplit

import redis.asyncio as aioredis
from redis.exceptions import RedisError, ResponseError

from jaxscope.bus.jobs import (
    CLIENTS,
    GROUP,
    HOST_TTL_S,
    KEEP_S,
    LANES,
    PASSWORD_ENV,
    RUN_TTL_S,
    RUNNING,
    Job,
    check_url,
    ctl_key,
    events_key,
    host_key,
    lane_key,
    meta_key,
    redact,
    started_key,
)
from jaxscope.protocol import RunFailed

log = logging.getLogger(__name__)

Redis = aioredis.Redis
# A stream entry as the client returns it (RESP2): its id and its fields.
StreamEntry: TypeAlias = tuple[bytes, dict[bytes, bytes]]


def entries_of(read: object) -> list[StreamEntry]:
    """The entries of an ``XREAD``/``XREADGROUP``/``XCLAIM`` answer, every stream's in order."""
    if not read:
        return []
    if isinstance(read, list) and read and isinstance(read[0], tuple):  # XCLAIM: entries
        return cast(list[StreamEntry], read)
    out: list[StreamEntry] = []
    for _, entries in cast(list[tuple[bytes, list[StreamEntry]]], read):
        out.extend(entries)
    return out


# KEYS: started, running; ARGV: host, key, ttl, client.
_START = """
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'EX', ARGV[3]) then
  redis.call('HSET', KEYS[2], ARGV[2], cjson.encode({host=ARGV[1], client=ARGV[4]}))
  return 1
end
return 0
"""

# KEYS: running, events, ctl, meta, clients; ARGV: key, event text, keep seconds, client.
_END = """
if redis.call('HDEL', KEYS[1], ARGV[1]) == 1 then
  redis.call('XADD', KEYS[2], '*', 'e', ARGV[2])
  redis.call('EXPIRE', KEYS[2], ARGV[3])
  redis.call('EXPIRE', KEYS[3], ARGV[3])
  redis.call('EXPIRE', KEYS[4], ARGV[3])
  if redis.call('HINCRBY', KEYS[5], ARGV[4], -1) <= 0 then
    redis.call('HDEL', KEYS[5], ARGV[4])
  end
  return 1
end
return 0
"""


async def stop_task(task: asyncio.Task[Any] | None, timeout: float = 2.0) -> None:
    """Cancel ``task`` and wait for it at most ``timeout`` seconds: a task cancelled inside a
    Redis command may not end at once (the client's own clean-up), and a web tier or host that
    stops must not wait on it for good."""
    if task is None or task.done():
        return
    task.cancel()
    await asyncio.wait({task}, timeout=timeout)


def connect(url: str) -> Redis:
    """A client for the queue at ``url`` (``redis://HOST:PORT/DB``); the password from the URL,
    else ``JAXSCOPE_QUEUE_PASSWORD``. Commands time out (a Redis that went away is an error to
    report, never a hang)."""
    check_url(url)
    password = os.environ.get(PASSWORD_ENV) or None
    extra: dict[str, Any] = {} if password is None or "@" in url else {"password": password}
    if password is None and urlsplit(url).password is None:
        log.warning(
            "the run queue at %s has no password: whoever reaches it can read and write runs; "
            "give Redis one (requirepass) and jaxscope the same in %s",
            redact(url),
            PASSWORD_ENV,
        )
    return aioredis.Redis.from_url(
        url, socket_connect_timeout=3, socket_timeout=10, retry_on_timeout=False, **extra
    )


async def ensure_groups(redis: Redis, lanes: tuple[str, ...] = LANES) -> None:
    """The consumer group on each lane's stream (made with the stream; after a Redis restart
    that lost them, again)."""
    for lane in lanes:
        try:
            await redis.xgroup_create(lane_key(lane), GROUP, id="0", mkstream=True)
        except ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise


async def start_run(redis: Redis, job: Job, host_id: str) -> bool:
    """Mark ``job``'s run started on ``host_id``; False when it already started (anywhere)."""
    started = await redis.eval(
        _START,
        2,
        started_key(job.key),
        RUNNING,
        host_id,
        job.key,
        str(RUN_TTL_S),
        job.client,
    )
    return bool(started)


async def end_run(redis: Redis, key: str, client: str, text: str) -> bool:
    """Write the run's terminal event ``text`` and forget it as running, once; False (nothing
    written) when it already ended (the sweeper declared its host lost)."""
    ended = await redis.eval(
        _END,
        5,
        RUNNING,
        events_key(key),
        ctl_key(key),
        meta_key(key),
        CLIENTS,
        key,
        text,
        str(KEEP_S),
        client,
    )
    return bool(ended)


async def host_alive(redis: Redis, host_id: str) -> bool:
    return bool(await redis.exists(host_key(host_id)))


async def _next_seq(redis: Redis, key: str) -> int:
    last = await redis.xrevrange(events_key(key), count=1)
    if not last:
        return 0
    try:
        entry = entries_of(last)[0]
        return int(json.loads(entry[1][b"e"])["seq"]) + 1
    except (KeyError, ValueError, TypeError, IndexError):
        return 0


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def host_lost_message(host: str) -> str:
    return (
        f"the pool host that was running this run ({host}) stopped answering mid-run (it died, "
        "or lost its network): the run's result is lost. Run it again: another host takes it"
    )


async def sweep(redis: Redis, me: str) -> None:
    """One pass of the sweeper (every web tier and pool host runs it each heartbeat): a started
    run whose host's heartbeat expired ends with ``host_lost``; a job a dead host took and had
    not started goes back on its lane (claimed by ``me`` first, so that one sweeper re-queues
    it)."""
    running = await redis.hgetall(RUNNING)
    for raw_key, raw in running.items():
        key = raw_key.decode() if isinstance(raw_key, bytes) else str(raw_key)
        try:
            entry = json.loads(raw)
            host, client = str(entry["host"]), str(entry["client"])
        except (ValueError, KeyError, TypeError):
            continue
        if await host_alive(redis, host):
            continue
        meta = await redis.get(meta_key(key))
        run_id = json.loads(meta)["run_id"] if meta else ""
        failed = RunFailed(
            kind="host_lost",
            message=host_lost_message(host),
            run_id=run_id,
            seq=await _next_seq(redis, key),
        )
        if await end_run(redis, key, client, failed.model_dump_json()):
            log.warning("run %s: its host %s is gone: ended with host_lost", key, host)
    for lane in LANES:
        try:
            pending = await redis.xpending_range(lane_key(lane), GROUP, min="-", max="+", count=100)
        except ResponseError:  # no group yet (or Redis restarted and lost it)
            continue
        for item in pending:
            consumer = _text(item["consumer"])
            if consumer == me or await host_alive(redis, consumer):
                continue
            claimed = await redis.xclaim(
                lane_key(lane),
                GROUP,
                me,
                min_idle_time=int(HOST_TTL_S * 1000),
                message_ids=[item["message_id"]],
            )
            for entry_id, fields in entries_of(claimed):
                await _requeue_claimed(redis, lane, entry_id, fields, consumer)


async def _requeue_claimed(
    redis: Redis, lane: str, entry_id: bytes, fields: dict[bytes, bytes], dead: str
) -> None:
    raw = fields.get(b"job", b"")
    try:
        job = Job.model_validate_json(raw)
    except ValueError:
        await redis.xack(lane_key(lane), GROUP, entry_id)
        return
    if not await redis.exists(started_key(job.key)):
        # Not started: it runs elsewhere (at the lane's tail: its place is lost, not the run).
        await redis.xadd(lane_key(lane), {"job": raw})
        log.warning("run %s: taken by %s, which died before starting it: re-queued", job.key, dead)
    await redis.xack(lane_key(lane), GROUP, entry_id)


__all__ = [
    "Redis",
    "RedisError",
    "connect",
    "end_run",
    "ensure_groups",
    "host_alive",
    "start_run",
    "stop_task",
    "sweep",
]
