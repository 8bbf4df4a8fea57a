"""Aggregation: a resolved figure's run files (or committed archives) -> its long table (and derived
tables) and its plot spec, the aggregate job's work (``cli aggregate`` only reads its arguments).
Cached run files and tables are read through :mod:`tables`.

The figure table has one row per (panel, curve, seed, checkpoint t) with the grid
variables of the panel and curve as extra columns.  ``derive`` entries turn it into the
table a plot needs (the minimum ensemble size of Ensemble++, the run-time table).
Statistics live in ``stats``, writers in ``atomic``.
"""
from __future__ import annotations

import json
import sys

import numpy as np

from . import stats
from .cells import param_count, stamp_of
from .paths import run_key, run_seeds
from .protocol import TIMED_PARTS
from .readings import ROW_COLUMNS
from .registry import figure_runs
from .stats import final_rows
from .tables import read_run


class TableError(ValueError):
    """A figure's table cannot be built as its entry asks (one line naming why)."""


def figure_spec(fig: dict) -> dict:
    """The plot spec of a resolved figure (the JSON its figure job reads beside the table): what the
    notebook of its plot kind needs of the entry, and which curve is which method and reading."""
    entry = fig["entry"]
    plotted = [c for c in fig["curves"]
               if not any(s["curve"] == c and "experiment" in s["cell"] for s in fig["series"])]
    return {"id": fig["id"], "title": entry.get("title", fig["id"]), "caption": entry.get("caption", ""),
            "kind": entry["kind"], "band": entry.get("band", "se"), "panels": fig["panels"], "curves": plotted,
            "scale": fig["scale"], "plot": entry.get("plot", {}), "seeds": fig["seeds"], "horizon": fig["horizon"],
            "absent_data": fig.get("absent_data", []), "absent_panels": fig.get("absent_panels", []),
            "pending_curves": list(fig.get("pending_curves", {})),
            "methods": {s["curve"]: s["cell"]["agent"]["name"] for s in fig["series"] if "agent" in s["cell"]},
            "readings": {s["curve"]: s["base_curve"] for s in fig["series"] if "base_curve" in s},
            "paper_values": entry.get("paper_values", [])}


def build_table(fig: dict, seeds_per_job: int, data_dir: str | None = None, archives=(),
                staged: str | None = None):
    """The table of a resolved figure: a static table, or its simulated cells (from the committed
    ``archives`` where they hold them, the figure's own first, else their run files), derived as its
    entry says.  ``staged``: also write the figure's archive there (simulated figures only).  A
    TableError (an unknown static table, datasets without ``data_dir``) or an ArchiveError (an archive
    that is not what it says) names the cause in one line."""
    import pandas as pd

    from . import archive as arch

    entry = fig["entry"]
    if staged and not fig.get("series"):
        arch.write_archive(fig, {}, staged)     # a static table or a diagram: nothing to archive
    if "static" in entry:
        from .paper_tables import STATIC_TABLES

        st = entry["static"]
        if st["name"] not in STATIC_TABLES:
            raise TableError(f"unknown static table {st['name']!r}; known: {', '.join(sorted(STATIC_TABLES))}")
        params = dict(st.get("params", {}))
        if entry.get("data") or entry.get("optional_data"):
            if not data_dir:
                raise TableError(f"{fig['id']} reads datasets "
                                 f"{entry.get('data', []) + entry.get('optional_data', [])}: give --data-dir or set data_dir")
            params["data_dir"] = data_dir
        return STATIC_TABLES[st["name"]](**params)
    if not fig["series"]:
        return pd.DataFrame({"id": [fig["id"]]})
    sources = arch.covering(fig, archives)
    archived = arch.read_covering(fig, sources)
    for path, keys in sources:
        print(f"{fig['id']}: {len(keys)} of {len(arch.cells_of(fig))} cells from the archive {path}", file=sys.stderr)
    frames = cell_frames(fig, seeds_per_job, archived)
    if staged:
        arch.write_archive(fig, frames, staged)
    table = figure_table(fig, seeds_per_job, frames=frames)
    if fig.get("fresh"):    # a fresh study's seeds decide its claims alone (ensemble_bandits.fresh)
        table = table[table["seed"] < fig["seeds"]].reset_index(drop=True)
    if "derive" in entry:
        d = entry["derive"]
        table = DERIVED[d["name"]](table, **d.get("params", {}))
    return table


