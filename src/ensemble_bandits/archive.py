"""A figure's archive: the compact per-seed data its table is built from, committed at paper scale.

An archive (``figures/<scale>/archives/<id>.parquet``) holds, per cell of the figure, the columns of
its run files (seed, t, regret, seconds, ...) for every seed the figure uses, with float64 stored as
float32 and integers as int32 (:func:`compact`; the figure's table is always built from this compact
form, so a table rebuilt from an archive is the table the run gave, bit for bit).  A figure whose
registry entry says ``archive: finals`` keeps only each seed's last checkpoint (its plot and claims
read final values only).  The parquet metadata says what the file is: the figure id, the format
version, and per cell its key, seed count and the algorithms version of its numbers; a file that
does not say so, or says something else, is refused with one line naming it.

When the figure's archive exists, the workflow takes every cell it covers (same key, same algorithms
version, at least the seeds the figure uses) from it instead of from run files; a cell it lacks (e.g. a
reading added later) is taken from another figure's committed archive that holds it (figures share
cells: the same key is the same run), and only the cells no archive holds are simulated
(:func:`covering`); config ``archives: ignore`` reruns from run files.
"""
from __future__ import annotations

import json
import os

import numpy as np

from .paths import restore_hint

FORMAT = 1
META_KEY = b"ensemble_bandits.archive"
MODES = ("full", "finals")


class ArchiveError(ValueError):
    """An archive that cannot be used: unreadable, of another figure or format, or damaged."""


def compact(df):
    """``df`` with float64 columns as float32 and int64 columns as int32 (a copy)."""
    out = df.copy()
    for col in out.columns:
        kind = out[col].dtype
        if kind == np.float64:
            out[col] = out[col].astype(np.float32)
        elif kind == np.int64:
            out[col] = out[col].astype(np.int32)
    return out


def finals_only(df):
    """The rows of each seed's last checkpoint."""
    last = df.groupby("seed")["t"].transform("max")
    return df[df["t"] == last].reset_index(drop=True)


def reduce_runs(df, mode: str):
    """A cell's run-file rows as the figure keeps them: compact, and only finals for ``finals``."""
    if mode not in MODES:
        raise ArchiveError(f"archive mode {mode!r} is not one of {', '.join(MODES)}")
    df = compact(df.sort_values(["seed", "t"], kind="stable").reset_index(drop=True))
    return finals_only(df) if mode == "finals" else df


def cells_of(fig: dict) -> dict:
    """{key: {"seeds": n, "algorithms": stamp}} of a resolved figure's simulated cells (the stamps its
    document carries: :func:`cells.stamp_of`)."""
    from .cells import stamp_of

    out = {}
    for s in fig.get("series", []):
        c = out.setdefault(s["key"], {"seeds": 0, "algorithms": stamp_of(fig, s["key"], s["cell"])})
        c["seeds"] = max(c["seeds"], int(s["seeds"]))
    return out


def write_archive(fig: dict, frames: dict, path) -> str:
    """Write the archive of ``fig`` from ``frames`` ({key: reduced rows}, see :func:`reduce_runs`)."""
    import pandas as pd
    import pyarrow as pa

    from .atomic import atomic_write

    cells = cells_of(fig)
    missing = sorted(set(cells) - set(frames))
    if missing:
        raise ArchiveError(f"{fig['id']}: no rows for cell(s) {', '.join(missing)}")
    parts = []
    for key in sorted(cells):
        df = frames[key]
        df = df[df["seed"] < cells[key]["seeds"]].copy()
        df.insert(0, "key", key)
        parts.append(df)
    data = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame({"key": pd.Series([], dtype=str)})
    table = pa.Table.from_pandas(data, preserve_index=False)
    meta = {"format": FORMAT, "figure": fig["id"], "scale": fig["scale"], "mode": archive_mode(fig),
            "cells": cells, **({"fresh": fig["fresh"]} if fig.get("fresh") else {})}
    table = table.replace_schema_metadata({**(table.schema.metadata or {}),
                                           META_KEY: json.dumps(meta, sort_keys=True).encode()})
    return atomic_write(path, lambda tmp: write_table(table, tmp))


