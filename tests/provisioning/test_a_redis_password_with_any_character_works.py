"""A Redis password with "/", "#", spaces, quotes or backslashes: the playbooks' REDIS_URL
parses back to it, and a real redis-server reading the rendered requirepass accepts it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import jinja2
import pytest
import redis
import yaml
from redis.connection import parse_url

from devstack.redis import free_port, redis_server_binary
from tests.support.waiting import eventually

PLAYBOOKS = Path(__file__).resolve().parents[2] / "playbooks"
PASSWORDS = ["a/b/c-long-password", 'with "quotes" and # hash', "back\\slash:@ and spaces"]


def render(template: str, **values: object) -> str:
    return (
        jinja2.Environment(undefined=jinja2.StrictUndefined).from_string(template).render(**values)
    )


@pytest.mark.parametrize("password", PASSWORDS)
def test_the_url_carries_the_password_intact(password):
    template = yaml.safe_load((PLAYBOOKS / "group_vars/all/main.yml").read_text())[
        "stockserve_redis_url"
    ]
    url = render(
        template,
        stockserve_redis_password=password,
        stockserve_redis_host="10.0.0.5",
        stockserve_redis_port=6379,
    )
    parsed = parse_url(url)
    assert parsed["password"] == password and parsed["host"] == "10.0.0.5"


@pytest.mark.parametrize("password", PASSWORDS)
def test_redis_accepts_the_rendered_requirepass(tmp_path, password):
    line = next(
        line
        for line in (PLAYBOOKS / "roles/redis/templates/redis.conf.j2").read_text().splitlines()
        if line.startswith("requirepass")
    )
    port = free_port()
    conf = tmp_path / "redis.conf"
    requirepass = render(line, stockserve_redis_password=password)
    conf.write_text(f'port {port}\nbind 127.0.0.1\nsave ""\n{requirepass}\n')
    server = subprocess.Popen([redis_server_binary(), str(conf)], stdout=subprocess.DEVNULL)
    try:
        client = redis.Redis(port=port, password=password, socket_connect_timeout=1)

        def listening() -> bool:  # (or it exited: it refused the rendered config)
            assert server.poll() is None, "redis-server refused the rendered config"
            try:
                return bool(client.ping())
            except redis.ConnectionError:
                return False

        eventually(listening, 10, "redis-server listening")
        with pytest.raises(redis.AuthenticationError):
            redis.Redis(port=port, password="wrong").ping()
    finally:
        server.terminate()
        server.wait()