def aggregate_figure(figure_path, table_path, spec_path, data_dir: str | None = None, archives=(),
                     archive_sha256=None, staged: str | None = None) -> None:
    """A figure's job (``cli aggregate``): from the resolved figure at ``figure_path``, its table
    (:func:`build_table`; cells of the committed ``archives`` read from them, each first checked to have
    its SHA-256 of ``archive_sha256`` if given) and plot spec (:func:`figure_spec`), written atomically;
    ``staged``: also the figure's archive.  A TableError (or ArchiveError) of one line when they cannot be."""
    from .atomic import write_table_atomic, write_text_atomic
    from .registry import read_figure

    fig = read_figure(figure_path)
    archives = list(archives or [])
    if archive_sha256:
        from .data import sha256

        if len(archive_sha256) != len(archives):
            raise TableError(f"{len(archives)} --archive but {len(archive_sha256)} --archive-sha256: give one per archive")
        for path, digest in zip(archives, archive_sha256):
            if sha256(path) != digest:
                raise TableError(f"archive {path} changed while the workflow ran (SHA-256 differs); rerun")
    table = build_table(fig, fig["seeds_per_job"], data_dir, archives=archives, staged=staged)
    write_table_atomic(table, table_path)
    write_text_atomic(json.dumps(figure_spec(fig), indent=1, default=str), spec_path)


def cell_frames(fig: dict, per_job: int, archived=None, files=None) -> dict:
    """{key: rows} of every cell of a resolved figure, as the figure keeps them (compact, finals
    only for ``archive: finals``; :func:`archive.reduce_runs`): ``archived`` ({key: rows} from its
    archive, seeds 0 .. n - 1) first, the other cells and seeds from their run files (a cell whose
    archive holds only its first seeds: the blocks after them, a fresh study's seeds)."""
    import pandas as pd

    from .archive import archive_mode, reduce_runs

    archived = dict(archived or {})
    held = {k: int(rows["seed"].max()) + 1 if len(rows) else 0 for k, rows in archived.items()}
    files = files or figure_runs(fig, per_job)
    cells = {s["key"]: s["cell"] for s in fig["series"]}
    by_key = {}
    for f in files:
        key = run_key(f)
        if run_seeds(f)[0] >= held.get(key, 0):
            by_key.setdefault(key, []).append(read_run(f, cells[key], stamp_of(fig, key, cells[key])))
    mode = archive_mode(fig)
    frames = dict(archived)
    frames.update({k: reduce_runs(pd.concat(([archived[k]] if k in archived else []) + v, ignore_index=True), mode)
                   for k, v in by_key.items()})
    return frames


def _uniform_rate(cell: dict, seeds: int, cache: dict):
    """Per seed 0 .. seeds - 1, the expected per-round regret of a uniformly random policy on the
    environment of ``cell`` (:func:`cells.uniform_regret`; ``cache``: by environment), or None."""
    if "env" not in cell:
        return None
    from .cells import uniform_regret

    key = (json.dumps(cell["env"], sort_keys=True, default=str), int(seeds))
    if key not in cache:
        cache[key] = uniform_regret(cell["env"], range(int(seeds)))
    return cache[key]


