"""Figures for the replication pipeline: one ``render`` entry point per plot *kind*.

The papermill notebooks in ``notebooks/`` are thin wrappers around :func:`render`::

    from ensemble_bandits import plotting
    plotting.render("regret_curves", table, spec, out_pdf, out_png)

``table`` is a parquet (or csv) path, a DataFrame, or None; ``spec`` is a JSON path, a dict, or
None.  With both None the kind's built-in demo (:func:`demo`) is drawn, so every notebook runs
standalone.

Spec keys: ``id``, ``title``, ``caption``, ``kind``, ``band`` (``se`` | ``sd`` | ``ci95``),
``panels``, ``curves``, ``scale`` and ``plot`` (kind-specific options, all optional; see the
``_plot_<kind>`` functions).  Statistics are over seeds; standard deviations use ``ddof=1``.

Kinds: regret_curves, final_vs_param, heatmap, min_ensemble_size, table, function_curve, diagram.
"""
from __future__ import annotations

import json
import math
import textwrap
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402
from matplotlib import patches  # noqa: E402

from .atomic import atomic_write  # noqa: E402

KINDS = (
    "regret_curves",
    "final_vs_param",
    "heatmap",
    "min_ensemble_size",
    "table",
    "function_curve",
    "diagram",
)
SIMULATION_KINDS = ("regret_curves", "final_vs_param", "heatmap")
BANDS = {"se": "mean ± s.e.", "sd": "mean ± s.d.", "ci95": "mean ± 95% t-CI"}
DPI = 150
PANEL_W, PANEL_H = 4.0, 3.1  # inches per subplot
LINESTYLES = ["-", "--", ":", "-.", (0, (5, 1, 1, 1)), (0, (1, 1)), (0, (8, 2)), (0, (3, 1, 1, 1, 1, 1))]
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*", "<", ">"]


