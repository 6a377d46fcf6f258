"""What holds secrets is readable by its owner only, however it came to exist.

Why: `var/` holds the SQLite database (API tokens in plain text, session keys, password
hashes), the generated secret key and metrics token, Redis's password, ACL and append-only
file. A process's umask decides the mode of what it creates: under the common 022 a
folder made as a side effect (`mkdir -p var/redis`) is 0755 and SQLite's new database
file 0644, readable by every local user. Settings call these at every start, so a tree
made before, by another tool or under another umask, is put right too.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

OWNER_DIR, OWNER_FILE = 0o700, 0o600
SQLITE_SIDECARS = ("-wal", "-shm", "-journal")


def _tighten(path: Path, mode: int) -> None:
    """Set `mode` when group or others have any bit, on what this user owns."""
    info = path.stat()
    if stat.S_IMODE(info.st_mode) & 0o077 and info.st_uid == os.geteuid():
        path.chmod(mode)


def owner_only_dir(path: Path) -> None:
    """The folder (and any missing parent), 0700."""
    path.mkdir(parents=True, exist_ok=True, mode=OWNER_DIR)
    _tighten(path, OWNER_DIR)


def owner_only_file(path: Path) -> None:
    """The file, created empty at 0600 when missing (an empty file is an empty SQLite
    database), its mode set to 0600 when group or others could read it."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, OWNER_FILE))
    except FileExistsError:
        _tighten(path, OWNER_FILE)


def owner_only_sqlite(path: Path) -> None:
    """The database file and the write-ahead log, shared memory and journal beside it
    (SQLite gives those the database file's mode when it creates them)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=OWNER_DIR)
    owner_only_file(path)
    for suffix in SQLITE_SIDECARS:
        sidecar = path.with_name(path.name + suffix)
        if sidecar.exists():
            _tighten(sidecar, OWNER_FILE)
