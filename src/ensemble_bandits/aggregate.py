"""Aggregation: run files of a figure -> one long table (and derived tables); reading cached
run files and tables with a clear error when one is corrupt.

The figure table has one row per (panel, curve, seed, checkpoint t) with the grid
variables of the panel and curve as extra columns.  ``derive`` entries turn it into the
table a plot needs (the minimum ensemble size of Ensemble++, the run-time table).
Statistics live in ``stats``, writers in ``atomic``.
"""
from __future__ import annotations

import json
import re

import numpy as np

from .protocol import TIMED_PARTS
from .paths import run_key
from .registry import figure_runs
from . import stats
from .stats import final_rows



class CacheError(RuntimeError):
    """A cached result (run file or aggregated table) cannot be read: delete it and rerun (the command
    line adds the target that rebuilds it: cli._rebuild_hint)."""


def _read_cached(path, read):
    try:
        return read(path)
    except Exception as err:  # noqa: BLE001 - any failure to read means a corrupt cache entry
        raise CacheError(f"cached result {path} is unreadable ({type(err).__name__}: {err}); "
                         f"delete it and rerun") from None


IDENTITY_FORMAT = 1


def identity_of(cell: dict, seeds) -> np.ndarray:
    """What a run file of ``cell`` over ``seeds`` is: its cell key, the algorithms version of its
    numbers, its seed range and horizon, as a JSON string array (an npz entry ``_identity``)."""
    import json

    from .registry import cell_key
    from .runner import algorithms_stamp

    seeds = [int(s) for s in seeds]
    horizon = cell.get("horizon", cell.get("experiment", {}).get("horizon"))
    return np.array(json.dumps({"format": IDENTITY_FORMAT, "key": cell_key(cell), "algorithms": algorithms_stamp(cell),
                                "seeds": [seeds[0], seeds[-1] + 1], "horizon": horizon}, sort_keys=True))


def read_run(path, cell: dict | None = None):
    """A cached run file as a DataFrame, with a clear error when it is unreadable or, given the
    ``cell`` it should hold, when it is not that cell's file over the seeds its name says (another
    cell's file, an older algorithms version, a partial seed range)."""
    import json

    import pandas as pd

    def read(p):
        with np.load(p) as data:
            ident = json.loads(str(data["_identity"])) if "_identity" in data.files else None
            return pd.DataFrame({k: data[k] for k in data.files if not k.startswith("_")}), ident

    df, ident = _read_cached(path, read)
    if cell is not None:
        check_identity(path, df, ident, cell)
    return df


def check_identity(path, df, ident, cell: dict) -> None:
    """CacheError naming the file and what differs unless run file ``path`` is ``cell``'s file over the
    seeds its name says, of this algorithms version, with every one of those seeds."""
    import json

    m = re.search(r"seeds-(\d+)-(\d+)\.npz$", str(path))
    first, end = int(m.group(1)), int(m.group(2))
    want = json.loads(str(identity_of(cell, range(first, end))))
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


def param_count(cell: dict):
    """The number of network parameters of a cell's agent, as its class counts them
    (``param_count(spec, d)``: the neural Ensemble++ family, the paper's formulas), or None for an
    agent class without a count (and for an experiment cell)."""
    if "agent" not in cell:
        return None
    from .agents import AGENTS
    from .envs import ENVIRONMENTS

    count = getattr(AGENTS[cell["agent"]["name"]], "param_count", None)
    if count is None:
        return None
    d, _ = ENVIRONMENTS[cell["env"]["name"]].dimensions(cell["env"])
    return int(count(cell["agent"], d))


def cell_frames(fig: dict, per_job: int, archived=None, files=None) -> dict:
    """{key: rows} of every cell of a resolved figure, as the figure keeps them (compact, finals
    only for ``archive: finals``; :func:`archive.reduce_runs`): ``archived`` ({key: rows} from its
    archive) first, the other cells from their run files."""
    import pandas as pd

    from .archive import archive_mode, reduce_runs

    frames = dict(archived or {})
    files = files or figure_runs(fig, per_job)
    cells = {s["key"]: s["cell"] for s in fig["series"]}
    by_key = {}
    for f in files:
        if run_key(f) not in frames:
            by_key.setdefault(run_key(f), []).append(read_run(f, cells[run_key(f)]))
    mode = archive_mode(fig)
    frames.update({k: reduce_runs(pd.concat(v, ignore_index=True), mode) for k, v in by_key.items()})
    return frames


def _uniform_rate(cell: dict, seeds: int, cache: dict):
    """Per seed 0 .. seeds - 1, the expected per-round regret of a uniformly random policy on the
    environment of ``cell`` (:func:`envs.uniform_regret`; ``cache``: by environment), or None."""
    if "env" not in cell:
        return None
    from .envs import uniform_regret

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
    run files written before the split was measured)."""
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
    out = fin.groupby(["panel", "curve"], sort=False).agg(
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
