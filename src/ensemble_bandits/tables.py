"""Reading what the jobs cache: run files (``.npz``, one cell over a block of seeds) and tables
(parquet), each with one clear error when it is unreadable or, for a run file, not the run it should
be.  Neutral ground: the aggregation (:mod:`aggregate`), the claims job and the plots
(:mod:`plotting`) read through it; it imports no simulation code (a run file's expected identity is
:func:`cells.identity_of`, imported when a run file is checked)."""
from __future__ import annotations

import re

import numpy as np


class CacheError(RuntimeError):
    """A cached result (run file or aggregated table) cannot be read: delete it and rerun (the command
    line adds the target that rebuilds it: :func:`rebuild_hint`)."""


def rebuild_hint(figure_path) -> str:
    """After a damaged cache file (a run file or table of the figure resolved at ``figure_path``): the
    targets that rebuild what it held (the figure's own PDF would find nothing to do while the old one
    exists); empty without a readable figure."""
    from .registry import FigureFileError, read_figure

    if not figure_path:
        return ""
    try:
        doc = read_figure(figure_path)
    except FigureFileError:
        return ""
    scale, fid = doc["scale"], doc["id"]
    return (f", then rebuild it and what follows from it: snakemake --cores 2 figures/{scale}/{fid}.pdf "
            f"--forcerun aggregate --config scale={scale}")


def _read_cached(path, read):
    try:
        return read(path)
    except Exception as err:  # noqa: BLE001 - any failure to read means a corrupt cache entry
        raise CacheError(f"cached result {path} is unreadable ({type(err).__name__}: {err}); "
                         f"delete it and rerun") from None


def read_run(path, cell: dict | None = None, stamp: str | None = None):
    """A cached run file as a DataFrame, with a clear error when it is unreadable or, given the
    ``cell`` it should hold (and its algorithms ``stamp``, default :func:`cells.algorithms_stamp`), when
    it is not that cell's file over the seeds its name says (another cell's file, an older algorithms
    version, a partial seed range)."""
    import json

    import pandas as pd

    def read(p):
        with np.load(p) as data:
            ident = json.loads(str(data["_identity"])) if "_identity" in data.files else None
            return pd.DataFrame({k: data[k] for k in data.files if not k.startswith("_")}), ident

    df, ident = _read_cached(path, read)
    if cell is not None:
        check_identity(path, df, ident, cell, stamp)
    return df


def check_identity(path, df, ident, cell: dict, stamp: str | None = None) -> None:
    """CacheError naming the file and what differs unless run file ``path`` is ``cell``'s file over the
    seeds its name says, of this algorithms version (``stamp``), with every one of those seeds."""
    import json

    from .cells import identity_of

    m = re.search(r"seeds-(\d+)-(\d+)\.npz$", str(path))
    first, end = int(m.group(1)), int(m.group(2))
    want = json.loads(str(identity_of(cell, range(first, end), stamp)))
    if ident is None:       # written before run files carried their identity: its version is unknown
        raise CacheError(f"run file {path} does not say what it is (written by an older version, before run "
                         f"files carried their cell, seeds and algorithms version); delete it and rerun")
    differs = [f"{k} {ident.get(k)!r} (expected {want[k]!r})" for k in ("key", "algorithms", "seeds", "horizon")
               if ident.get(k) != want[k]]
    if sorted(set(df["seed"].tolist())) != list(range(first, end)):
        differs.append(f"seeds present {sorted(set(df['seed'].tolist()))} (expected {first}..{end - 1})")
    if differs:
        raise CacheError(f"run file {path} is not the run of this cell: {'; '.join(differs)}; delete it and rerun")


def read_table(path):
    """An aggregated table (parquet), with the same clear error as a run file when unreadable."""
    import pandas as pd

    return _read_cached(path, pd.read_parquet)
