"""The checked copy of a staged file into place under ``figures/<scale>/`` (rules publish and
publish_figure, ``cli publish``): each file is checked to be what its name says (a record, a report,
an archive, a PNG, a PDF, a table's markdown or LaTeX) before it replaces the committed one, atomically."""
from __future__ import annotations

import os
import shutil
import sys


class PublishError(ValueError):
    """A staged file is not what the name of its place says: nothing was copied (one line)."""


def what_it_is(staged: str, out: str) -> str:
    """What a staged file is, checked by its kind (a record, a report, an archive, a PNG or a PDF);
    PublishError naming the file when it is not what its name says."""
    from . import archive as arch
    from .records import read_record

    name = os.path.basename(out)
    try:
        if out.endswith(".parquet"):
            meta = arch.read_meta(staged, name.removesuffix(".parquet"))
            return f"archive of {len(meta['cells'])} cells ({meta['mode']})"
        if out.endswith(".json"):
            return f"record of {read_record(staged)['id']}"
        with open(staged, "rb") as fh:
            data = fh.read()
        if out.endswith(".md") and data.strip():
            data.decode("utf-8")
            return "markdown"
        if out.endswith(".tex") and b"\\begin{tabular}" in data:
            data.decode("utf-8")
            return "LaTeX"
    except (OSError, ValueError) as err:
        raise PublishError(f"publish: {staged} cannot be published as {out}: {err}") from None
    magic = {".png": b"\x89PNG\r\n\x1a\n", ".pdf": b"%PDF"}
    ext = os.path.splitext(out)[1]
    if ext not in magic or not data.startswith(magic[ext]):
        raise PublishError(f"publish: {staged} is not a {ext or 'known'} file the workflow writes; nothing was copied to {out}")
    return ext[1:].upper()


def publish(staged: list, out: list) -> None:
    """Copy each ``staged`` file to its place in ``out`` (same order), checked (:func:`what_it_is`) and
    atomic; a table's markdown and LaTeX copies beside its staged PDF go along."""
    from .atomic import atomic_write

    if len(staged) != len(out):
        raise PublishError(f"publish: {len(staged)} staged files but {len(out)} outputs")
    pairs = list(zip(staged, out))
    for src, dst in list(pairs):
        for ext in (".md", ".tex"):          # a table's copies beside its PDF
            copy = os.path.splitext(src)[0] + ext
            if src.endswith(".pdf") and os.path.exists(copy):
                pairs.append((copy, os.path.splitext(dst)[0] + ext))
    for src, dst in pairs:
        what = what_it_is(src, dst)
        atomic_write(dst, lambda tmp, src=src: shutil.copyfile(src, tmp))
        print(f"published {dst} ({what})", file=sys.stderr)


def publish_results(staged: list, out: list) -> None:
    """The workflow's publish step (``cli publish``): :func:`publish`, then the README's headline
    and costs refreshed when the paper-scale REPORT.md is among ``out``."""
    from . import readme

    publish(staged, out)
    if any(os.path.normpath(dst) == os.path.normpath(readme.REPORT) for dst in out):   # the README's headline
        print(f"README.md: {', '.join(readme.refresh(('headline', 'costs'))) or 'headline and costs up to date'}",
              file=sys.stderr)
