"""Each stream client's bounds, measured and enforced by the consumer at every step.

Why: a stream client writes to Redis before the service reads anything, and reads with
consumer groups of its own; left alone, one client filled Redis with 256 KiB entries, held
every answer forever with a group that never acknowledged, and made the trimming walk
20,000 groups every second. So, per client (the settings are in config/settings.py):

* its input stream holds at most QUEUE_CLIENT_MAX_INPUT entries (the oldest beyond it are
  trimmed, a log line); entries over QUEUE_MAX_ENTRY_BYTES and questions beyond
  QUEUE_CLIENT_MAX_PENDING in progress are answered `refused` (streams/stream_consumer.py);
* its output stream holds at most QUEUE_CLIENT_OUTPUT_MAXLEN answers, whatever groups
  read it; at most QUEUE_CLIENT_MAX_GROUPS consumer groups of at most
  QUEUE_CLIENT_MAX_CONSUMERS consumers each (the excess destroyed, a log line);
* it holds at most QUEUE_CLIENT_MAX_CONNECTIONS connections (the newest beyond are
  closed each second, `streams.redis_users.cap_connections`), each within the queue
  Redis's client bounds, and may subscribe to one channel, its wake-ups;
* its streams and live answers hold at most QUEUE_CLIENT_MAX_MEMORY_MB, measured with
  MEMORY USAGE and the bytes of answers written (counted by the hour they expire in):
  beyond, it is cut off for QUEUE_CLIENT_COOLDOWN seconds. Its Redis user is switched
  off and its connections closed, its waiting questions and its output stream dropped
  (each answer stays readable by id until it expires); then its user is switched on again.

No step walks all of a client's groups: the group count comes from XINFO STREAM (O(1)),
and a client with more than DESTROY_PER_STEP groups over its cap is cut off, which deletes
its output stream with every group in one command. The default client (the service's own
credentials) gets the stream bounds but is never cut off.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from dataclasses import dataclass
from typing import Any

import redis
from django.conf import settings
from stockserve_client import protocol
from stockserve_client.protocol import ClientKeys

from plumbing.redis_client import text
from streams.redis_users import stream_client_rules

log = logging.getLogger(__name__)
USAGE_PREFIX = "stockserve:queue:usage:"  # + name: hour an answer expires in -> its bytes
CUTOFFS_KEY = "stockserve:queue:cutoffs"  # name -> {"until": epoch s, "reason": sentence}
DESTROY_PER_STEP = 100  # groups over the cap destroyed one by one; beyond, a cut-off
ANSWER_OVERHEAD = 64  # bytes Redis spends on a key besides its name and value
HOUR = 3600
USER_PREFIX = "queue-"  # + the client's name: its Redis user


def user_name(client: str) -> str:
    """The Redis user of a named stream client (`manage.py stream_clients add`)."""
    return f"{USER_PREFIX}{client}"


def renew_rules(server: redis.Redis, keys: ClientKeys) -> bool:
    """Give the client's user, if it has one, the current rules (`stream_client_rules`),
    keeping its password and on/off: a user made by an older release may hold more (a
    channel pattern) than the rules allow now. True when it has a user."""
    user = user_name(keys.name)
    if not server.acl_getuser(user):
        return False
    server.execute_command("ACL", "SETUSER", user, *stream_client_rules(keys))
    with contextlib.suppress(redis.ResponseError):  # no ACL file: renewed at each start
        server.execute_command("ACL", "SAVE")
    return True


def usage_key(client: str) -> str:
    return f"{USAGE_PREFIX}{client}"


def answer_accounting(answer_key: str, answer: str) -> tuple[int, int]:
    """(the hour the answer's key expires in, the bytes it holds), for its client's usage."""
    expires_hour = int((time.time() + settings.QUEUE_ANSWER_TTL) // HOUR) + 1
    return expires_hour, len(answer_key) + len(answer.encode()) + ANSWER_OVERHEAD


@dataclass
class Usage:
    """One client's use of the queue's Redis at one step."""

    pending: int = 0  # questions read and not yet answered, by every consumer
    waiting: int = 0  # entries in its input stream (read or not)
    groups: int = 0  # consumer groups on its output stream
    input_bytes: int = 0
    output_bytes: int = 0
    answer_bytes: int = 0  # answers written whose keys have not expired yet (at most)

    @property
    def memory(self) -> int:
        return self.input_bytes + self.output_bytes + self.answer_bytes


def _int(value: Any) -> int:
    return 0 if value is None or isinstance(value, Exception) else int(value)


def measure(server: redis.Redis, clients: list[ClientKeys]) -> dict[str, Usage]:
    """Every client's usage in two round trips, none of them O(its groups) unbounded."""
    pipe = server.pipeline(transaction=False)
    for keys in clients:
        pipe.xpending(keys.input, protocol.SERVER_GROUP)
        pipe.xlen(keys.input)
        pipe.memory_usage(keys.input)
        pipe.xinfo_stream(keys.output)  # its group count, O(1)
        pipe.hgetall(usage_key(keys.name))
    replies = pipe.execute(raise_on_error=False)
    now_hour = int(time.time() // HOUR)
    found: dict[str, Usage] = {}
    for i, keys in enumerate(clients):
        pending, waiting, input_bytes, stream, hours = replies[5 * i : 5 * i + 5]
        usage = Usage(waiting=_int(waiting), input_bytes=_int(input_bytes))
        if isinstance(pending, dict):
            usage.pending = int(pending.get("pending") or 0)
        if isinstance(stream, dict):
            usage.groups = _int(stream.get("groups"))
        if isinstance(hours, dict):
            live = {int(h): int(b) for h, b in hours.items() if int(h) >= now_hour}
            usage.answer_bytes = sum(live.values())
            gone = [h for h in hours if int(h) < now_hour]
            if gone:
                server.hdel(usage_key(keys.name), *gone)
        found[keys.name] = usage
    return found


def measure_outputs(
    server: redis.Redis, clients: list[ClientKeys], usage: dict[str, Usage]
) -> None:
    """The output streams' memory, once their groups are within bounds (MEMORY USAGE
    visits every group and consumer of a stream)."""
    fit = [k for k in clients if usage[k.name].groups <= settings.QUEUE_CLIENT_MAX_GROUPS]
    pipe = server.pipeline(transaction=False)
    for keys in fit:
        pipe.memory_usage(keys.output)
    for keys, size in zip(fit, pipe.execute(raise_on_error=False), strict=True):
        usage[keys.name].output_bytes = _int(size)


def trim_input(server: redis.Redis, keys: ClientKeys, usage: Usage) -> None:
    """At most QUEUE_CLIENT_MAX_INPUT entries wait: the oldest beyond it are dropped."""
    bound = settings.QUEUE_CLIENT_MAX_INPUT
    if usage.waiting <= bound:
        return
    dropped = int(server.xtrim(keys.input, maxlen=bound, approximate=False))
    usage.waiting -= dropped
    log.warning(
        "stream client %s: %d questions waited, over its bound of %d; the oldest %d dropped",
        keys.name, usage.waiting + dropped, bound, dropped,
    )  # fmt: skip


def cap_groups(server: redis.Redis, keys: ClientKeys, usage: Usage) -> str:
    """Destroy groups beyond QUEUE_CLIENT_MAX_GROUPS and groups with more consumers than
    QUEUE_CLIENT_MAX_CONSUMERS. Returns a reason to cut the client off when it holds more
    groups than one step destroys, else ''."""
    cap = settings.QUEUE_CLIENT_MAX_GROUPS
    if usage.groups > cap + DESTROY_PER_STEP:
        return f"it made {usage.groups} consumer groups, over its bound of {cap}"
    if not usage.groups:
        return ""
    groups: Any = server.xinfo_groups(keys.output)
    doomed = [g["name"] for g in groups[cap:]]
    crowded = [
        g["name"] for g in groups[:cap] if g["consumers"] > settings.QUEUE_CLIENT_MAX_CONSUMERS
    ]
    if doomed or crowded:
        pipe = server.pipeline(transaction=False)
        for name in doomed + crowded:
            pipe.xgroup_destroy(keys.output, name)
        pipe.execute()
        usage.groups -= len(doomed) + len(crowded)
        log.warning(
            "stream client %s: destroyed %d consumer groups over its bound of %d and %d with "
            "more than %d consumers",
            keys.name, len(doomed), cap, len(crowded), settings.QUEUE_CLIENT_MAX_CONSUMERS,
        )  # fmt: skip
    return ""


def over_memory(usage: Usage) -> str:
    bound = settings.QUEUE_CLIENT_MAX_MEMORY_MB * 1024 * 1024
    if usage.memory <= bound:
        return ""
    return (
        f"its streams and answers held {usage.memory / 2**20:.1f} MB, over its bound of "
        f"{settings.QUEUE_CLIENT_MAX_MEMORY_MB} MB"
    )


def cut_off(server: redis.Redis, keys: ClientKeys, reason: str) -> None:
    """Switch the client's user off and close its connections, drop what it made the
    service hold (its waiting questions, its output stream with every group), and note
    until when. Freeing comes first: a Redis at maxmemory refuses the note until then."""
    user = user_name(keys.name)
    if server.acl_getuser(user):
        server.execute_command("ACL", "SETUSER", user, "off")
        server.execute_command("CLIENT", "KILL", "USER", user)  # its connections: 0 or more
    pipe = server.pipeline(transaction=False)
    pipe.xtrim(keys.input, maxlen=0, approximate=False)
    pipe.delete(keys.output)
    pipe.execute()
    until = time.time() + settings.QUEUE_CLIENT_COOLDOWN
    note = json.dumps({"until": until, "reason": reason})
    if server.hsetnx(CUTOFFS_KEY, keys.name, note):  # one consumer says so
        log.warning(
            "stream client %s cut off for %d s: %s; its waiting questions and its output "
            "stream were dropped",
            keys.name, settings.QUEUE_CLIENT_COOLDOWN, reason,
        )  # fmt: skip


def cutoffs(server: redis.Redis) -> dict[str, dict[str, Any]]:
    """Clients cut off now: name -> {"until", "reason"}."""
    raw: Any = server.hgetall(CUTOFFS_KEY)
    return {text(name): json.loads(note) for name, note in raw.items()}


def switch_on_again(server: redis.Redis, now: float | None = None) -> list[str]:
    """Clients whose cooldown is over get their user back (once, by one consumer)."""
    now = time.time() if now is None else now
    back = []
    for name, note in cutoffs(server).items():
        if note["until"] > now or not server.hdel(CUTOFFS_KEY, name):
            continue
        if server.acl_getuser(user_name(name)):
            server.execute_command("ACL", "SETUSER", user_name(name), "on")
            log.warning("stream client %s: its cooldown is over, its user is on again", name)
        back.append(name)
    return back


def enforce(server: redis.Redis, clients: list[ClientKeys]) -> dict[str, Usage]:
    """One step of the bounds for every client; returns their usage (pending counts)."""
    usage = measure(server, clients)
    for keys in clients:
        trim_input(server, keys, usage[keys.name])
    named = [k for k in clients if k.name != protocol.DEFAULT_CLIENT]
    for keys in named:
        reason = cap_groups(server, keys, usage[keys.name])
        if reason:
            cut_off(server, keys, reason)
            usage[keys.name] = Usage()
    measure_outputs(server, named, usage)
    for keys in named:
        reason = over_memory(usage[keys.name])
        if reason:
            cut_off(server, keys, reason)
            usage[keys.name] = Usage(answer_bytes=usage[keys.name].answer_bytes)
    return usage


def trim_read(client: redis.Redis, stream: str, ttl: int) -> None:
    """Trim a client's output stream below the oldest answer some group has not yet
    acknowledged (its oldest pending entry, else what it was last given); a stream no
    group reads keeps its answers as long as their keys live (`ttl` seconds).

    Only a stream whose groups are within QUEUE_CLIENT_MAX_GROUPS is walked group by group,
    skipping groups over QUEUE_CLIENT_MAX_CONSUMERS; one beyond is trimmed by age alone
    (its answers are capped at QUEUE_CLIENT_OUTPUT_MAXLEN anyway), so the work per stream
    is bounded whatever a client creates."""
    try:
        info: Any = client.xinfo_stream(stream)
    except redis.ResponseError:  # no stream yet
        return
    floors = []
    if 0 < int(info["groups"]) <= settings.QUEUE_CLIENT_MAX_GROUPS:
        groups: Any = client.xinfo_groups(stream)
        for group in groups:
            if group["consumers"] > settings.QUEUE_CLIENT_MAX_CONSUMERS:
                continue
            if group["pending"]:
                oldest: Any = client.xpending(stream, group["name"])
                floors.append(text(oldest["min"]))
            else:
                floors.append(text(group["last-delivered-id"]))
    if not floors:
        floors.append(f"{int((time.time() - ttl) * 1000)}-0")
    floor = min(floors, key=lambda i: tuple(int(part) for part in i.split("-")))
    client.xtrim(stream, minid=floor, approximate=False)
