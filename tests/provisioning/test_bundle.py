"""The application bundle is named by its content, so an unchanged tree is not re-deployed."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from provisioning import bundle
from provisioning.nodectl import load_env_file
from tests.support.processes import ROOT


def _tree(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    for name in bundle.INCLUDE:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            src.mkdir(exist_ok=True)
            shutil.copy2(ROOT / name, src / name)
    return src


def test_the_same_tree_gives_the_same_bytes_and_a_change_a_new_version(tmp_path):
    src = _tree(tmp_path)
    first = bundle.build(src, tmp_path / "a")
    (src / "workers" / "__pycache__").mkdir(exist_ok=True)
    (src / "workers" / "__pycache__" / "x.pyc").write_bytes(b"ignored")
    again = bundle.build(src, tmp_path / "b")

    assert first["created"] and again["created"]
    assert first["version"] == again["version"]
    assert Path(first["path"]).read_bytes() == Path(again["path"]).read_bytes()
    assert bundle.build(src, tmp_path / "a")["created"] is False

    (src / "manage.py").write_text((src / "manage.py").read_text() + "\n# changed\n")
    changed = bundle.build(src, tmp_path / "a")
    assert changed["created"] and changed["version"] != first["version"]
    assert "tests/conftest.py" not in {str(p) for p in bundle.source_files(src)}


def test_the_command_line_prints_one_json_line(tmp_path, capsys):
    src = _tree(tmp_path)
    assert bundle.main(["bundle.py", str(src), str(tmp_path / "out")]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["files"] > 50 and Path(printed["path"]).exists()
    assert bundle.main(["bundle.py"]) == 2


def test_nodectl_reads_the_env_file_the_role_writes(tmp_path, monkeypatch):
    env = tmp_path / "worker.env"
    env.write_text("# comment\nREDIS_URL='redis://:p%40ss w@10.0.0.5:6379/0'\nWORKER_GPU=auto\n")
    monkeypatch.delenv("WORKER_GPU", raising=False)
    monkeypatch.setenv("REDIS_URL", "before")
    load_env_file(env)

    assert os.environ["REDIS_URL"] == "redis://:p%40ss w@10.0.0.5:6379/0"
    assert os.environ["WORKER_GPU"] == "auto"


def test_the_bundle_ships_every_installed_app():
    """A package the service imports but the bundle leaves behind fails on the host alone
    (a worker that cannot start), long after the local tests passed."""
    from django.conf import settings

    ours = {
        app.split(".")[0] for app in settings.INSTALLED_APPS if (ROOT / app.split(".")[0]).is_dir()
    }
    assert ours <= set(bundle.INCLUDE), f"not shipped: {sorted(ours - set(bundle.INCLUDE))}"