# --------------------------------------------------------------------------------------------
# statistics
# --------------------------------------------------------------------------------------------
def _halfwidth(std, n, kind: str):
    """Half-width of the band for sample standard deviation(s) ``std`` over ``n`` seeds."""
    std = np.asarray(std, dtype=float)
    n = np.asarray(n, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        if kind == "sd":
            hw = std * np.ones_like(n)
        elif kind == "se":
            hw = std / np.sqrt(n)
        elif kind == "ci95":
            from scipy.stats import t as student_t

            q = student_t.ppf(0.975, np.maximum(n - 1, 1))
            hw = q * std / np.sqrt(n)
        else:
            raise ValueError(f"unknown band {kind!r}; known bands: {', '.join(BANDS)}")
        hw = np.where((n > 1) & np.isfinite(hw), hw, 0.0)
    return hw


def band(values, kind: str = "se"):
    """(mean, lo, hi) of ``values`` (one value per seed; NaNs dropped).

    ``se``: mean ± s/sqrt(n); ``sd``: mean ± s; ``ci95``: mean ± t_{0.975,n-1} s/sqrt(n), where
    s is the sample standard deviation (ddof=1).  With a single value the band has zero width.
    """
    v = np.asarray(values, dtype=float).ravel()
    v = v[np.isfinite(v)]
    if v.size == 0:
        raise ValueError("band() needs at least one finite value")
    mean = float(v.mean())
    std = float(v.std(ddof=1)) if v.size > 1 else 0.0
    hw = float(_halfwidth(std, v.size, kind))
    return mean, mean - hw, mean + hw


def summarise(df: pd.DataFrame, by, y: str = "regret", kind: str = "se") -> pd.DataFrame:
    """Mean and band of column ``y`` grouped by ``by``: columns by + [mean, lo, hi, n]."""
    by = list(by)
    g = df.groupby(by, sort=False, dropna=False)[y]
    out = g.agg(mean="mean", std="std", n="count").reset_index()
    hw = _halfwidth(out["std"].fillna(0.0).to_numpy(), out["n"].to_numpy(), kind)
    out["lo"] = out["mean"] - hw
    out["hi"] = out["mean"] + hw
    return out.drop(columns="std")


def fit_through_origin(x, y):
    """Least-squares slope of y = c x (no intercept) and its R^2 (1 - SS_res / SS_tot, centred)."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    ok = np.isfinite(x) & np.isfinite(y)
    x, y = x[ok], y[ok]
    if x.size == 0 or not np.any(x):
        return float("nan"), float("nan")
    c = float(np.sum(x * y) / np.sum(x * x))
    ss_res = float(np.sum((y - c * x) ** 2))
    ss_tot = float(np.sum((y - y.mean()) ** 2))
    r2 = 1.0 - ss_res / ss_tot if ss_tot > 0 else float("nan")
    return c, r2


def final_rows(df: pd.DataFrame, keys=("panel", "curve"), t: str = "t") -> pd.DataFrame:
    """The rows at the maximum ``t`` of each group ``keys`` (all rows if there is no ``t``)."""
    if t not in df.columns:
        return df
    tmax = df.groupby(list(keys), sort=False, dropna=False)[t].transform("max")
    return df[df[t] == tmax]


# --------------------------------------------------------------------------------------------
# inputs
# --------------------------------------------------------------------------------------------
def _is_none(x) -> bool:
    return x is None or (isinstance(x, str) and x.strip() in ("", "None", "none", "null"))


def load_table(table):
    if _is_none(table):
        return None
    if isinstance(table, pd.DataFrame):
        return table.copy()
    path = Path(table)
    if not path.exists():
        raise FileNotFoundError(f"table {str(path)!r} does not exist")
    if path.suffix == ".csv":
        return pd.read_csv(path)
    from .tables import read_table

    return read_table(path)


def load_spec(spec) -> dict:
    if _is_none(spec):
        return {}
    if isinstance(spec, dict):
        return dict(spec)
    path = Path(spec)
    if not path.exists():
        raise FileNotFoundError(f"spec {str(path)!r} does not exist")
    with open(path) as f:
        out = json.load(f)
    if not isinstance(out, dict):
        raise ValueError(f"spec {str(path)!r} must hold a JSON object, got {type(out).__name__}")
    return out


def _require(df: pd.DataFrame, cols, kind: str):
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise ValueError(
            f"{kind}: table lacks column(s) {missing}; it has {list(df.columns)}"
        )


def _ordered(listed, present):
    """Listed items first (in their order), then any extra present items in first-seen order."""
    listed = [str(x) for x in (listed or [])]
    seen = set(listed)
    extra = []
    for p in present:
        if p not in seen:
            seen.add(p)
            extra.append(p)
    return listed + extra


def _prepare_sim(df: pd.DataFrame, spec: dict, kind: str, need_t: bool = True):
    """Normalise panel/curve columns; return (df, panels, curves)."""
    cols = ["curve"] + (["t"] if need_t else [])
    _require(df, cols, kind)
    df = df.copy()
    if "panel" not in df.columns:
        listed = spec.get("panels") or []
        df["panel"] = str(listed[0]) if len(listed) == 1 else ""
    df["panel"] = df["panel"].astype(str)
    df["curve"] = df["curve"].astype(str)
    panels = _ordered(spec.get("panels"), pd.unique(df["panel"]))
    curves = _ordered(spec.get("curves"), pd.unique(df["curve"]))
    extra = [c for c in pd.unique(df["curve"]) if c not in set(map(str, spec.get("curves") or []))]
    if spec.get("curves") and extra:
        warnings.warn(f"{spec.get('id', kind)}: curves {extra} are not listed in spec.curves; drawn last")
    return df, panels, curves


def _seed_counts(df: pd.DataFrame) -> list[int]:
    """Seeds per (panel, curve)."""
    if "seed" in df.columns:
        n = df.groupby(["panel", "curve"], sort=False)["seed"].nunique()
    elif "t" in df.columns:
        n = df.groupby(["panel", "curve", "t"], sort=False).size().groupby(level=[0, 1]).max()
    else:
        n = df.groupby(["panel", "curve"], sort=False).size()
    return sorted(set(int(v) for v in n.to_numpy()))


def _n_text(ns) -> str:
    if not ns:
        return "n=0 seeds"
    if len(ns) == 1:
        return f"n={ns[0]} seeds"
    return f"n={ns[0]}–{ns[-1]} seeds"


def _fmt_val(v) -> str:
    if isinstance(v, (float, np.floating)) and np.isfinite(v) and float(v).is_integer():
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        return f"{v:g}"
    return str(v)


def _value_label(col: str, v) -> str:
    if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool):
        return f"{col} = {_fmt_val(v)}"
    return str(v)


def _sorted_values(values):
    vals = [v for v in values if not _isnull(v)]
    try:
        return sorted(set(vals), key=lambda v: float(v))
    except (TypeError, ValueError):
        out = []
        for v in vals:
            if v not in out:
                out.append(v)
        return out


def _isnull(v) -> bool:
    try:
        return bool(pd.isna(v))
    except (TypeError, ValueError):
        return False


def _palette(n: int):
    if n <= 10:
        return sns.color_palette("colorblind", max(n, 1))
    return sns.color_palette("husl", n)


def _curve_attr(df: pd.DataFrame, col: str) -> dict:
    if col not in df.columns:
        raise ValueError(f"plot option refers to column {col!r}, absent from the table; it has {list(df.columns)}")
    return df.groupby("curve", sort=False)[col].first().to_dict()


def _curve_styles(df: pd.DataFrame, curves, plot: dict) -> dict:
    """curve -> dict(color=..., linestyle=...), consistent across panels."""
    hue_by, style_by = plot.get("hue_by"), plot.get("style_by")
    black = set(map(str, plot.get("black") or []))
    styles = {}
    if hue_by:
        attr = _curve_attr(df, hue_by)
        values = _sorted_values(attr.get(c) for c in curves)
        nulls = [c for c in curves if _isnull(attr.get(c)) and c not in black]
        pal = _palette(len(values) + len(nulls))
        for c in curves:
            v = attr.get(c)
            if not _isnull(v):
                color = pal[values.index(v)]
            elif c in nulls:
                color = pal[len(values) + nulls.index(c)]
            else:
                color = "black"
            styles[c] = {"color": color}
    else:
        coloured = [c for c in curves if c not in black]
        pal = _palette(min(len(coloured), 10))
        for i, c in enumerate(coloured):
            styles[c] = {"color": pal[i % len(pal)]}
    if style_by:
        attr = _curve_attr(df, style_by)
        values = _sorted_values(attr.get(c) for c in curves)
        for c in curves:
            v = attr.get(c)
            ls = "-" if _isnull(v) else LINESTYLES[values.index(v) % len(LINESTYLES)]
            styles.setdefault(c, {})["linestyle"] = ls
    elif not hue_by and len([c for c in curves if c not in black]) > 10:
        coloured = [c for c in curves if c not in black]
        for i, c in enumerate(coloured):
            styles[c]["linestyle"] = LINESTYLES[(i // 10) % len(LINESTYLES)]
    for c in curves:
        styles.setdefault(c, {})
        if c in black:
            styles[c]["color"] = "black"
        styles[c].setdefault("linestyle", "-")
    return styles


# --------------------------------------------------------------------------------------------
# figure helpers
# --------------------------------------------------------------------------------------------
def _rc():
    rc = {}
    rc.update(sns.axes_style("whitegrid"))
    rc.update(sns.plotting_context("paper", font_scale=1.15))
    rc.update({
        "axes.prop_cycle": matplotlib.cycler(color=sns.color_palette("colorblind")),
        "pdf.fonttype": 42,
        "ps.fonttype": 42,
        "legend.frameon": True,
        "legend.framealpha": 0.85,
        "legend.fontsize": "small",
        "figure.dpi": 100,
        "savefig.dpi": DPI,
    })
    return rc


def _grid(n: int, ncols=None):
    ncols = int(ncols) if ncols else n
    ncols = max(1, min(ncols, n))
    nrows = max(1, math.ceil(n / ncols))
    return nrows, ncols


def _subplots(n: int, ncols=None, w=PANEL_W, h=PANEL_H, **kw):
    nrows, ncols = _grid(n, ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(w * ncols, h * nrows + 0.6), squeeze=False, **kw)
    flat = list(axes.ravel())
    for ax in flat[n:]:
        ax.set_visible(False)
    return fig, flat[:n]


def _footer_text(spec: dict, kind: str, n_text: str | None = None, band_kind: str | None = None) -> str:
    parts = [str(spec.get("id") or f"demo-{kind}"), f"scale={spec.get('scale') or 'demo'}"]
    if n_text:
        parts.append(n_text)
    if band_kind:
        parts.append(f"band: {BANDS.get(band_kind, band_kind)}")
    return " · ".join(parts)


def _finish(fig, spec: dict, kind: str, footer: str):
    """Title on top, footer at the bottom, tight layout in between."""
    w, h = fig.get_size_inches()
    title = spec.get("title") or kind.replace("_", " ")
    fig.suptitle(title, fontsize=12, y=1 - 0.06 / h, va="top")
    fig.text(0.5, 0.04 / h, footer, ha="center", va="bottom", fontsize=7, color="0.35")
    rect = (0, 0.26 / h, 1, 1)  # tight_layout makes room for the suptitle itself
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fig.tight_layout(rect=rect)
    outside = getattr(fig, "_eb_outside_legend", None)
    if outside:
        handles, labels, ncol = outside
        right = max(ax.get_position().x1 for ax in fig.axes if ax.get_visible())
        fig.legend(handles, labels, loc="center left", bbox_to_anchor=(right + 0.025, 0.5), ncol=ncol)


def _atomic_write(path, write):
    """Atomic write with the target's suffix (matplotlib infers the format from it)."""
    return atomic_write(path, write, suffix=Path(path).suffix or ".tmp")


def save_figure(fig, out_pdf=None, out_png=None) -> dict:
    """Write fig atomically to out_pdf (vector) and out_png (150 dpi); either may be None."""
    written = {}
    for key, path, fmt in (("pdf", out_pdf, "pdf"), ("png", out_png, "png")):
        if _is_none(path):
            continue
        meta = {"CreationDate": None} if fmt == "pdf" else {"Software": None}

        def write(tmp, fmt=fmt, meta=meta):
            fig.savefig(tmp, format=fmt, dpi=DPI, bbox_inches="tight", pad_inches=0.08, metadata=meta)

        written[key] = _atomic_write(path, write)
    return written


def _no_data(ax, label=""):
    ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes, color="0.5")
    ax.set_title(label)
    ax.set_xticks([])
    ax.set_yticks([])


def _default_ylabel(y: str, final: bool = False) -> str:
    if y == "regret":
        return "final cumulative regret" if final else "cumulative regret"
    if y == "seconds":
        return "wall time (s)"
    return y


