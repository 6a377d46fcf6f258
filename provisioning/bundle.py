"""Pack the application code into one reproducible archive, named by its content.

    python provisioning/bundle.py SOURCE_DIR OUT_DIR

The `common` role runs this on the controller and unpacks the archive into
`releases/<version>/` on each host. The same code gives the same bytes (sorted entries,
fixed times and owners), so a second run copies nothing and reports no change. Standard
library only: it runs before any Django set-up, with the controller's Python.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import shutil
import sys
import tarfile
import tempfile
from pathlib import Path

# What a worker or web host runs; tests, playbooks and local state stay behind.
INCLUDE = (
    "manage.py",
    "requirements.txt",
    "config",
    "launch",
    "plumbing",
    "forecasting",
    "marketdata",
    "registry",
    "predictions",
    "market",
    "workers",
    "streams",
    "batch",
    "api",
    "provisioning",
    "webui",
)
SKIP_DIRS = {"__pycache__", "migrations_backup", "node_modules"}
SKIP_SUFFIXES = (".pyc", ".pyo", ".sqlite3", ".log")


def source_files(root: Path) -> list[Path]:
    """Every file to ship, relative to `root`, in a stable order."""
    files: list[Path] = []
    for name in INCLUDE:
        path = root / name
        if path.is_file():
            files.append(Path(name))
            continue
        for dirpath, dirnames, filenames in os.walk(path):
            dirnames[:] = sorted(
                d for d in dirnames if d not in SKIP_DIRS and not d.startswith(".")
            )
            for filename in sorted(filenames):
                if filename.startswith(".") or filename.endswith(SKIP_SUFFIXES):
                    continue
                files.append((Path(dirpath) / filename).relative_to(root))
    return sorted(files)


def snapshot(root: Path, dest: Path) -> Path:
    """A frozen copy of what ships, as a release checkout would be: edits made to `root`
    while the copy is in use (a test, a benchmark) do not become a new release."""
    for rel in source_files(root):
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / rel, dest / rel)
    return dest


def content_version(root: Path, files: list[Path]) -> str:
    digest = hashlib.sha256()
    for rel in files:
        digest.update(str(rel).encode() + b"\0")
        digest.update((root / rel).read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def _tar_bytes(root: Path, files: list[Path]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for rel in files:
            data = (root / rel).read_bytes()
            info = tarfile.TarInfo(str(rel))
            info.size = len(data)
            info.mtime = 0
            info.mode = 0o755 if os.access(root / rel, os.X_OK) else 0o644
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def build(root: Path, out_dir: Path) -> dict[str, object]:
    """Write `stockserve-<version>.tar.gz` unless it is there; say which, as a dict."""
    root = root.resolve()
    files = source_files(root)
    if not files:
        raise SystemExit(f"No application files under {root}")
    version = content_version(root, files)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"stockserve-{version}.tar.gz"
    created = not path.exists()
    if created:
        # A private temporary name: two runs may pack the same tree at the same moment.
        fd, tmp = tempfile.mkstemp(dir=out_dir, suffix=".part")
        with os.fdopen(fd, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz:
            gz.write(_tar_bytes(root, files))
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
        _prune(out_dir, keep=path)
    return {"path": str(path), "version": version, "files": len(files), "created": created}


def _prune(out_dir: Path, keep: Path, count: int = 5) -> None:
    """Keep the newest few bundles (hosts that lag behind can still be given theirs)."""
    bundles = sorted(out_dir.glob("stockserve-*.tar.gz"), key=lambda p: p.stat().st_mtime)
    for old in bundles[:-count]:
        if old != keep:
            old.unlink(missing_ok=True)


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    print(json.dumps(build(Path(argv[1]), Path(argv[2]))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