def write_table(table, path) -> None:
    """Write an archive's ``table``: zstd, its float columns byte-stream split (a float's bytes
    grouped by position compress a third smaller than dictionary pages: phe-fig2's 2.9 MB became
    1.8 MB; lossless, so :func:`content_sha256` is unchanged)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    floats = [f.name for f in table.schema if pa.types.is_floating(f.type)]
    pq.write_table(table, path, compression="zstd", compression_level=15,
                   use_dictionary=[n for n in table.column_names if n not in floats], use_byte_stream_split=floats)


def archive_mode(fig: dict) -> str:
    return fig.get("entry", {}).get("archive", "full")


def read_meta(path, fid: str | None) -> dict:
    """The metadata of the archive at ``path``, checked to be an archive of this project's format and,
    unless ``fid`` is None, of figure ``fid``."""
    import pyarrow.parquet as pq

    try:
        raw = (pq.read_schema(path).metadata or {}).get(META_KEY)
    except Exception as err:  # noqa: BLE001 - any failure to read means a damaged file
        raise ArchiveError(f"archive {path} is unreadable ({type(err).__name__}: {err}); {restore_hint(path)}") \
            from None
    if raw is None:
        raise ArchiveError(f"{path} is not an archive of this project (no {META_KEY.decode()} metadata)")
    try:
        meta = json.loads(raw)
    except ValueError as err:
        raise ArchiveError(f"archive {path} has damaged metadata ({err}); {restore_hint(path)}") from None
    if not isinstance(meta, dict) or not _cells_ok(meta.get("cells")):
        raise ArchiveError(f"archive {path} has damaged metadata (not a mapping of cells to their seed counts and "
                           f"algorithms versions); {restore_hint(path)}")
    if meta.get("format") != FORMAT:
        raise ArchiveError(f"archive {path} has format {meta.get('format')!r}; this version reads format {FORMAT}")
    if fid is not None and meta.get("figure") != fid:
        raise ArchiveError(f"archive {path} is of figure {meta.get('figure')!r}, not {fid!r}")
    return meta


def fresh_state(path) -> list | None:
    """The looks the fresh studies of a figure's archive at ``path`` ran (its metadata's ``fresh``,
    ensemble_bandits.fresh), or None (no such archive, or no look run)."""
    try:
        return read_meta(path, None).get("fresh") if os.path.exists(path) else None
    except ArchiveError:
        return None


def _cells_ok(cells) -> bool:
    return isinstance(cells, dict) and all(
        isinstance(c, dict) and isinstance(c.get("seeds"), int) and not isinstance(c["seeds"], bool)
        and c["seeds"] >= 1 and isinstance(c.get("algorithms"), str) for c in cells.values())


def usable_keys(path, fig: dict, any_figure: bool = False) -> list:
    """The figure's cells the archive covers, in full or in part (:func:`usable`)."""
    return sorted(usable(path, fig, any_figure))


def usable(path, fig: dict, any_figure: bool = False) -> dict:
    """{key: seeds it supplies} of the figure's cells the archive covers: same key, same algorithms
    version, and either every seed the figure uses or the seeds before one of the cell's block edges
    (:func:`partial_edges`: a fresh sequential study's seeds, ensemble_bandits.fresh, come from run
    files after those the archive holds); an absent archive covers none.  ``any_figure``: the archive
    may be another figure's."""
    if not os.path.exists(path):
        return {}
    meta = read_meta(path, None if any_figure else fig["id"])
    if meta.get("mode") != archive_mode(fig):
        return {}
    have, edges = meta["cells"], partial_edges(fig)
    return {k: min(have[k]["seeds"], c["seeds"]) for k, c in sorted(cells_of(fig).items())
            if k in have and have[k]["algorithms"] == c["algorithms"]
            and (have[k]["seeds"] >= c["seeds"] or have[k]["seeds"] in edges.get(k, ()))}


def partial_edges(fig: dict) -> dict:
    """{key: seed counts} at which an archive holding a cell's first seeds may supply them: a block
    edge (``cuts``) of every series of the cell that runs more seeds; the later blocks are run."""
    series = fig.get("series", [])
    out = {}
    for key in {s["key"] for s in series}:
        mine = [s for s in series if s["key"] == key]
        cuts = {int(c) for s in mine for c in s.get("cuts", ())}
        out[key] = {c for c in cuts if all(c >= int(s["seeds"]) or c in s.get("cuts", ()) for s in mine)}
    return out