def _ref_hlines(ax, plot):
    """plot.hline: a number or a list of numbers drawn as dashed grey reference lines
    (label from plot.hline_label, default "y = <value>")."""
    vals = plot.get("hline")
    if vals is None:
        return
    vals = vals if isinstance(vals, (list, tuple)) else [vals]
    labels = plot.get("hline_label")
    labels = labels if isinstance(labels, (list, tuple)) else [labels] * len(vals)
    for v, lab in zip(vals, labels):
        ax.axhline(float(v), color="0.35", ls="--", lw=1.0, label=lab or f"y = {float(v):g}")


def _legend(ax, handles, labels, loc="best", ncol=1):
    """Legend inside ``ax`` at ``loc``, or with loc="outside" one figure legend right of the panels
    (saved figures use bbox_inches="tight", so it is kept)."""
    if not handles:
        return None
    if loc == "outside":
        fig = ax.figure
        fig._eb_outside_legend = (handles, labels, ncol)  # placed by _finish, after tight_layout
        return None
    return ax.legend(handles, labels, loc=loc, ncol=ncol)


# --------------------------------------------------------------------------------------------
# kind 1: regret curves
# --------------------------------------------------------------------------------------------
def _plot_regret_curves(df, spec, plot):
    """Options: y, x (default t), ylabel, xlabel, ncols, legend_split, legend_split_at,
    legend_loc ("best", any matplotlib loc, or "outside"), style_by, hue_by, black, logx, logy,
    ylim, alpha (band opacity), hline / hline_label (numeric reference line(s))."""
    kind = "regret_curves"
    df, panels, curves = _prepare_sim(df, spec, kind)
    y = plot.get("y", "regret")
    x = plot.get("x", "t")
    _require(df, [x, y], kind)
    band_kind = spec.get("band", "se")
    stats = summarise(df, ["panel", "curve", x], y, band_kind).sort_values(["panel", "curve", x])
    styles = _curve_styles(df, curves, plot)
    fig, axes = _subplots(len(panels), plot.get("ncols"))
    lines = {}
    for ax, panel in zip(axes, panels):
        sp = stats[stats["panel"] == panel]
        if sp.empty:
            _no_data(ax, panel)
            continue
        for c in curves:
            s = sp[sp["curve"] == c]
            if s.empty:
                continue
            st = styles[c]
            (ln,) = ax.plot(s[x], s["mean"], label=c, color=st["color"], linestyle=st["linestyle"], lw=1.6)
            ax.fill_between(s[x], s["lo"], s["hi"], color=st["color"], alpha=plot.get("alpha", 0.18), lw=0)
            lines.setdefault(panel, {})[c] = ln
        _ref_hlines(ax, plot)
        ax.set_title(panel)
        ax.set_xlabel(plot.get("xlabel", "round t" if x == "t" else x))
        ax.set_ylabel(plot.get("ylabel", _default_ylabel(y)))
        if plot.get("logx"):
            ax.set_xscale("log")
        if plot.get("logy"):
            ax.set_yscale("log")
        elif y == "regret":
            ax.set_ylim(bottom=0)
        if plot.get("ylim"):
            ax.set_ylim(*plot["ylim"])
        ax.set_xlim(left=sp[x].min() if plot.get("logx") else min(0, sp[x].min()), right=sp[x].max())
    # legends: one handle per curve (first panel where it appears), then reference lines
    handle = {}
    for panel in panels:
        for c, ln in lines.get(panel, {}).items():
            handle.setdefault(c, ln)
    present = [c for c in curves if c in handle]
    if axes:
        for h, lab in zip(*axes[0].get_legend_handles_labels()):
            if lab not in handle:
                handle[lab] = h
                present.append(lab)
                curves = list(curves) + [lab]
    loc = plot.get("legend_loc") or ("best" if len(present) <= 8 else "outside")
    if plot.get("legend_split") and len(axes) >= 2:
        loc = "best" if loc == "outside" else loc
        k = int(plot.get("legend_split_at") or math.ceil(len(present) / 2))
        first, rest = [c for c in curves[:k] if c in handle], [c for c in curves[k:] if c in handle]
        _legend(axes[0], [handle[c] for c in first], first, loc)
        _legend(axes[1], [handle[c] for c in rest], rest, loc)
    elif axes:
        _legend(axes[0], [handle[c] for c in present], present, loc)
    footer = _footer_text(spec, kind, _n_text(_seed_counts(df)), band_kind)
    _finish(fig, spec, kind, footer)
    return fig


