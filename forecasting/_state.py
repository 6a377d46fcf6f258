"""Binary envelope for fitted model state.

Why: generations of fitted models are stored and shipped between processes, so a
blob must say what it is (model, layout version, params) and fail loudly with
StateError when it is truncated, corrupted or from an incompatible layout. The
payload is an ``.npz`` archive loaded with ``allow_pickle=False``, so loading a
blob never executes code.
"""

from __future__ import annotations

import hashlib
import io
import json
import struct
import zipfile
from typing import Any

import numpy as np

MAGIC = b"FCST"
FORMAT_VERSION = 1
_PREFIX = struct.Struct(">4sBI")  # magic, format version, header length


def pack_state(header: dict[str, Any], arrays: dict[str, np.ndarray]) -> bytes:
    """Serialize a JSON header and named arrays into one self-describing blob."""
    buffer = io.BytesIO()
    named: dict[str, Any] = {key: np.asarray(value) for key, value in arrays.items()}
    np.savez(buffer, **named)
    payload = buffer.getvalue()
    full_header = {**header, "payload_sha256": hashlib.sha256(payload).hexdigest()}
    raw_header = json.dumps(full_header, sort_keys=True, allow_nan=False).encode("utf-8")
    return _PREFIX.pack(MAGIC, FORMAT_VERSION, len(raw_header)) + raw_header + payload


def read_header(blob: bytes) -> tuple[dict[str, Any], bytes]:
    """Split a blob into its header and payload, checking magic, version and checksum.

    Raises ValueError with a human message; callers convert it to StateError.
    """
    if not isinstance(blob, bytes | bytearray | memoryview):
        raise ValueError(f"state must be bytes, got {type(blob).__name__}")
    blob = bytes(blob)
    if len(blob) < _PREFIX.size:
        raise ValueError(f"state is too short ({len(blob)} bytes)")
    magic, version, header_len = _PREFIX.unpack_from(blob)
    if magic != MAGIC:
        raise ValueError("state does not start with the forecaster magic bytes")
    if version != FORMAT_VERSION:
        raise ValueError(
            f"state format version {version} is not supported (expected {FORMAT_VERSION})"
        )
    end = _PREFIX.size + header_len
    if end > len(blob):
        raise ValueError("state header is truncated")
    try:
        header = json.loads(blob[_PREFIX.size : end].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"state header is not valid JSON: {exc}") from exc
    if not isinstance(header, dict):
        raise ValueError("state header is not a JSON object")
    payload = blob[end:]
    if hashlib.sha256(payload).hexdigest() != header.get("payload_sha256"):
        raise ValueError("state payload checksum does not match (corrupted or truncated)")
    return header, payload


def load_arrays(payload: bytes) -> dict[str, np.ndarray]:
    """Read the named arrays of a payload without ever unpickling objects."""
    try:
        with np.load(io.BytesIO(payload), allow_pickle=False) as archive:
            return {key: archive[key] for key in archive.files}
    except (ValueError, OSError, zipfile.BadZipFile, EOFError) as exc:
        raise ValueError(f"state payload is unreadable: {exc}") from exc