def read_cells(path, fig: dict, keys, any_figure: bool = False) -> dict:
    """{key: rows} of ``keys`` from the archive of ``fig`` (checked: each key present with every seed);
    ``any_figure``: the archive may be another figure's."""
    import pandas as pd

    meta = read_meta(path, None if any_figure else fig["id"])
    matches_record(path, meta)
    try:
        df = pd.read_parquet(path, filters=[("key", "in", list(keys))]) if keys else None
    except Exception as err:  # noqa: BLE001
        raise ArchiveError(f"archive {path} is unreadable ({type(err).__name__}: {err}); {restore_hint(path)}") \
            from None
    cells, out = cells_of(fig), {}
    spec = {s["key"]: s["cell"] for s in fig.get("series", [])}
    for key in keys:
        rows = df[df["key"] == key].drop(columns="key").reset_index(drop=True)
        check_rows(path, key, rows, meta["cells"][key]["seeds"], spec[key], meta.get("mode", "full"))
        out[key] = rows[rows["seed"] < cells[key]["seeds"]].reset_index(drop=True)
    return out


REQUIRED = ("seed", "t", "regret")


def check_rows(path, key: str, rows, seeds: int, cell: dict, mode: str) -> None:
    """ArchiveError naming ``path`` and the cell unless its rows are what its metadata says: seeds
    0..``seeds``-1, one row per seed and checkpoint, the same checkpoints for every seed, the last at
    the cell's horizon (only that one for ``finals``), and finite numbers (a column of another cell,
    all empty here, aside)."""
    import numpy as np

    def fail(what):
        raise ArchiveError(f"archive {path}: cell {key} {what}; {restore_hint(path)}")

    required = REQUIRED[:2] if "experiment" in cell else REQUIRED       # an experiment's regret: its own columns
    for col in rows.columns:
        values = rows[col].to_numpy()
        if values.dtype.kind == "f" and not np.isfinite(values).all():
            if col in required or not np.isnan(values).all():
                fail(f"has {int((~np.isfinite(values)).sum())} NaN or infinite value(s) in column {col}")
    present = sorted(set(rows["seed"].tolist()))
    if present != list(range(seeds)):
        fail(f"holds seeds {_span(present)}, its metadata says {seeds} (0..{seeds - 1})")
    if rows.duplicated(["seed", "t"]).any():
        fail(f"has {int(rows.duplicated(['seed', 't']).sum())} duplicated (seed, t) row(s)")
    per_seed = rows.groupby("seed")["t"].apply(lambda t: tuple(sorted(t)))
    horizon = int((cell["experiment"] if "experiment" in cell else cell).get("horizon", 0))
    first = per_seed.iloc[0]
    if first[-1:] != (horizon,) or (mode == "finals" and len(first) != 1):
        fail(f"lacks its last checkpoint: seed {per_seed.index[0]} has the rounds {_span(list(first))}, the cell's "
             f"horizon is {horizon}")
    wrong = [int(seed) for seed, ts in per_seed.items() if ts != first]
    if wrong:
        fail(f"has other checkpoints for {len(wrong)} seed(s) than for seed {per_seed.index[0]} (first: seed "
             f"{wrong[0]}): every seed has every checkpoint")


def _span(values: list) -> str:
    return "none" if not values else f"[{', '.join(map(str, values))}]" if len(values) <= 6 else \
        f"[{values[0]}, {values[1]}, ..., {values[-1]}] ({len(values)})"


def content_sha256(path) -> str:
    """SHA-256 of what an archive holds, not of its bytes (another parquet writer gives the same
    hash): its metadata, then per column (by name) its name, type and values."""
    import hashlib

    import pyarrow.parquet as pq

    table = pq.read_table(path)
    digest = hashlib.sha256(json.dumps(json.loads(table.schema.metadata[META_KEY]), sort_keys=True).encode())
    for name in sorted(table.column_names):
        column = table.column(name)
        digest.update(f"\0{name}\0{column.type}\0".encode())
        values = column.to_numpy(zero_copy_only=False)
        digest.update(values.tobytes() if values.dtype.kind in "biuf" else "\0".join(map(str, values)).encode())
    return digest.hexdigest()


def record_of(path, meta: dict) -> str:
    """The record beside a committed archive (figures/<scale>/records/<figure>.json)."""
    return os.path.join(os.path.dirname(os.path.dirname(str(path))), "records", f"{meta['figure']}.json")


