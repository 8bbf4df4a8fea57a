"""Atomic file writes: a temp file in the target's directory, then a rename, so a half-written
output never carries its final name (a killed job leaves at most a temp file)."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path


def atomic_write(path, write, suffix: str = ".tmp") -> str:
    """Call ``write(tmp_path)``, then move the temp file onto ``path``; returns ``path``.

    ``suffix`` of the temp file: writers that infer the format from the extension (matplotlib)
    pass the target's own suffix.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=suffix)
    os.close(fd)
    try:
        write(tmp)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp creates 0600; give the usual permissions
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
    return str(path)