def figure_table(fig: dict, per_job: int, files=None, frames=None):
    """The long table of a resolved simulation figure from its cells' rows (``frames``, default
    :func:`cell_frames` from run files); a curve whose agent counts its parameters
    (:func:`param_count`) gets them in a column ``params`` (the x axis of a regret-compute plot),
    and one whose environment knows a uniformly random policy's expected per-round regret
    (``uniform_regret``: the epp pool bandits) gets it, per seed, in a column ``uniform_rate`` (the
    reference of ``claims.level_below``)."""
    import pandas as pd

    cache = frames if frames is not None else cell_frames(fig, per_job, files=files)
    parts, uniform = [], {}
    for s in fig["series"]:
        df = cache[s["key"]]
        df = df[df["seed"] < s["seeds"]].copy()
        df.insert(0, "curve", s["curve"])
        df.insert(0, "panel", s["panel"])
        for var, val in s["vars"].items():
            df[var] = val
        n_params = param_count(s["cell"])
        if n_params is not None:
            df["params"] = n_params
        rate = _uniform_rate(s["cell"], s["seeds"], uniform)
        if rate is not None:
            df["uniform_rate"] = rate[df["seed"].to_numpy()]
        if any("reading" in x for x in fig["series"]):      # a figure with readings: which rows are whose
            df["reading"] = s.get("reading", "")
            df["base_curve"] = s.get("base_curve", s["curve"])
        parts.append(df)
    table = pd.concat(parts, ignore_index=True)
    for col in table.columns:
        if table[col].dtype == object:
            table[col] = table[col].map(lambda v: v if v is None or isinstance(v, str) else str(v))
    return table


def min_ensemble_size(table, baseline: str = "TS", threshold: float = 0.02,
                      x: str = "d", group: str = "n_arms", size: str = "M", boot: int = 0, seed: int = 0,
                      jackknife: bool = False):
    """Ensemble++ F-minM: smallest M such that it and every larger M on the grid satisfy
    |R(Ensemble++(M), T) - R(TS, T)| / T <= threshold (mean regrets over the paired seeds).

    A setting whose largest M fails is *censored*: M_min is NaN, ``censored`` true and M_min lies
    above ``M_max_tried``.  Rows with ``replicate`` 0 use every seed once; ``boot`` > 0 adds rows
    ``replicate`` 1..boot, each from one bootstrap draw of the seeds (paired: the draw applies to
    TS and every M of the panel; ``stats.seed_resamples`` seeded with (``seed``, panel index)).

    ``jackknife`` adds, after a panel's other rows, one row per seed s with ``replicate`` -(s + 1):
    the panel's M_min from every seed but s (TS and every M without it).  Each panel's seeds are
    resampled apart, so these are the jackknife of a stratified bootstrap (one stratum per panel), from
    which a BCa interval takes its acceleration (claims.linear_fit's ``interval: bca``).  M_min is a
    step statistic (the smallest grid M that matches): most leave-one-out values equal the point value
    and a few jump by a grid step, so the acceleration it gives is only a rough guide.  Without it the
    rows are those of earlier versions, in the same order."""
    import pandas as pd

    fin = final_rows(table)
    rows = []
    for i, (panel, sub) in enumerate(fin.groupby("panel", sort=False)):
        T = int(sub["t"].max())
        ens = sub[sub["curve"] != baseline]
        sizes = np.sort(ens[size].astype(float).unique())
        by_curve = sub.assign(_m=sub[size].where(sub["curve"] != baseline, -np.inf).astype(float))
        wide = by_curve.pivot_table(index="seed", columns="_m", values="regret", aggfunc="mean")
        wide_seeds = wide.index.to_numpy()
        wide = wide.reindex(columns=[-np.inf, *sizes]).to_numpy(dtype=float)    # column 0: TS
        draws = stats.seed_resamples(wide.shape[0], boot, (seed, i))
        with np.errstate(invalid="ignore"):
            means = np.nanmean(wide[draws], axis=1)                              # (1 + boot, 1 + len(sizes))
        replicates = list(range(len(means)))
        if jackknife:
            keep = ~np.eye(len(wide_seeds), dtype=bool)                          # row j: every seed but the j-th
            with np.errstate(invalid="ignore"):
                loo = np.stack([np.nanmean(wide[k], axis=0) for k in keep]) if len(wide_seeds) > 1 else means[:0]
            means = np.concatenate([means, loo])
            replicates += [-(int(s) + 1) for s in wide_seeds[:len(loo)]]
        ok = np.abs(means[:, 1:] - means[:, :1]) / T <= threshold
        tail_ok = np.flip(np.logical_and.accumulate(np.flip(ok, axis=1), axis=1), axis=1)
        reached = tail_ok.any(axis=1)
        m_min = np.where(reached, sizes[np.argmax(tail_ok, axis=1)], np.nan)
        first = ens.iloc[0]
        for r in range(len(m_min)):
            rows.append({x: first[x], group: first[group], "M_min": float(m_min[r]), "censored": not reached[r],
                         "M_max_tried": float(sizes.max()), "ts_regret": float(means[r, 0]), "T": T,
                         "panel": panel, "replicate": replicates[r]})
    return pd.DataFrame(rows)


