"""Kind min_ensemble_size: the minimum ensemble size against the dimension, one line per
number of arms, with a least-squares fit through the origin (settings censored at the top of their
grid enter it as bounds, as in the claim that reads it: claims.linear_fit)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..stats import censoring_bound, fit_table_censored
from .style import (
    MARKERS,
    finish_figure,
    footer_text,
    no_data,
    palette,
    panel_column,
    require,
    seeds_text,
    sorted_values,
    subplots,
    value_label,
)


CENSORED = r"$\uparrow$"    # a setting censored at the top of its grid: distinct from every line marker


def draw(df, spec, plot):
    """Table columns d, n_arms, M_min (NaN = not reached), optional M_max_tried, panel and
    replicate (rows > 0: bootstrap resamples, which give the fitted slope its 95% interval; rows < 0:
    leave-one-seed-out values, for a BCa interval).  Options: x (default d), y (default M_min), group
    (default n_arms), xlabel, ylabel, logy, fit, interval (``percentile``, the default, or ``bca``: the
    slope's and R^2's intervals as the claim that reads the table decides, claims.trends.fit_intervals)."""
    kind = "min_ensemble_size"
    xcol, ycol, gcol = plot.get("x", "d"), plot.get("y", "M_min"), plot.get("group", "n_arms")
    require(df, [xcol, ycol, gcol], kind)
    interval = plot.get("interval", "percentile")
    whole = df                             # every row, the panel keys kept (the BCa's strata)
    boot = df[df["replicate"] != 0] if "replicate" in df.columns else df.iloc[:0]
    if "replicate" in df.columns:
        df = df[df["replicate"] == 0]
    one_axis = "panel" in df.columns and len(df) and df.groupby("panel").size().max() == 1
    if one_axis:
        # one row per simulated panel: the panels are the grid over x and group, drawn on one axis
        df, panels = df.drop(columns="panel").assign(panel=""), [""]
        boot = boot.assign(panel="")
    else:
        df, panels = panel_column(df, spec)
    groups = sorted_values(df[gcol])
    pal = palette(len(groups))
    outside = plot.get("legend_loc", "outside") == "outside"
    fig, axes = subplots(len(panels), plot.get("ncols"), w=4.4 + (2.5 if outside else 0), h=3.5)
    for ax, panel in zip(axes, panels):
        sp = df[df["panel"] == panel]
        if sp.empty:
            no_data(ax, panel)
            continue
        finite_y = sp[ycol][np.isfinite(sp[ycol].astype(float))]
        top_default = float(finite_y.max()) * 1.15 if len(finite_y) else 1.0
        censored_any = False
        for i, g in enumerate(groups):
            s = sp[sp[gcol] == g].sort_values(xcol)
            if s.empty:
                continue
            yv = s[ycol].astype(float)
            ok = np.isfinite(yv)
            label = f"|X| = {int(g):,}" if gcol == "n_arms" else value_label(gcol, g)
            ax.plot(s[xcol][ok], yv[ok], marker=MARKERS[i % len(MARKERS)], ms=5, lw=1.4, color=pal[i], label=label)
            if (~ok).any():
                bound = censoring_bound(s)[~ok.to_numpy()]
                top = np.where(np.isnan(bound), top_default, bound)
                ax.scatter(s[xcol][~ok], top, marker=CENSORED, s=120, color=pal[i], zorder=4)
                censored_any = True
        if censored_any:    # one neutral legend entry: the arrow's colour is its group's
            ax.scatter([], [], marker=CENSORED, s=120, color="0.3", label="never matched: above the largest M tried")
        if plot.get("fit", True):
            c, r2 = fit_table_censored(sp, xcol, ycol)
            if np.isfinite(c):
                xs = np.linspace(0, float(sp[xcol].max()), 50)
                spb = boot[boot["panel"] == panel] if "panel" in boot.columns else boot
                rows = whole if one_axis else pd.concat([sp, spb])
                resamples = spb.loc[spb["replicate"] > 0, "replicate"].nunique() if len(spb) else 0
                ci = _interval_text(rows, xcol, ycol, gcol, interval) if resamples >= 20 else ""
                ax.plot(xs, c * xs, color="0.3", ls="--", lw=1.2,
                        label=f"LS fit through 0:\n{ycol} = {c:.3g}·{xcol}, R² = {r2:.2f}{ci}")
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
            n_text = seeds_text(sorted(set(int(v) for v in df[c].dropna())))
            break
    finish_figure(fig, spec, kind, footer_text(spec, kind, n_text))
    return fig


def _interval_text(rows, x, y, group, interval):
    """The legend's line for the 95% bootstrap intervals of the slope and R^2, named by their kind."""
    from ..claims.trends import fit_intervals

    (lo, hi), (r_lo, r_hi) = fit_intervals(rows, x, y, group, interval)
    name = "BCa" if interval == "bca" else "percentile"
    return f"\n{name} bootstrap 95 %: slope [{lo:.3g}, {hi:.3g}], R² [{r_lo:.2f}, {r_hi:.2f}]"