def matches_record(path, meta: dict) -> None:
    """ArchiveError naming both files unless the archive's content hash is the one its figure's
    record states (a record written before records carried it, or none, is not compared)."""
    record = record_of(path, meta)
    try:
        with open(record, encoding="utf-8") as fh:
            want = json.load(fh).get("archive_sha256")
    except (OSError, ValueError, AttributeError):
        return                   # no record yet, or a damaged one: the report job names it
    got = content_sha256(path)
    if want and want != got:
        raise ArchiveError(f"archive {path} does not match its record {record} (content SHA-256 {got[:16]}..., the "
                           f"record says {want[:16]}...): restore both with `git checkout -- {path} {record}`")


def committed(folder, fid: str) -> list:
    """The archives in ``folder`` (a scale's committed archives) that may hold cells of figure ``fid``:
    its own first, then the other figures' in id order."""
    if not os.path.isdir(folder):
        return []
    names = sorted(n for n in os.listdir(folder) if n.endswith(".parquet") and n != f"{fid}.parquet")
    own = [f"{fid}.parquet"] if os.path.exists(os.path.join(folder, f"{fid}.parquet")) else []
    return [os.path.join(folder, n) for n in own + names]


def covering(fig: dict, paths, strict: bool = True) -> list:
    """[(path, {key: seeds})]: which of the archives at ``paths`` supply which cells of ``fig`` and how
    many of their seeds (:func:`usable`), in order (an archive takes the cells it holds that no earlier
    one took; those that add none are left out).  The
    figure's own archive must be readable; another figure's that cannot be used raises ArchiveError
    when ``strict``, else is passed over."""
    out, taken = [], set()
    for path in paths:
        own = _own(path, fig)
        try:
            keys = {k: n for k, n in usable(path, fig, any_figure=not own).items() if k not in taken}
        except ArchiveError:
            if strict or own:
                raise
            continue
        if keys:
            out.append((str(path), keys))
            taken.update(keys)
    return out


def read_covering(fig: dict, sources) -> dict:
    """{key: rows} of every cell the ``sources`` of :func:`covering` supply."""
    out = {}
    for path, keys in sources:
        out.update(read_cells(path, fig, keys, any_figure=not _own(path, fig)))
    return out


def _own(path, fig: dict) -> bool:
    """``path`` is named as ``fig``'s own archive (``<id>.parquet``)."""
    return os.path.basename(str(path)) == f"{fig['id']}.parquet"


def committed_sources(fig: dict, scale: str) -> list:
    """:func:`covering` over the committed archives of ``scale`` (another figure's that cannot be used
    is passed over)."""
    from .paths import archive_file

    return covering(fig, committed(os.path.dirname(archive_file(scale, fig["id"])), fig["id"]), strict=False)


# The scales at which the committed archives stand in for run files (the workflow's and the CLI's).
ARCHIVE_SCALES = ("paper",)


def scale_sources(fig: dict, scale: str, use: bool = True) -> list:
    """:func:`committed_sources` where ``scale`` reads committed archives and the config's ``archives``
    is ``use`` (``use``), else []."""
    return committed_sources(fig, scale) if use and scale in ARCHIVE_SCALES else []


def covered_keys(figs: list, scale: str, use: bool = True) -> dict:
    """Figure id -> {cell key: seeds} its committed archives supply (:func:`scale_sources`; a figure
    whose own archive is unreadable gets none: it is simulated, and its build names the damage)."""
    out = {}
    for fig in figs:
        try:
            out[fig["id"]] = held_seeds(scale_sources(fig, scale, use))
        except ArchiveError:
            out[fig["id"]] = {}
    return out


def current_ids(figs: list, scale: str, use: bool = True) -> set:
    """Ids of ``figs`` whose own committed archive supplies cells (their committed outputs stand:
    costs.work_left)."""
    out = set()
    for fig in figs:
        try:
            if any(_own(path, fig) for path, _ in scale_sources(fig, scale, use)):
                out.add(fig["id"])
        except ArchiveError:
            pass
    return out


def held_seeds(sources) -> dict:
    """{cell key: seeds} that the archives ``sources`` ([(path, {key: seeds})]) supply together."""
    held = {}
    for _, keys in sources:
        for k, n in keys.items():
            held[k] = max(held.get(k, 0), n)
    return held