def timing_table(table, parts: bool = False):
    """Wall time per run by curve (unbatched timing runs and batched runs side by side).

    A seed's ``seconds`` is the median of its timed runs (timing cells: each seed alone, repeated,
    see runner.simulate_columns) or its share of its batch (batched cells).  Across seeds:
    ``seconds_median`` (what a run-time claim compares) with the quartiles ``seconds_q1`` and
    ``seconds_q3``; ``repeats`` timed runs per seed (1: a batched cell) and ``repeat_spread``, the
    median over seeds of (slowest - fastest) / median of a seed's repeats; the mean
    ``seconds_per_run``, its ``seconds_sd`` and ``total_seconds`` (sums of per-seed values);
    ``us_per_round`` = 1e6 seconds_median / rounds; ``variates_per_round``, the random numbers the agent
    drew per round (mean over seeds; a count no hardware changes, recorded by timing cells; NaN for
    batched cells and older run files).

    With ``parts``: timing cells also time the agent's calls apart (protocol.TIMED_PARTS), so per part P
    in ``select`` (arm selection) and ``update`` (model update) the table has ``P_median`` (median
    over seeds of the seeds' medians), ``P_per_run`` and ``P_sd`` (mean and standard deviation over
    seeds), and ``P_share`` = P_median / seconds_median; NaN for curves without them (batched cells,
    run files written before the split was measured).  A figure with readings keeps the ``reading`` and
    ``base_curve`` of each row (:func:`readings.reading_rows`)."""
    fin = final_rows(table).copy()
    for col in ("seconds_repeats", "variates"):
        if col not in fin:
            fin[col] = np.nan
    if "seconds_min" in fin and "seconds_max" in fin:
        fin["_spread"] = (fin["seconds_max"] - fin["seconds_min"]) / fin["seconds"]
    else:
        fin["_spread"] = np.nan
    parts = TIMED_PARTS if parts else ()
    split = {}
    for part in parts:
        col = f"seconds_{part}"
        if col not in fin:
            fin[col] = np.nan
        split.update({f"{part}_median": (col, "median"), f"{part}_per_run": (col, "mean"),
                      f"{part}_sd": (col, "std")})
    keys = ["panel", "curve", *(c for c in ROW_COLUMNS if c in fin)]   # a reading's rows stay its own
    out = fin.groupby(keys, sort=False).agg(
        runs=("seed", "nunique"), repeats=("seconds_repeats", "max"),
        seconds_median=("seconds", "median"), seconds_q1=("seconds", lambda x: x.quantile(0.25)),
        seconds_q3=("seconds", lambda x: x.quantile(0.75)), repeat_spread=("_spread", "median"),
        seconds_per_run=("seconds", "mean"), seconds_sd=("seconds", "std"),
        total_seconds=("seconds", "sum"), rounds=("t", "max"), variates=("variates", "mean"), **split).reset_index()
    out["repeats"] = out["repeats"].fillna(1).astype(int)
    out["us_per_round"] = 1e6 * out["seconds_median"] / out["rounds"]
    out["variates_per_round"] = out.pop("variates") / out["rounds"]
    for part in parts:
        out[f"{part}_share"] = out[f"{part}_median"] / out["seconds_median"]
    return out


DERIVED = {"min_ensemble_size": min_ensemble_size, "timing_table": timing_table}