# --------------------------------------------------------------------------------------------
# kind 2: final value vs a parameter
# --------------------------------------------------------------------------------------------
def _plot_final_vs_param(df, spec, plot):
    """Options: x (required column), hue (column; default: one line per curve), y, ylabel, xlabel,
    logx, logy, base (log base of x, default 10), base_y (of y, default 10), hlines (curve labels
    drawn as horizontal reference lines with their band), reference_slope (dotted c*x^s through the
    first point of the first line), kind ("line" | "bar"), black (line keys drawn black), ncols,
    legend_loc, x_order (categorical order), ylim, hline / hline_label (numeric reference lines)."""
    kind = "final_vs_param"
    df, panels, curves = _prepare_sim(df, spec, kind, need_t=False)
    xcol = plot.get("x")
    if not xcol:
        raise ValueError(f"{kind}: spec.plot.x (the column on the x axis) is required")
    y = plot.get("y", "regret")
    hue = plot.get("hue")
    _require(df, [xcol, y] + ([hue] if hue else []), kind)
    band_kind = spec.get("band", "se")
    hl_curves = [str(c) for c in (plot.get("hlines") or [])]
    # final rows of each (panel, curve, x)
    df["_x"] = df[xcol]
    final = final_rows(df, ("panel", "curve", "_x"))
    hl = final[final["curve"].isin(hl_curves)]
    pts = final[~final["curve"].isin(hl_curves)]
    dropped = pts[pts["_x"].isna()]["curve"].unique()
    if len(dropped):
        warnings.warn(f"{spec.get('id', kind)}: curves {list(dropped)} have no {xcol!r} value and are not in "
                      f"plot.hlines; they are left out")
    pts = pts[pts["_x"].notna()].copy()
    if hue:
        pts["_line"] = pts[hue].astype(object).where(pts[hue].notna(), pts["curve"])  # no hue value: own line
        order = []
        for c in curves:
            for v in pd.unique(pts.loc[pts["curve"] == c, "_line"]):
                if v not in order:
                    order.append(v)
        line_keys = order
        line_label = {v: _value_label(hue, v) for v in line_keys}
    else:
        pts["_line"] = pts["curve"]
        line_keys = [c for c in curves if c in set(pts["curve"])]
        line_label = {c: c for c in line_keys}
    stats = summarise(pts, ["panel", "_line", "_x"], y, band_kind)
    hstats = summarise(hl, ["panel", "curve"], y, band_kind) if len(hl) else None
    categorical = plot.get("kind", "line") == "bar" or not pd.api.types.is_numeric_dtype(pts["_x"])
    if categorical:
        if pd.api.types.is_numeric_dtype(pts["_x"]):
            seen = _sorted_values(pts["_x"])
        else:  # first appearance, following the order of spec.curves
            rank = {c: i for i, c in enumerate(curves)}
            seen = pts.assign(_r=pts["curve"].map(rank)).sort_values("_r", kind="stable")["_x"]
        xcats = _ordered(plot.get("x_order"), [_fmt_val(v) for v in seen])
    pal = _palette(len(line_keys))
    black = set(map(str, plot.get("black") or []))
    colors = {k: ("black" if str(k) in black else pal[i]) for i, k in enumerate(line_keys)}
    fig, axes = _subplots(len(panels), plot.get("ncols"))
    base = plot.get("base", 10)
    for ax, panel in zip(axes, panels):
        sp = stats[stats["panel"] == panel]
        hp = hstats[hstats["panel"] == panel] if hstats is not None else None
        if sp.empty and (hp is None or hp.empty):
            _no_data(ax, panel)
            continue
        keys = [k for k in line_keys if (sp["_line"] == k).any()]
        nk = max(len(keys), 1)
        for i, k in enumerate(keys):
            s = sp[sp["_line"] == k]
            if categorical:
                pos = {c: j for j, c in enumerate(xcats)}
                s = s.assign(_pos=s["_x"].map(_fmt_val).map(pos)).sort_values("_pos")
                err = np.vstack([s["mean"] - s["lo"], s["hi"] - s["mean"]])
                if plot.get("kind", "line") == "bar":
                    width = 0.8 / nk
                    ax.bar(s["_pos"] - 0.4 + width * (i + 0.5), s["mean"], width=width, yerr=err, capsize=2,
                           color=colors[k], label=line_label[k], error_kw={"lw": 0.9})
                else:
                    ax.errorbar(s["_pos"], s["mean"], yerr=err, marker=MARKERS[i % len(MARKERS)], ms=4,
                                capsize=3, color=colors[k], label=line_label[k], lw=1.4)
            else:
                s = s.sort_values("_x")
                err = np.vstack([s["mean"] - s["lo"], s["hi"] - s["mean"]])
                ax.errorbar(s["_x"].astype(float), s["mean"], yerr=err, marker=MARKERS[i % len(MARKERS)], ms=4,
                            capsize=3, color=colors[k], label=line_label[k], lw=1.4)
        if hp is not None:
            greys = ["black", "0.45", "0.65"]
            for j, c in enumerate([c for c in hl_curves if (hp["curve"] == c).any()]):
                h = hp[hp["curve"] == c].iloc[0]
                col = greys[j % len(greys)]
                ax.axhline(h["mean"], color=col, ls="--", lw=1.2, label=c)
                ax.axhspan(h["lo"], h["hi"], color=col, alpha=0.12, lw=0)
        slope = plot.get("reference_slope")
        if slope is not None and not categorical and keys:
            s0 = sp[sp["_line"] == keys[0]].sort_values("_x")
            x0, y0 = float(s0["_x"].iloc[0]), float(s0["mean"].iloc[0])
            xs = np.linspace(float(sp["_x"].min()), float(sp["_x"].max()), 100)
            if plot.get("logx"):
                xs = np.geomspace(float(sp["_x"].min()), float(sp["_x"].max()), 100)
            if x0 > 0:
                ax.plot(xs, y0 * (xs / x0) ** float(slope), color="0.4", ls=":", lw=1.3,
                        label=f"slope {float(slope):g}")
        _ref_hlines(ax, plot)
        if categorical:
            ax.set_xticks(range(len(xcats)))
            rot = 30 if max((len(c) for c in xcats), default=0) > 6 else 0
            ax.set_xticklabels(xcats, rotation=rot, ha="right" if rot else "center")
        else:
            if plot.get("logx"):
                ax.set_xscale("log", base=base)
            xv = _sorted_values(sp["_x"])
            if 0 < len(xv) <= 12:
                ax.set_xticks([float(v) for v in xv])
                ax.set_xticklabels([_fmt_val(v) for v in xv])
                if plot.get("logx"):
                    ax.minorticks_off()
        if plot.get("logy"):
            ax.set_yscale("log", base=plot.get("base_y", 10))
        if plot.get("ylim"):
            ax.set_ylim(*plot["ylim"])
        ax.set_title(panel)
        ax.set_xlabel(plot.get("xlabel", xcol))
        ax.set_ylabel(plot.get("ylabel", _default_ylabel(y, final=True)))
    handles = {}
    for ax in axes:  # one entry per label, from whichever panel has it
        for h, lab in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(lab, h)
    loc = plot.get("legend_loc") or ("best" if len(handles) <= 8 else "outside")
    if axes:
        _legend(axes[0], list(handles.values()), list(handles), loc)
    footer = _footer_text(spec, "final_vs_param", _n_text(_seed_counts(final)), band_kind)
    _finish(fig, spec, kind, footer)
    return fig


