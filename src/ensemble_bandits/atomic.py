"""Atomic file writes: a temp file in the target's directory, then a rename, so a half-written
output never carries its final name (a killed job leaves at most a temp file).

Every output of the pipeline is written here: text (JSON, reST, markdown), tables (parquet),
run files (npz columns) and figures (pdf, png).  Only the standard library is imported at
module level, so a simulation job that writes its run file starts fast."""
from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path


def atomic_write(path, write, suffix: str = ".tmp") -> str:
    """Call ``write(tmp_path)``, then move the temp file onto ``path``; returns ``path``.

    ``suffix`` of the temp file: writers that infer the format from the extension (matplotlib)
    pass the target's own suffix.
    """
    path = Path(path)
    refuse_special(path)
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


class NotAFileError(ValueError):
    """The target of a write exists and is not a regular file (a device, a directory, a fifo, a
    socket, or a link to one): a rename would replace it."""


def refuse_special(path) -> None:
    """NotAFileError if ``path`` exists (following links) and is not a regular file: a writer
    renames over its target, which would replace e.g. /dev/null (as root) or a directory's link."""
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return                                  # nothing there (or a dangling link): written anew
    if not stat.S_ISREG(mode):
        kind = ("a directory" if stat.S_ISDIR(mode) else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
                else "a fifo" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "not a file")
        link = " (through a link)" if os.path.islink(path) else ""
        raise NotAFileError(f"refusing to write {path}: it exists and is {kind}{link}, not a regular file; "
                            "give the path of a file")


def write_text_atomic(text: str, path) -> str:
    """Write ``text`` (UTF-8) to ``path``."""
    def write(tmp):
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)

    return atomic_write(path, write)


def write_table_atomic(df, path) -> str:
    """Write a DataFrame as parquet (no index)."""
    return atomic_write(path, lambda tmp: df.to_parquet(tmp, index=False))


def write_columns_atomic(columns: dict, path) -> str:
    """Write a run file: numpy columns in an .npz archive (numpy alone, no pandas)."""
    import numpy as np

    def write(tmp):
        with open(tmp, "wb") as fh:
            np.savez(fh, **columns)

    return atomic_write(path, write)


def save_figure_atomic(fig, path, **savefig) -> str:
    """``fig.savefig(path, **savefig)``; the temp file keeps the target's suffix, from which
    matplotlib infers the format unless ``format`` is given."""
    return atomic_write(path, lambda tmp: fig.savefig(tmp, **savefig), suffix=Path(path).suffix or ".tmp")
