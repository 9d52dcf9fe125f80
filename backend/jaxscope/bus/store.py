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
import contextlib
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
    HEARTBEAT_S,
    HOST_TTL_S,
    KEEP_S,
    LANE_MAXLEN,
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
    queued_key,
    redact,
    runs_key,
    started_key,
)
from jaxscope.protocol import RunFailed

log = logging.getLogger(__name__)

# A live host's run missing from its heartbeat's list this long after it started is one the
# host dropped (its writes failed): the sweeper ends it.
DISOWN_GRACE_S = 3 * HEARTBEAT_S + 1

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


# KEYS: started, running, the client's queued set; ARGV: host, key, ttl, client. ``t``: when it
# started, by Redis's clock (the sweeper's grace before it trusts a host's list of its runs).
_START = """
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'EX', ARGV[3]) then
  local t = tonumber(redis.call('TIME')[1])
  redis.call('HSET', KEYS[2], ARGV[2], cjson.encode({host=ARGV[1], client=ARGV[4], t=t}))
  redis.call('ZREM', KEYS[3], ARGV[2])
  return 1
end
return 0
"""

# KEYS: the lane, the client's queued set, meta, events; ARGV: job text, key, now (s), ttl,
# per-client limit, lane limit, meta text, the hosts' consumer group. Queues the job unless
# the lane is full (-1) or the client has its limit of jobs queued and not started (-2); 1 when
# queued. Nothing is ever
# trimmed off a lane that a host may still take: a full lane refuses, so that no one's queued
# run silently vanishes. What is trimmed first is what the hosts are done with: an entry is acked
# when its run starts (or it is refused, or put back) but stays on the stream, so without this
# XLEN counted every job the lane ever carried and, after LANE_MAXLEN runs, refused every run for
# good. The entries before the group's oldest pending one (or, none pending, before the last one
# delivered) were all delivered and acked: they go.
_QUEUE = """
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', tonumber(ARGV[3]) - tonumber(ARGV[4]))
if redis.call('EXISTS', KEYS[1]) == 1 then
  local ok, groups = pcall(redis.call, 'XINFO', 'GROUPS', KEYS[1])
  if ok then
    for _, g in ipairs(groups) do
      local info = {}
      for i = 1, #g, 2 do info[g[i]] = g[i + 1] end
      if info['name'] == ARGV[8] then
        local done = info['last-delivered-id']
        local pending = redis.call('XPENDING', KEYS[1], ARGV[8])
        if pending[1] > 0 then done = pending[2] end
        if done and done ~= '0-0' then redis.call('XTRIM', KEYS[1], 'MINID', done) end
      end
    end
  end
end
if redis.call('XLEN', KEYS[1]) >= tonumber(ARGV[6]) then return -1 end
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[5]) then return -2 end
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[2])
redis.call('EXPIRE', KEYS[2], ARGV[4])
redis.call('SET', KEYS[3], ARGV[7], 'EX', ARGV[4])
redis.call('XADD', KEYS[4], 'MAXLEN', '0', '*', 'e', '{}')
redis.call('EXPIRE', KEYS[4], ARGV[4])
redis.call('XADD', KEYS[1], '*', 'job', ARGV[1])
return 1
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


# The most connections one process opens to Redis. A web tier follows each socket's run with a
# blocking XREAD of its own (one connection while it blocks, up to 1 s a read): redis-py's
# default pool (100, failing the 101st command at once with "Too many connections") failed 200 of
# 300 students' runs in `bench/load.py --queue` (design 0071). Past this cap a command waits for
# a connection (at most CONNECTION_WAIT_S) instead of failing.
MAX_CONNECTIONS = 1000
CONNECTION_WAIT_S = 30.0


def connect(url: str) -> Redis:
    """A client for the queue at ``url`` (``redis://HOST:PORT/DB``); the password from the URL,
    else ``JAXSCOPE_QUEUE_PASSWORD``. Commands time out (a Redis that went away is an error to
    report, never a hang); at most :data:`MAX_CONNECTIONS` at once, a command past them waits
    for one."""
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
    pool = aioredis.BlockingConnectionPool.from_url(
        url,
        max_connections=MAX_CONNECTIONS,
        timeout=CONNECTION_WAIT_S,
        socket_connect_timeout=3,
        socket_timeout=10,
        retry_on_timeout=False,
        **extra,
    )
    client = aioredis.Redis(connection_pool=pool)
    client.auto_close_connection_pool = True  # aclose() closes the pool, as from_url's does
    return client


async def drop_idle(redis: Redis) -> None:
    """Close the pooled connections no command is using: after the queue was away, those
    opened before a Redis restart are dead, and the first command on one fails ("Connection
    closed by server"), which a pool host took for the queue going away mid-run and ended a run
    that had started after the restart with ``host_lost``. The next command opens a new one."""
    with contextlib.suppress(RedisError, OSError):
        await redis.connection_pool.disconnect(inuse_connections=False)


async def ensure_groups(redis: Redis, lanes: tuple[str, ...] = LANES) -> None:
    """The consumer group on each lane's stream (made with the stream; after a Redis restart
    that lost them, again)."""
    for lane in lanes:
        try:
            await redis.xgroup_create(lane_key(lane), GROUP, id="0", mkstream=True)
        except ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise


async def queue_job(redis: Redis, job: Job, meta: str, per_client: int) -> int:
    """Put ``job`` on its lane (with its ``meta`` and its events stream): 1 when queued, -1 when
    the lane holds :data:`LANE_MAXLEN` jobs, -2 when ``job.client`` has ``per_client`` jobs
    queued and not started yet."""
    now = int((await redis.time())[0])
    queued = await redis.eval(
        _QUEUE,
        4,
        lane_key(job.lane),
        queued_key(job.client),
        meta_key(job.key),
        events_key(job.key),
        job.model_dump_json(),
        job.key,
        str(now),
        str(RUN_TTL_S),
        str(per_client),
        str(LANE_MAXLEN),
        meta,
        GROUP,
    )
    return int(queued)


async def is_queued(redis: Redis, client: str, key: str) -> bool:
    """Whether ``key``'s job waits on its lane (queued, not started)."""
    return await redis.zscore(queued_key(client), key) is not None


async def start_run(redis: Redis, job: Job, host_id: str) -> bool:
    """Mark ``job``'s run started on ``host_id``; False when it already started (anywhere)."""
    started = await redis.eval(
        _START,
        3,
        started_key(job.key),
        RUNNING,
        queued_key(job.client),
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


async def next_seq(redis: Redis, key: str) -> int:
    """The seq after the last event on ``key``'s stream (0 when none)."""
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


def disowned_message(host: str) -> str:
    return (
        f"the pool host that was running this run ({host}) no longer holds it (it lost the run "
        "queue mid-run and dropped it): the run's result is lost. Run it again"
    )


async def _host_runs(redis: Redis, host: str) -> set[str] | None:
    """The runs ``host`` says it holds (its heartbeat), or None when it says nothing (a host
    of an older version, or a list that is no list)."""
    raw = await redis.get(runs_key(host))
    if raw is None:
        return None
    try:
        runs = json.loads(raw)
    except ValueError:
        return None
    return {str(r) for r in runs} if isinstance(runs, list) else None


async def _sweep_run(redis: Redis, key: str, raw: bytes | str, now: int) -> None:
    """End the started run ``key`` (its ``running`` entry ``raw``) when its host is dead, or
    alive but no longer holding it (after :data:`DISOWN_GRACE_S`: a run starts a moment before
    its host's next heartbeat lists it)."""
    try:
        entry = json.loads(raw)
        host, client = str(entry["host"]), str(entry["client"])
        started = int(entry.get("t", 0))
    except (ValueError, KeyError, TypeError, AttributeError):
        # Not an entry this code wrote: without its client the share cannot be given back;
        # forget it (its run, if any, has no host that the sweeper could name).
        log.error("running: the entry of %s is malformed: dropped", key)
        await redis.hdel(RUNNING, key)
        return
    if await host_alive(redis, host):
        if started == 0 or now - started < DISOWN_GRACE_S:
            return
        runs = await _host_runs(redis, host)
        if runs is None or key in runs:
            return
        message = disowned_message(host)
    else:
        message = host_lost_message(host)
    meta = await redis.get(meta_key(key))
    run_id = ""
    if meta:
        try:
            run_id = str(json.loads(meta)["run_id"])[:64]
        except (ValueError, KeyError, TypeError):
            log.error("run %s: its meta is malformed: ended without its run_id", key)
    failed = RunFailed(
        kind="host_lost", message=message, run_id=run_id, seq=await next_seq(redis, key)
    )
    if await end_run(redis, key, client, failed.model_dump_json()):
        log.warning("run %s: %s", key, message)


async def sweep(redis: Redis, me: str) -> None:
    """One pass of the sweeper (every web tier and pool host runs it each heartbeat): a started
    run whose host's heartbeat expired, or whose live host no longer lists it, ends with
    ``host_lost``; a job a dead host took and had not started goes back on its lane (claimed by
    ``me`` first, so that one sweeper re-queues it). Bad data in one entry is logged and
    skipped, never the end of the pass."""
    running = await redis.hgetall(RUNNING)
    now = int((await redis.time())[0])
    for raw_key, raw in running.items():
        key = raw_key.decode() if isinstance(raw_key, bytes) else str(raw_key)
        try:
            await _sweep_run(redis, key, raw, now)
        except (RedisError, OSError):
            raise
        except Exception:  # bad data: log it, go on with the other runs
            log.exception("sweeper: run %s could not be checked", key)
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
                try:
                    await _requeue_claimed(redis, lane, entry_id, fields, consumer)
                except (RedisError, OSError):
                    raise
                except Exception:
                    log.exception("sweeper: job %r could not be re-queued", entry_id)


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
    "drop_idle",
    "end_run",
    "ensure_groups",
    "host_alive",
    "is_queued",
    "next_seq",
    "queue_job",
    "start_run",
    "stop_task",
    "sweep",
]