# --------------------------------------------------------------------------------------------
# kind 3: heatmap
# --------------------------------------------------------------------------------------------
def _plot_heatmap(df, spec, plot):
    """Options: facet (default "M"; columns of the figure), row (default "reference"), col
    (default "perturbation"), normalise_by (curve label), y, row_order, col_order, cmap
    (default "YlGnBu_r": darker = lower), fmt."""
    kind = "heatmap"
    df, panels, curves = _prepare_sim(df, spec, kind, need_t=False)
    y = plot.get("y", "regret")
    rcol, ccol = plot.get("row", "reference"), plot.get("col", "perturbation")
    facet = plot.get("facet", "M")
    _require(df, [y, rcol, ccol], kind)
    if facet not in df.columns:
        if "facet" in plot:
            _require(df, [facet], kind)
        facet = None
    final = final_rows(df, ("panel", "curve"))
    norm = plot.get("normalise_by")
    base = {}
    if norm:
        nb = final[final["curve"] == str(norm)]
        if nb.empty:
            raise ValueError(f"{kind}: plot.normalise_by={norm!r} is not a curve of the table; curves: {curves}")
        base = nb.groupby("panel")[y].mean().to_dict()
    cells = final[(final["curve"] != str(norm)) & final[rcol].notna() & final[ccol].notna()].copy()
    cells[rcol] = cells[rcol].astype(str)
    cells[ccol] = cells[ccol].astype(str)
    rows = _ordered(plot.get("row_order"), pd.unique(cells[rcol]))
    cols = _ordered(plot.get("col_order"), pd.unique(cells[ccol]))
    facets = _sorted_values(cells[facet]) if facet else [None]
    keys = ["panel", rcol, ccol] + ([facet] if facet else [])
    means = cells.groupby(keys, dropna=False)[y].mean()
    nr, nc, nf, npn = len(rows), len(cols), len(facets), len(panels)
    cw, ch = max(2.2, 0.48 * nc + 0.9), max(1.9, 0.4 * nr + 0.9)
    fig = plt.figure(figsize=(cw * nf + 1.3, ch * npn + 0.7))
    gs = fig.add_gridspec(npn, nf + 1, width_ratios=[1] * nf + [0.06])
    cmap = plt.get_cmap(plot.get("cmap", "YlGnBu_r")).with_extremes(bad="0.92")
    fmt = plot.get("fmt", ".2f" if norm else ".0f")
    for i, panel in enumerate(panels):
        mats = []
        for f in facets:
            m = np.full((nr, nc), np.nan)
            for a, r in enumerate(rows):
                for b, c in enumerate(cols):
                    key = (panel, r, c) + ((f,) if facet else ())
                    if key in means.index:
                        m[a, b] = means.loc[key]
            if norm:
                if panel not in base:
                    raise ValueError(f"{kind}: panel {panel!r} has no {norm!r} curve to normalise by")
                m = m / base[panel]
            mats.append(m)
        finite = np.concatenate([m[np.isfinite(m)] for m in mats]) if mats else np.array([])
        vmin, vmax = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
        if vmin == vmax:
            vmin, vmax = vmin - 0.5, vmax + 0.5
        im = None
        for j, (f, m) in enumerate(zip(facets, mats)):
            ax = fig.add_subplot(gs[i, j])
            ax.grid(False)
            im = ax.imshow(m, cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto")
            for a in range(nr):
                for b in range(nc):
                    v = m[a, b]
                    if np.isfinite(v):
                        rgba = cmap((v - vmin) / (vmax - vmin))
                        lum = 0.299 * rgba[0] + 0.587 * rgba[1] + 0.114 * rgba[2]
                        ax.text(b, a, format(v, fmt), ha="center", va="center", fontsize=7,
                                color="white" if lum < 0.5 else "black")
            ax.set_xticks(range(nc))
            ax.set_yticks(range(nr))
            ax.set_xticklabels(cols if i == npn - 1 else [], rotation=40, ha="right", fontsize=8)
            ax.set_yticklabels(rows if j == 0 else [], fontsize=8)
            ax.tick_params(length=0)
            for s in ax.spines.values():
                s.set_visible(False)
            title = _value_label(facet, f) if facet else ""
            ax.set_title(title if npn == 1 or not panel else (f"{panel} · {title}" if title else panel), fontsize=9)
            if j == 0:
                ax.set_ylabel(rcol)
            if i == npn - 1:
                ax.set_xlabel(ccol)
        cax = fig.add_subplot(gs[i, nf])
        cb = fig.colorbar(im, cax=cax)
        cb.set_label(f"final {y} / {norm}" if norm else f"final {y}", fontsize=8)
        cb.ax.tick_params(labelsize=7)
    footer = _footer_text(spec, kind, _n_text(_seed_counts(final)), None)
    footer += " · darker = lower regret"
    _finish(fig, spec, kind, footer)
    return fig


# --------------------------------------------------------------------------------------------
# kind 4: minimum ensemble size vs d
# --------------------------------------------------------------------------------------------
def _plot_min_ensemble_size(df, spec, plot):
    """Table columns d, n_arms, M_min (NaN = not reached), optional M_max_tried and panel.
    Options: x (default d), y (default M_min), group (default n_arms), xlabel, ylabel, logy, fit."""
    kind = "min_ensemble_size"
    xcol, ycol, gcol = plot.get("x", "d"), plot.get("y", "M_min"), plot.get("group", "n_arms")
    _require(df, [xcol, ycol, gcol], kind)
    df = df.copy()
    if "panel" not in df.columns:
        df["panel"] = ""
    df["panel"] = df["panel"].astype(str)
    panels = _ordered(spec.get("panels"), pd.unique(df["panel"]))
    groups = _sorted_values(df[gcol])
    pal = _palette(len(groups))
    outside = plot.get("legend_loc", "outside") == "outside"
    fig, axes = _subplots(len(panels), plot.get("ncols"), w=4.4 + (2.5 if outside else 0), h=3.5)
    for ax, panel in zip(axes, panels):
        sp = df[df["panel"] == panel]
        if sp.empty:
            _no_data(ax, panel)
            continue
        finite_y = sp[ycol][np.isfinite(sp[ycol].astype(float))]
        top_default = float(finite_y.max()) * 1.15 if len(finite_y) else 1.0
        missing_labelled = False
        for i, g in enumerate(groups):
            s = sp[sp[gcol] == g].sort_values(xcol)
            if s.empty:
                continue
            yv = s[ycol].astype(float)
            ok = np.isfinite(yv)
            label = f"|X| = {int(g):,}" if gcol == "n_arms" else _value_label(gcol, g)
            ax.plot(s[xcol][ok], yv[ok], marker=MARKERS[i % len(MARKERS)], ms=5, lw=1.4, color=pal[i], label=label)
            if (~ok).any():
                if "M_max_tried" in s.columns:
                    top = s["M_max_tried"].astype(float)[~ok].fillna(top_default)
                else:
                    top = np.full(int((~ok).sum()), top_default)
                ax.scatter(s[xcol][~ok], top, marker="x", s=45, color=pal[i], zorder=4,
                           label=None if missing_labelled else "not reached (top of grid)")
                missing_labelled = True
        if plot.get("fit", True):
            c, r2 = fit_through_origin(sp[xcol], sp[ycol])
            if np.isfinite(c):
                xs = np.linspace(0, float(sp[xcol].max()), 50)
                ax.plot(xs, c * xs, color="0.3", ls="--", lw=1.2,
                        label=f"LS fit through 0:\n{ycol} = {c:.3g}·{xcol}, R² = {r2:.2f}")
        ax.set_xlabel(plot.get("xlabel", "dimension d" if xcol == "d" else xcol))
        ax.set_ylabel(plot.get("ylabel", "minimum ensemble size $M_{\\min}$" if ycol == "M_min" else ycol))
        if plot.get("logy"):
            ax.set_yscale("log", base=plot.get("base", 10))
        else:
            ax.set_ylim(bottom=0)
        ax.set_xlim(left=0)
        ax.set_title(panel)
        loc = plot.get("legend_loc", "outside")
        if loc == "outside":  # right of each panel (the fit label differs per panel)
            ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)
        else:
            ax.legend(loc=loc)
    n_text = None
    for c in ("n_seeds", "seeds", "n"):
        if c in df.columns:
            n_text = _n_text(sorted(set(int(v) for v in df[c].dropna())))
            break
    _finish(fig, spec, kind, _footer_text(spec, kind, n_text))
    return fig


# --------------------------------------------------------------------------------------------
# kind 5: table
# --------------------------------------------------------------------------------------------
def _fmt_cell(v, floatfmt=None) -> str:
    if _isnull(v):
        return ""
    if isinstance(v, (bool, np.bool_)):
        return str(bool(v))
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        v = float(v)
        if floatfmt:
            return format(v, floatfmt)
        if v.is_integer() and abs(v) < 1e15:
            return str(int(v))
        a = abs(v)
        if 1e-3 <= a < 1e7:
            out = f"{v:.{max(0, 3 - math.floor(math.log10(a)))}f}"
            return out.rstrip("0").rstrip(".") if "." in out else out
        return f"{v:.4g}"
    return str(v)


def _markdown(df: pd.DataFrame) -> str:
    """Pipe table of a DataFrame of strings (pipes escaped, newlines flattened)."""
    esc = lambda s: str(s).replace("|", "\\|").replace("\n", " ")  # noqa: E731
    df = pd.DataFrame([[esc(v) for v in row] for row in df.itertuples(index=False)],
                      columns=[esc(c) for c in df.columns])
    try:
        import tabulate  # noqa: F401

        return df.to_markdown(index=False, disable_numparse=True)
    except ImportError:
        lines = ["| " + " | ".join(df.columns) + " |", "|" + "|".join("---" for _ in df.columns) + "|"]
        for row in df.itertuples(index=False):
            lines.append("| " + " | ".join(row) + " |")
        return "\n".join(lines)


