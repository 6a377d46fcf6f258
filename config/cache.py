"""JSON for Django's Redis cache, instead of pickle.

Django's RedisCache pickles values by default, so whoever can write to Redis could make a
web process run code when it reads them back. Nothing in the service needs more than
JSON; counters stay plain integers, as Redis' INCR wants them.
"""

from __future__ import annotations

import json
from typing import Any


class JSONSerializer:
    def dumps(self, obj: Any) -> bytes | int:
        if type(obj) is int:
            return obj
        return json.dumps(obj, separators=(",", ":")).encode()

    def loads(self, data: bytes) -> Any:
        try:
            return int(data)
        except ValueError:
            return json.loads(data)
