"""Helpers for the live pages' tests: staff sessions, async scenarios, and the ASGI server
and relay as real processes (`live_stack`).

A plain module, not a conftest: the browser tests live in tests/browser/ (they must share
its one Playwright instance per session) and import what they need from here.
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

from channels.db import database_sync_to_async
from channels.layers import channel_layers
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.auth.models import User
from django.contrib.sessions.backends.db import SessionStore
from django.db import connections

from devstack.redis import free_port
from devstack.supervisor import spawn
from launch import process_catalog
from plumbing.redis_client import get_redis
from predictions.progress import EVENTS_CHANNEL
from tests.support.processes import ROOT, database_url_for_workers, stop_process
from tests.support.waiting import eventually

STAFF_PASSWORD = "correct-horse-battery"
LIVE_LOG = ROOT / "var" / f"test-live-{os.getpid()}.log"


def run_async(scenario: Callable[[], Awaitable[None]]) -> None:
    """Run an async test scenario on its own loop in its own thread.

    Playwright's sync API may hold an event loop on the test thread (the session-wide
    browser), where async_to_sync refuses to run. The consumers' ORM calls run in asgiref's
    executor thread, so tests using this need committed rows: django_db(transaction=True).

    Each scenario gets a new channel layer: a layer keeps the receive lock and connections
    of the loop that used it, and an earlier scenario's loop may have closed with a receive
    still counted ("... is bound to a different event loop").
    """
    channel_layers.backends.clear()

    async def main() -> None:
        try:
            await scenario()
        finally:
            await database_sync_to_async(connections.close_all)()

    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(asyncio.run, main()).result()


def make_user(username: str, *, staff: bool) -> User:
    return User.objects.create_user(username, password=STAFF_PASSWORD, is_staff=staff)


def session_for(user: User) -> str:
    """A logged-in session, as Django's login() would store it; returns its key."""
    session = SessionStore()
    session[SESSION_KEY] = str(user.pk)
    session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    session[HASH_SESSION_KEY] = user.get_session_auth_hash()
    session.create()
    return session.session_key


def ws_headers(session_key: str | None = None, origin: str = "http://127.0.0.1") -> list:
    headers = [(b"origin", origin.encode())]
    if session_key:
        headers.append((b"cookie", f"sessionid={session_key}".encode()))
    return headers


def login_in_browser(tab: Any, base_url: str, username: str, next_path: str) -> None:
    """Through Django's admin login form, as an operator would."""
    tab.goto(f"{base_url}/admin/login/?next={next_path}")
    tab.fill("#id_username", username)
    tab.fill("#id_password", STAFF_PASSWORD)
    tab.click("input[type=submit]")
    tab.wait_for_url(f"**{next_path}")


def _wait_until(
    check: Any, procs: list[subprocess.Popen[bytes]], timeout: float, what: str
) -> None:
    def ready() -> bool:
        if any(proc.poll() is not None for proc in procs):
            raise RuntimeError(f"{what}: a process exited early; see {LIVE_LOG}")
        return bool(check())

    eventually(ready, timeout, f"{what} (see {LIVE_LOG})", 0.1)


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


@contextmanager
def live_stack() -> Iterator[int]:
    """uvicorn (the ASGI app) and the relay, as `make run` starts them, on the test DB
    (call it once the test database exists). Yields the websocket port; pages find it
    through settings.WS_PORT."""
    port = free_port()
    env = {**os.environ, "DATABASE_URL": database_url_for_workers(), "WS_PORT": str(port)}
    LIVE_LOG.parent.mkdir(exist_ok=True)
    log = open(LIVE_LOG, "ab")  # noqa: SIM115 - closed when the processes end
    relays_before = get_redis().pubsub_numsub(EVENTS_CHANNEL)[0][1]
    procs = [
        spawn(process_catalog.websocket("127.0.0.1", port).argv(), env=env, log=log),
        spawn([*process_catalog.relay().argv(), "--tick", "0.2"], env=env, log=log),
    ]
    try:
        _wait_until(lambda: _accepts(port), procs, 60, "uvicorn listening")
        _wait_until(
            lambda: get_redis().pubsub_numsub(EVENTS_CHANNEL)[0][1] > relays_before,
            procs,
            60,
            "the relay subscribing",
        )
        yield port
    finally:
        for proc in procs:
            stop_process(proc)
        log.close()