def _plot_table(df, spec, plot):
    """Any DataFrame.  Options: wrap (characters per line, default 28), floatfmt (e.g. ".3f"),
    fontsize (default 8), index (bool: include the index as a first column)."""
    kind = "table"
    if plot.get("index"):
        df = df.reset_index()
    wrap = int(plot.get("wrap", 28))
    ff = plot.get("floatfmt")
    body = [[_fmt_cell(v, ff) for v in row] for row in df.itertuples(index=False)]
    header = [str(c) for c in df.columns]
    wrapped_h = ["\n".join(textwrap.wrap(h, wrap) or [""]) for h in header]
    wrapped = [["\n".join(textwrap.wrap(s, wrap) or [""]) for s in row] for row in body]
    allrows = [wrapped_h] + wrapped
    ncol = max(len(header), 1)
    chars = [max((max((len(x) for x in r[j].split("\n")), default=0) for r in allrows), default=1)
             for j in range(ncol)]
    chars = [max(c, 3) for c in chars]
    lines = [max((r[j].count("\n") + 1 for j in range(ncol)), default=1) for r in allrows]
    fs = float(plot.get("fontsize", 8))
    char_w, line_h = 0.0085 * fs, 0.021 * fs  # inches
    col_w = [c * char_w + 0.16 for c in chars]
    row_h = [n * line_h + 0.08 for n in lines]
    width = max(4.0, sum(col_w) + 0.2)
    height = sum(row_h) + 0.9
    fig = plt.figure(figsize=(width, height))
    ax = fig.add_axes((0.1 / width, 0.3 / height, 1 - 0.2 / width, 1 - 0.75 / height))
    ax.axis("off")
    if not body:
        ax.text(0.5, 0.5, "(empty table)", ha="center", va="center", color="0.5")
    else:
        tab = ax.table(cellText=wrapped, colLabels=wrapped_h, cellLoc="left", colLoc="left", bbox=(0, 0, 1, 1))
        tab.auto_set_font_size(False)
        tab.set_fontsize(fs)
        tw, th = sum(col_w), sum(row_h)
        for (r, c), cell in tab.get_celld().items():
            cell.set_width(col_w[c] / tw)
            cell.set_height(row_h[r] / th)
            cell.set_linewidth(0.4)
            cell.set_edgecolor("0.6")
            cell.PAD = 0.04
            if r == 0:
                cell.set_facecolor("0.9")
                cell.get_text().set_fontweight("bold")
            elif r % 2 == 0:
                cell.set_facecolor("0.97")
    _finish(fig, spec, kind, _footer_text(spec, kind))
    md_df = pd.DataFrame([[_fmt_cell(v, ff) for v in row] for row in df.itertuples(index=False)], columns=header)
    return fig, md_df


def _write_markdown(md_df, spec, path):
    title = spec.get("title")
    parts = []
    if title:
        parts.append(f"**{title}**\n")
    parts.append(_markdown(md_df))
    if spec.get("caption"):
        parts.append(f"\n_{spec['caption']}_")
    text = "\n".join(parts) + "\n"

    def write(tmp):
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)

    return _atomic_write(path, write)


