"""Open-loop HTTP load at a fixed rate, measured from each request's scheduled time.

    python -m loadtests.httpload http://127.0.0.1:8000/api/v1/predictions/ --rate 1000 \
        --seconds 10 --body '{"symbol": "AAPL", "horizon": 5}'

Why not wrk: wrk is closed-loop (each connection waits for its answer before it sends
again), so a slow server lowers its own load and its tail latency looks better than it is.
Here every request has a send time fixed in advance; when the connections are all busy it
waits for one, and that wait counts in its latency (no coordinated omission). One asyncio
loop (uvloop when installed) and raw HTTP/1.1 keep-alive connections keep the client's own
CPU small, since it shares the machine with the server.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from loadtests.latencies import percentile


@dataclass
class OpenLoopResult:
    rate: float
    seconds: float
    latencies_ms: list[float] = field(default_factory=list)
    statuses: dict[int, int] = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=dict)
    elapsed_s: float = 0.0

    @property
    def sent(self) -> int:
        return sum(self.statuses.values()) + sum(self.errors.values())

    @property
    def failures(self) -> int:
        bad = sum(n for code, n in self.statuses.items() if not 200 <= code < 300)
        return bad + sum(self.errors.values())

    def summary(self) -> dict[str, Any]:
        ok = self.latencies_ms
        return {
            "target_rps": self.rate,
            "achieved_rps": round(self.sent / self.elapsed_s, 1) if self.elapsed_s else None,
            "requests": self.sent,
            "failures": self.failures,
            "statuses": dict(sorted(self.statuses.items())),
            "errors": self.errors,
            "p50_ms": percentile(ok, 50),
            "p99_ms": percentile(ok, 99),
            "max_ms": max(ok) if ok else None,
        }


def _request_bytes(url: str, method: str, body: bytes, headers: dict[str, str]) -> bytes:
    parts = urlsplit(url)
    target = parts.path + (f"?{parts.query}" if parts.query else "")
    lines = [f"{method} {target} HTTP/1.1", f"Host: {parts.netloc}", "Connection: keep-alive"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    if body:
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


async def _read_response(reader: asyncio.StreamReader) -> int:
    """Read one whole response (Content-Length or chunked); its status."""
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    headers = {}
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        headers[name.strip().lower()] = value.strip()
    if headers.get(b"transfer-encoding", b"").lower() == b"chunked":
        while size := int((await reader.readuntil(b"\r\n")).strip(), 16):
            await reader.readexactly(size + 2)
        await reader.readuntil(b"\r\n")
    elif length := int(headers.get(b"content-length", b"0")):
        await reader.readexactly(length)
    return status


class _Connections:
    """Keep-alive connections, opened on demand up to a bound; idle ones are reused."""

    def __init__(self, host: str, port: int, limit: int) -> None:
        self.host, self.port = host, port
        self.idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
        self.slots = asyncio.Semaphore(limit)

    async def acquire(
        self, fresh: bool = False
    ) -> tuple[tuple[asyncio.StreamReader, asyncio.StreamWriter], bool]:
        """A connection, and whether it was used before (it may have been closed since)."""
        await self.slots.acquire()
        if self.idle and not fresh:
            return self.idle.pop(), True
        try:
            return await asyncio.open_connection(self.host, self.port), False
        except BaseException:
            self.slots.release()
            raise

    def release(self, conn: tuple[asyncio.StreamReader, asyncio.StreamWriter], ok: bool) -> None:
        if ok:
            self.idle.append(conn)
        else:
            conn[1].close()
        self.slots.release()

    def close(self) -> None:
        for _, writer in self.idle:
            writer.close()


async def _one(
    conns: _Connections, payload: bytes, due: float, timeout: float, result: OpenLoopResult
) -> None:
    conn: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
    ok = False
    status = 0
    try:
        for attempt in range(2):
            connection, reused = await asyncio.wait_for(conns.acquire(fresh=attempt > 0), timeout)
            conn = connection
            reader, writer = connection
            writer.write(payload)
            try:
                status = await asyncio.wait_for(_read_response(reader), timeout)
                break
            except asyncio.IncompleteReadError as exc:
                # The server closed an idle keep-alive connection before reading the request
                # (gunicorn closes them after 2 s): send it again on a new one, as HTTP
                # clients do; anything else, or a second failure, is an error.
                if attempt or not reused or exc.partial:
                    raise
                conns.release(connection, ok=False)
                conn = None
        ok = True
        result.statuses[status] = result.statuses.get(status, 0) + 1
        if 200 <= status < 300:
            result.latencies_ms.append((time.perf_counter() - due) * 1000)
    except TimeoutError:
        result.errors["timeout"] = result.errors.get("timeout", 0) + 1
    except (OSError, asyncio.IncompleteReadError, ValueError) as exc:
        kind = type(exc).__name__
        result.errors[kind] = result.errors.get(kind, 0) + 1
    finally:
        if conn is not None:
            conns.release(conn, ok)


async def open_loop(
    url: str,
    rate: float,
    seconds: float,
    *,
    method: str = "POST",
    body: bytes = b"",
    headers: dict[str, str] | None = None,
    connections: int = 256,
    timeout: float = 10.0,
) -> OpenLoopResult:
    """Send `rate` requests a second for `seconds`, each at its scheduled time."""
    parts = urlsplit(url)
    conns = _Connections(parts.hostname or "127.0.0.1", parts.port or 80, connections)
    payload = _request_bytes(
        url, method, body, {"Content-Type": "application/json", **(headers or {})}
    )
    result = OpenLoopResult(rate, seconds)
    total = max(1, round(rate * seconds))
    start = time.perf_counter()
    pending = []
    for i in range(total):
        due = start + i / rate
        delay = due - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        pending.append(asyncio.create_task(_one(conns, payload, due, timeout, result)))
    await asyncio.gather(*pending)
    result.elapsed_s = time.perf_counter() - start
    conns.close()
    return result


def run(url: str, rate: float, seconds: float, **kwargs: Any) -> OpenLoopResult:
    try:
        import uvloop

        return uvloop.run(open_loop(url, rate, seconds, **kwargs))
    except ImportError:
        return asyncio.run(open_loop(url, rate, seconds, **kwargs))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url")
    parser.add_argument("--rate", type=float, default=100.0, help="requests per second")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--method", default="POST")
    parser.add_argument("--body", default="")
    parser.add_argument("--connections", type=int, default=256)
    args = parser.parse_args()
    result = run(
        args.url,
        args.rate,
        args.seconds,
        method=args.method,
        body=args.body.encode(),
        connections=args.connections,
    )
    print(json.dumps(result.summary(), indent=2))
    return 0 if result.failures == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
