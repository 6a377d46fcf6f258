"""JSON stored compressed: a column PostgreSQL keeps as bytes, not as jsonb.

Why: a done prediction's result is ~13 KB of JSON written once by a worker and read back
whole, never queried by its keys. As jsonb, PostgreSQL parsed it, compressed it with pglz
and moved it out of line on every write: the row's final `UPDATE` cost the server ~1.0 ms of
CPU, a fifth of a warm request's. Compressed by the worker (zlib, level 1: ~4.8 KB) it is
stored as it comes, for ~0.3 ms, and the database is the part every host shares while the
workers' CPU grows with the hosts.

The value is orjson's text (plumbing/fast_json.py) compressed; `None` stays SQL NULL.
"""

from __future__ import annotations

import zlib
from typing import Any

import orjson
from django.db import models

from plumbing.fast_json import Encoder

LEVEL = 1  # level 6 saves another 8 % of the bytes for 70 % more of the worker's time


def pack(value: Any) -> bytes:
    return zlib.compress(Encoder().encode(value).encode(), LEVEL)


def unpack(data: bytes | memoryview) -> Any:
    return orjson.loads(zlib.decompress(data))


class PackedJSONField(models.BinaryField):
    """A JSON value in a binary column; Python code sees the value, never the bytes."""

    description = "JSON, compressed"
    # What type checkers (django-stubs) take the attribute to be: the value, not bytes.
    _pyi_private_set_type: Any
    _pyi_private_get_type: Any

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("editable", False)
        super().__init__(*args, **kwargs)

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> Any:
        return None if value is None else unpack(value)

    def to_python(self, value: Any) -> Any:
        return unpack(value) if isinstance(value, bytes | memoryview) else value

    def get_prep_value(self, value: Any) -> Any:
        return None if value is None else pack(value)

    def value_to_string(self, obj: models.Model) -> Any:
        """`dumpdata` writes the value itself, as a JSONField would."""
        return self.value_from_object(obj)