# --------------------------------------------------------------------------------------------
# kind 6: function curve
# --------------------------------------------------------------------------------------------
def _plot_function_curve(df, spec, plot):
    """Options: x (default b), y (default l), series (default T0), xlabel, ylabel, logy, logx,
    vline (float), vline_label, ylim, xlim."""
    kind = "function_curve"
    xcol, ycol, scol = plot.get("x", "b"), plot.get("y", "l"), plot.get("series", "T0")
    _require(df, [xcol, ycol], kind)
    df = df.copy()
    if "panel" not in df.columns:
        df["panel"] = ""
    df["panel"] = df["panel"].astype(str)
    panels = _ordered(spec.get("panels"), pd.unique(df["panel"]))
    has_series = scol in df.columns
    series = _sorted_values(df[scol]) if has_series else [None]
    pal = _palette(len(series))
    fig, axes = _subplots(len(panels), plot.get("ncols"), w=4.6, h=3.4)
    for ax, panel in zip(axes, panels):
        sp = df[df["panel"] == panel]
        for i, sv in enumerate(series):
            s = sp[sp[scol] == sv] if has_series else sp
            s = s.sort_values(xcol)
            if s.empty:
                continue
            ax.plot(s[xcol], s[ycol], color=pal[i], lw=1.6, ls=LINESTYLES[(i // 10) % len(LINESTYLES)],
                    label=_value_label(scol, sv) if has_series else ycol)
        if plot.get("vline") is not None:
            v = float(plot["vline"])
            ax.axvline(v, color="0.3", ls="--", lw=1.1, label=plot.get("vline_label", f"{xcol} = {v:g}"))
        if plot.get("logy"):
            ax.set_yscale("log")
        if plot.get("logx"):
            ax.set_xscale("log")
        if plot.get("ylim"):
            ax.set_ylim(*plot["ylim"])
        if plot.get("xlim"):
            ax.set_xlim(*plot["xlim"])
        ax.set_xlabel(plot.get("xlabel", xcol))
        ax.set_ylabel(plot.get("ylabel", ycol))
        ax.set_title(panel)
        ax.legend(loc=plot.get("legend_loc", "best"))
    _finish(fig, spec, kind, _footer_text(spec, kind))
    return fig


# --------------------------------------------------------------------------------------------
# kind 7: dependence diagrams (Ensemble++ Figs. 5 and 7)
# --------------------------------------------------------------------------------------------
def _plot_diagram(df, spec, plot):
    """Options: diagram ("rrls": Fig. 5, RRLS with theta_s; "seq": Fig. 7, Ensemble++ with bold
    Z_0, z_s and the ensemble factor A_s), note (bool, default True: the caption sentence)."""
    kind = "diagram"
    which = plot.get("diagram", "rrls")
    if which not in ("rrls", "seq"):
        raise ValueError(f"diagram: plot.diagram must be 'rrls' or 'seq', got {which!r}")
    cols = ["0", "1", "2", "3", "dots", "t", "t+1"]
    X = {c: 1.55 * i for i, c in enumerate(cols)}
    Y_X, Y_E, Y_Z = 2.2, 1.1, 0.0
    sub = {"1": "1", "2": "2", "3": "3", "t": "t", "t+1": "{t+1}", "0": "0"}
    prev = {"1": "0", "2": "1", "3": "2", "dots": "3", "t": "dots", "t+1": "t"}
    if which == "rrls":
        est = lambda s: rf"$\theta_{sub[s]}$"  # noqa: E731
        noise = lambda s: rf"$Z_{sub[s]}$"  # noqa: E731
        est_row, noise_row = "estimate $\\theta_s$ (recursive)", "perturbation $Z_s \\sim N(0,1)$"
        note = ("Sequential dependence: $X_{t+1}$ depends on $Z_1,\\ldots,Z_t$ through the recursive estimate "
                "$\\theta_t$,\nso $Z_1,\\ldots,Z_t$ are no longer i.i.d. when conditioned on the data $X_{t+1}$.")
    else:
        est = lambda s: rf"$\mathbf{{A}}_{sub[s]}$"  # noqa: E731
        noise = lambda s: rf"$\mathbf{{z}}_{sub[s]}$" if s != "0" else r"$\mathbf{Z}_0$"  # noqa: E731
        est_row, noise_row = "ensemble factor $\\mathbf{A}_s$", "perturbation $\\mathbf{z}_s$"
        note = ("The choice of action $X_t$ depends on past random perturbations "
                "$\\mathbf{Z}_0,\\mathbf{z}_1,\\ldots,\\mathbf{z}_{t-1}$,\n"
                "so standard Johnson-Lindenstrauss results are insufficient in this setting.")
    fig = plt.figure(figsize=(10.5, 4.4))
    ax = fig.add_axes((0.02, 0.62 / 4.4, 0.96, 3.35 / 4.4))
    ax.set_xlim(-2.75, X["t+1"] + 0.6)
    ax.set_ylim(-0.95, Y_X + 0.85)
    ax.set_aspect("equal")
    ax.axis("off")
    r = 0.36
    pal = sns.color_palette("colorblind")
    pos = {}

    def node(key, x, y, label, shape="circle", face="white", edge="black", lw=1.2):
        if shape == "circle":
            p = patches.Circle((x, y), r, facecolor=face, edgecolor=edge, lw=lw, zorder=3)
        else:
            p = patches.FancyBboxPatch((x - r * 0.95, y - r * 0.8), 2 * r * 0.95, 1.6 * r,
                                       boxstyle="round,pad=0.02,rounding_size=0.1",
                                       facecolor=face, edgecolor=edge, lw=lw, zorder=3)
        ax.add_patch(p)
        ax.text(x, y, label, ha="center", va="center", fontsize=11, zorder=4)
        pos[key] = (x, y)

    def dots(key, x, y):
        ax.text(x, y, r"$\cdots$", ha="center", va="center", fontsize=16, zorder=4)
        pos[key] = (x, y)

    def arrow(a, b, color="0.15", style="-|>", ls="-", rad=0.0):
        (x1, y1), (x2, y2) = pos[a], pos[b]
        v = np.array([x2 - x1, y2 - y1])
        u = v / np.linalg.norm(v)
        sa = 0.18 if a.endswith("dots") else r * 1.02
        sb = 0.18 if b.endswith("dots") else r * 1.08
        p1 = (x1 + sa * u[0], y1 + sa * u[1])
        p2 = (x2 - sb * u[0], y2 - sb * u[1])
        ax.add_patch(patches.FancyArrowPatch(p1, p2, arrowstyle=style, mutation_scale=11, color=color, lw=1.1,
                                             linestyle=ls, connectionstyle=f"arc3,rad={rad}", zorder=2))

    obs_face = (*pal[0], 0.25)
    for c in cols:
        x = X[c]
        if c == "dots":
            dots("E" + c, x, Y_E)
            dots("X" + c, x, Y_X)
            dots("Z" + c, x, Y_Z)
            continue
        if c != "t+1":
            node("E" + c, x, Y_E, est(c), shape="box", face=(*pal[2], 0.18))
        if c != "0":
            hl = c == "t+1"
            node("X" + c, x, Y_X, rf"$X_{sub[c]}$", face=(*pal[3], 0.35) if hl else obs_face,
                 lw=2.2 if hl else 1.2)
        if c not in ("0", "t+1") or (c == "0" and which == "seq"):
            node("Z" + c, x, Y_Z, noise(c), face=(*pal[1], 0.18))
    for c in cols[1:]:
        p = prev[c]
        if c != "dots":
            arrow("E" + p, "X" + c)  # the estimate chooses the next action
        if c not in ("t+1",):
            arrow("E" + p, "E" + c)  # recursive update
            if c != "dots":
                arrow("X" + c, "E" + c)  # data (X_s, Y_s) enter the update
                arrow("Z" + c, "E" + c)  # fresh perturbation enters the update
    if which == "seq":
        arrow("Z0", "E0")
    # row labels and time labels
    for y, lab in ((Y_X, "action $X_s$"), (Y_E, est_row), (Y_Z, noise_row)):
        ax.text(-0.55, y, lab, ha="right", va="center", fontsize=9, color="0.25")
    for c in cols:
        if c in ("dots",):
            continue
        lab = "prior" if c == "0" else f"time {('$t$' if c == 't' else '$t+1$' if c == 't+1' else '$t=' + c + '$')}"
        ax.text(X[c], Y_X + 0.55, lab, ha="center", va="bottom", fontsize=9, color="0.3")
    # the conditioning statement: Z_1..Z_t (dashed box) are dependent given X_{t+1}
    z_lo = X["1"] - r - 0.15
    z_hi = X["t"] + r + 0.15
    ax.add_patch(patches.FancyBboxPatch((z_lo, Y_Z - r - 0.12), z_hi - z_lo, 2 * r + 0.24,
                                        boxstyle="round,pad=0.0,rounding_size=0.15", fill=False,
                                        edgecolor=pal[3], ls="--", lw=1.3, zorder=1))
    ax.text((z_lo + z_hi) / 2, Y_Z - r - 0.2, "not i.i.d. given $X_{t+1}$" if which == "rrls"
            else "dependent given $X_{t+1}$", ha="center", va="top", fontsize=8.5, color=pal[3])
    if plot.get("note", True):
        fig.text(0.5, 0.5 / 4.4, note, ha="center", va="top", fontsize=8.5,
                 color="0.2")
    title = spec.get("title") or ("RRLS sequential dependence" if which == "rrls" else "Sequential dependence")
    fig.suptitle(title, fontsize=12, y=1 - 0.08 / 4.4, va="top")
    fig.text(0.5, 0.01, _footer_text(spec, kind), ha="center", va="bottom", fontsize=7, color="0.35")
    return fig


# --------------------------------------------------------------------------------------------
# demos
# --------------------------------------------------------------------------------------------
def _demo_regret(rng, panels, curves, n_seeds=8, T=1000):
    """Long table: concave regret curves (level / sqrt(t) instantaneous regret) with seed noise."""
    ts = np.unique(np.concatenate([np.linspace(10, T, 100), np.geomspace(1, T, 20)]).round().astype(int))
    seeds = np.repeat(np.arange(n_seeds), len(ts))
    tt = np.tile(ts, n_seeds)
    rows = []
    for plabel, pattrs, pscale in panels:
        for c, (clabel, cattrs, level) in enumerate(curves):
            inc = (level * pscale / np.sqrt(np.arange(1, T + 1)) * rng.lognormal(0, 0.35, (n_seeds, T))
                   * rng.lognormal(0, 0.25, (n_seeds, 1)))
            reg = np.cumsum(inc, axis=1)[:, ts - 1].ravel()
            secs = (1e-4 * ts * (1 + 0.1 * c) * rng.lognormal(0, 0.05, (n_seeds, 1))).ravel()
            rows.append(pd.DataFrame({"panel": plabel, "curve": clabel, "seed": seeds, "t": tt, "regret": reg,
                                      "seconds": secs, "optfrac": 1 - np.exp(-tt / (200 * level)),
                                      **pattrs, **cattrs}))
    return pd.concat(rows, ignore_index=True)


def demo(kind: str):
    """(table, spec) of a small deterministic synthetic example of ``kind``."""
    if kind not in KINDS:
        raise ValueError(f"unknown plot kind {kind!r}; known kinds: {', '.join(KINDS)}")
    rng = np.random.default_rng(20240611)
    base = {"id": f"demo-{kind}", "kind": kind, "scale": "demo", "caption": "Synthetic demo data."}
    if kind == "regret_curves":
        panels = [("d = 10", {"d": 10}, 1.0), ("d = 20", {"d": 20}, 1.7), ("d = 50", {"d": 50}, 2.6)]
        curves = [("LinTS", {"method": "LinTS", "a": np.nan}, 9.0),
                  ("LinUCB", {"method": "LinUCB", "a": np.nan}, 11.0),
                  ("e-greedy", {"method": "e-greedy", "a": np.nan}, 16.0),
                  ("LinPHE (a = 2)", {"method": "LinPHE", "a": 2.0}, 7.5),
                  ("LinPHE (a = 1)", {"method": "LinPHE", "a": 1.0}, 6.5),
                  ("LinPHE (a = 0.5)", {"method": "LinPHE", "a": 0.5}, 8.5)]
        df = _demo_regret(rng, panels, curves)
        spec = {**base, "title": "Demo: regret of LinPHE and baselines", "band": "se",
                "panels": [p[0] for p in panels], "curves": [c[0] for c in curves],
                "plot": {"legend_split": True, "legend_split_at": 3, "black": ["LinTS"]}}
        return df, spec
    if kind in ("final_vs_param", "heatmap"):
        Ms = [2, 4, 8, 16, 32] if kind == "final_vs_param" else [2, 8, 32]
        dists = ["Gaussian", "Sphere", "Cube", "Coordinate", "Sparse"]
        panels = [("finite, d = 10", {"d": 10}, 1.0), ("compact, d = 50", {"d": 50}, 2.2)]
        curves = [("TS", {"method": "TS", "M": np.nan, "reference": None, "perturbation": None}, 8.0)]
        if kind == "final_vs_param":
            for M in Ms:
                curves.append((f"Ensemble++ (M={M})", {"method": "Ensemble++", "M": float(M), "reference": "Gaussian",
                                                        "perturbation": "Sphere"}, 8.0 * (1 + 2.0 / M)))
                curves.append((f"ES (M={M})", {"method": "ES", "M": float(M), "reference": "Coordinate",
                                                "perturbation": "Gaussian"}, 8.0 * (1 + 9.0 / M)))
        else:
            for M in Ms:
                for i, ref in enumerate(dists):
                    for j, pert in enumerate(dists):
                        pen = (0.6 if ref == "Coordinate" else 0.15) * (4 if M == 2 else 1) + 0.05 * j
                        if M == 32 and ref == pert == "Coordinate":
                            pen += 0.8
                        curves.append((f"{ref}/{pert} M={M}", {"method": "Ensemble++", "M": float(M),
                                                               "reference": ref, "perturbation": pert},
                                       8.0 * (1 + pen)))
        df = _demo_regret(rng, panels, curves, n_seeds=5, T=500)
        if kind == "final_vs_param":
            spec = {**base, "title": "Demo: final regret vs ensemble size M", "band": "ci95",
                    "panels": [p[0] for p in panels], "curves": [c[0] for c in curves],
                    "plot": {"x": "M", "hue": "method", "logx": True, "base": 2, "hlines": ["TS"],
                             "xlabel": "ensemble size M"}}
        else:
            spec = {**base, "title": "Demo: reference × perturbation distributions", "band": "ci95",
                    "panels": [p[0] for p in panels], "curves": [c[0] for c in curves],
                    "plot": {"facet": "M", "row": "reference", "col": "perturbation", "normalise_by": "TS"}}
        return df, spec
    if kind == "min_ensemble_size":
        rows = []
        for n_arms, off in ((100, -0.8), (1000, 0.0), (10000, 0.9)):
            for d in range(10, 101, 10):
                m = 0.42 * d + off + rng.normal(0, 1.5)
                m = float(2 * max(1, round(m / 2)))
                if n_arms == 10000 and d == 100:
                    m = np.nan
                rows.append({"d": d, "n_arms": n_arms, "M_min": m, "M_max_tried": 44.0})
        spec = {**base, "title": "Demo: minimum ensemble size to match TS",
                "plot": {}}
        return pd.DataFrame(rows), spec
    if kind == "table":
        df = pd.DataFrame({
            "algorithm": ["LinPHE", "LinTS", "LinUCB", "Ensemble++"],
            "a": [1.0, np.nan, np.nan, np.nan],
            "per-round cost": [1.5e-4, 4.2e-4, 3.9e-4, 2.25e-4],
            "regret bound": ["O(d sqrt(n) log n) with a = O(1) pseudo-rewards per observation",
                             "O(d^{3/2} sqrt(n) log n)", "O(d sqrt(n) log n)",
                             "O(d sqrt(n log |X|)) for M = O(d log T) ensemble members"],
        })
        spec = {**base, "title": "Demo: algorithm summary", "plot": {}}
        return df, spec
    if kind == "function_curve":
        rows = []
        for T0 in (10, 50, 100, 300, 1000):
            b = np.linspace(1.05, 6.0, 200)
            b = b[T0 * (b - 1) > 1]
            g, dl = 0.5, 1.5
            l = ((np.log(T0 * (b - 1) + 1) / np.log(T0 * (b - 1))) ** dl * b ** g * (b - 1) ** g / (b ** g - 1))
            rows.append(pd.DataFrame({"b": b, "l": l, "T0": T0}))
        spec = {**base, "title": "Demo: doubling-trick constant l(T0, b)",
                "plot": {"vline": (3 + 5 ** 0.5) / 2, "vline_label": "b = 2.618", "ylim": [3.0, 6.0],
                         "xlabel": "growth factor b", "ylabel": "l(1/2, 3/2, T0, b)"}}
        return pd.concat(rows, ignore_index=True), spec
    # diagram
    return None, {**base, "title": "Demo: RRLS sequential dependence (Ensemble++ Fig. 5)",
                  "plot": {"diagram": "rrls"}}


# --------------------------------------------------------------------------------------------
# entry point
# --------------------------------------------------------------------------------------------
_PLOTTERS = {
    "regret_curves": _plot_regret_curves,
    "final_vs_param": _plot_final_vs_param,
    "heatmap": _plot_heatmap,
    "min_ensemble_size": _plot_min_ensemble_size,
    "table": _plot_table,
    "function_curve": _plot_function_curve,
    "diagram": _plot_diagram,
}


def render(kind: str, table=None, spec=None, out_pdf=None, out_png=None) -> dict:
    """Draw ``kind`` from ``table`` and ``spec`` and write out_pdf / out_png (atomically).

    table: parquet/csv path, DataFrame or None; spec: JSON path, dict or None.  With both None
    the demo of the kind is drawn.  Returns {"pdf": path, "png": path[, "md": path]} of what was
    written (the ``table`` kind also writes a markdown file next to out_pdf, suffix ``.md``).
    """
    if kind not in _PLOTTERS:
        raise ValueError(f"unknown plot kind {kind!r}; known kinds: {', '.join(KINDS)}")
    df, sp = load_table(table), load_spec(spec)
    if df is None and not sp:
        df, sp = demo(kind)
    if df is None and kind != "diagram":
        raise ValueError(f"{kind}: a table is required (got table=None with a spec {sp.get('id', '')!r})")
    if sp.get("kind") not in (None, kind):
        warnings.warn(f"spec {sp.get('id')!r} says kind {sp.get('kind')!r} but is rendered as {kind!r}")
    if sp.get("band", "se") not in BANDS:
        raise ValueError(f"spec {sp.get('id')!r}: unknown band {sp.get('band')!r}; known bands: {', '.join(BANDS)}")
    plot = dict(sp.get("plot") or {})
    if _is_none(out_pdf) and _is_none(out_png):
        raise ValueError("render: give out_pdf and/or out_png")
    with plt.rc_context(_rc()):
        md_df = None
        if kind == "table":
            fig, md_df = _plot_table(df, sp, plot)
        else:
            fig = _PLOTTERS[kind](df, sp, plot)
        try:
            written = save_figure(fig, out_pdf, out_png)
        finally:
            plt.close(fig)
    if md_df is not None:
        anchor = out_pdf if not _is_none(out_pdf) else out_png
        written["md"] = _write_markdown(md_df, sp, Path(anchor).with_suffix(".md"))
    return written
