"""Kind heatmap: final regret over a grid of two categorical columns (reference x perturbation),
one heatmap per facet value, optionally normalised by a reference curve."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ..stats import final_rows
from .style import (
    finish_figure,
    ordered,
    prepare_sim,
    require,
    seeds_footer,
    sorted_values,
    value_label,
)


def draw(df, spec, plot):
    """Options: facet (default "M"; columns of the figure), row (default "reference"), col
    (default "perturbation"), normalise_by (curve label), y, row_order, col_order, cmap
    (default "YlGnBu_r": darker = lower), fmt."""
    kind = "heatmap"
    df, panels, curves = prepare_sim(df, spec, kind, need_t=False)
    y = plot.get("y", "regret")
    rcol, ccol = plot.get("row", "reference"), plot.get("col", "perturbation")
    facet = plot.get("facet", "M")
    require(df, [y, rcol, ccol], kind)
    if facet not in df.columns:
        if "facet" in plot:
            require(df, [facet], kind)
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
    rows = ordered(plot.get("row_order"), pd.unique(cells[rcol]))
    cols = ordered(plot.get("col_order"), pd.unique(cells[ccol]))
    facets = sorted_values(cells[facet]) if facet else [None]
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
            title = value_label(facet, f) if facet else ""
            ax.set_title(title if npn == 1 or not panel else (f"{panel} · {title}" if title else panel), fontsize=9)
            if j == 0:
                ax.set_ylabel(rcol)
            if i == npn - 1:
                ax.set_xlabel(ccol)
        cax = fig.add_subplot(gs[i, nf])
        cb = fig.colorbar(im, cax=cax)
        cb.set_label(f"final {y} / {norm}" if norm else f"final {y}", fontsize=8)
        cb.ax.tick_params(labelsize=7)
    footer = seeds_footer(spec, kind, final, None)
    footer += " · darker = lower regret"
    finish_figure(fig, spec, kind, footer)
    return fig
