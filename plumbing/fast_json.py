"""orjson behind Django's JSONField, for the columns that carry a model run's bulk.

Why: a stored run is 25-110 KB of floats (its walk-forward paths and residuals), written
once per model for every new question and read back by the combiner. The standard
library's encoder spent ~17 % of a cpu worker's time on them (`py-spy record --gil` under
new-horizon questions); orjson encodes the same floats ~20 times faster and decodes them ~8
times faster, to the same text a reader of the column would parse.

JSONField takes a `json.JSONEncoder` / `json.JSONDecoder` class and calls
`json.dumps(value, cls=...)` / `json.loads(text, cls=...)`, which build one and call its
`encode` / `decode`: these two classes answer those calls with orjson. The column's type
does not change; only Django's state knows the classes. One difference: orjson writes NaN
and infinities as null, where the standard encoder writes `NaN`, which neither
PostgreSQL's jsonb nor SQLite's JSON check accepts (the row was refused before).
"""

from __future__ import annotations

import json
from typing import Any

import orjson

OPTIONS = orjson.OPT_NON_STR_KEYS  # integer keys become strings, as the standard encoder does


class Encoder(json.JSONEncoder):
    """The standard encoder's output for what a run holds (dicts, lists, str, int, float,
    bool, None); anything orjson refuses goes through the standard encoder."""

    def encode(self, o: Any) -> str:
        try:
            return orjson.dumps(o, option=OPTIONS).decode()
        except TypeError:
            return super().encode(o)


class Decoder(json.JSONDecoder):
    def decode(self, s: str, _w: Any = None) -> Any:
        return orjson.loads(s)
