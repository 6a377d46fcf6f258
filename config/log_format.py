"""The plain log format, one record per line whatever the message holds.

Why: a message quotes what a person typed (a rollback's reason, a symbol, a header). A
newline in it would start a line of its own, shaped like any other record, in the plain
format: a forged entry in a log that people and greps trust. This formatter escapes
control characters (and Unicode's line and paragraph separators) in the formatted line,
the way `repr` writes them (`\\n`, `\\x1b`, `\\u2028`), for every message from every
source. A traceback is still appended on its own lines below its record, as Python
formats it. The JSON format (python-json-logger) escapes them already.
"""

from __future__ import annotations

import logging

_BREAKING = [*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0), 0x2028, 0x2029]
ESCAPES = {code: repr(chr(code))[1:-1] for code in _BREAKING}


def one_line(text: str) -> str:
    """`text` with every control character written as its escape."""
    return text.translate(ESCAPES)


class OneLineFormatter(logging.Formatter):
    """logging.Formatter with the record's line (not its traceback) made one line."""

    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802 (logging's name)
        return one_line(super().formatMessage(record))
