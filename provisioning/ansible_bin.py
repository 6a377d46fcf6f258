"""Where the Ansible executables are: beside this interpreter, in the virtualenv."""

from __future__ import annotations

import os
import sys
from pathlib import Path


def ensure_ansible_on_path() -> None:
    """ansible-runner looks its executables up on PATH; ours sit beside this interpreter."""
    venv_bin = str(Path(sys.executable).parent)
    path = os.environ.get("PATH", "/usr/bin:/bin")
    if venv_bin not in path.split(os.pathsep):
        os.environ["PATH"] = f"{venv_bin}{os.pathsep}{path}"
