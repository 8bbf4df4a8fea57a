"""Kind heatmap: final regret over a grid of two categorical columns (reference x perturbation),
one heatmap per facet value, optionally normalised by a reference curve."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ..stats import final_rows
from .legibility import PRINT_WIDTH_IN
from .style import (
    finish_figure,
    ordered,
    prepare_sim,
    require,
    seeds_footer,
    sorted_values,
    value_label,
)


NUMBERS_UP_TO = 200   # cell values are printed in the cells when the figure has at most this many cells
WRAP = 5              # facets per row


def draw(df, spec, plot):
    """Options: facet (default "M"), row (default "reference"), col (default "perturbation"),
    normalise_by (curve label), y, row_order, col_order, cmap, fmt, wrap (facets per row, default 5).

    One colour scale for the whole figure.  Normalised by a curve, the cells are ratios to it on a
    diverging log scale centred at 1 (default cmap "RdBu_r": blue = lower regret than the reference
    curve, red = higher); otherwise a sequential scale (default "YlGnBu_r": darker = lower).  The
    values are printed in the cells when the figure has at most NUMBERS_UP_TO cells."""
    import math

    from matplotlib.colors import CenteredNorm, Normalize
    from matplotlib.ticker import FuncFormatter

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
    mats = {}
    for panel in panels:
        if norm and panel not in base:
            raise ValueError(f"{kind}: panel {panel!r} has no {norm!r} curve to normalise by")
        for f in facets:
            m = np.full((nr, nc), np.nan)
            for a, r in enumerate(rows):
                for b, c in enumerate(cols):
                    key = (panel, r, c) + ((f,) if facet else ())
                    if key in means.index:
                        m[a, b] = means.loc[key]
            mats[panel, f] = m / base[panel] if norm else m
    finite = np.concatenate([m[np.isfinite(m)] for m in mats.values()]) if mats else np.array([])
    if norm:   # log2 of the ratio, centred at ratio 1, one range for every heatmap
        finite = finite[finite > 0]
        half = float(np.max(np.abs(np.log2(finite)))) if finite.size else 1.0
        scale = CenteredNorm(vcenter=0.0, halfrange=max(half, 0.05))
        cmap = plt.get_cmap(plot.get("cmap", "RdBu_r")).with_extremes(bad="0.92")
        shown = {k: np.log2(np.where(m > 0, m, np.nan)) for k, m in mats.items()}
    else:
        vmin, vmax = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
        scale = Normalize(vmin - 0.5, vmax + 0.5) if vmin == vmax else Normalize(vmin, vmax)
        cmap = plt.get_cmap(plot.get("cmap", "YlGnBu_r")).with_extremes(bad="0.92")
        shown = mats
    wrap = max(1, min(int(plot.get("wrap", WRAP)), nf))
    numbers = nr * nc * nf * npn <= NUMBERS_UP_TO
    cell = 0.42 if numbers else 0.24            # inches per cell; a printed value needs about 0.3 in
    cw, ch = cell * nc + 0.3, cell * nr + 0.4
    while numbers and wrap > 1 and cell * min(1.0, PRINT_WIDTH_IN / (cw * wrap + 2.4)) < 0.3:
        wrap -= 1
    per_panel = math.ceil(nf / wrap)
    fig = plt.figure(figsize=(cw * wrap + 2.4, ch * per_panel * npn + 0.9))
    gs = fig.add_gridspec(npn * per_panel, wrap + 1, width_ratios=[1] * wrap + [0.08])
    fmt = plot.get("fmt", ".2f" if norm else ".0f")
    im = None
    for i, panel in enumerate(panels):
        for j, f in enumerate(facets):
            gr, gc = i * per_panel + j // wrap, j % wrap
            ax = fig.add_subplot(gs[gr, gc])
            ax.grid(False)
            im = ax.imshow(shown[panel, f], cmap=cmap, norm=scale, aspect="auto")
            if numbers:
                m = mats[panel, f]
                for a in range(nr):
                    for b in range(nc):
                        if np.isfinite(m[a, b]):
                            rgba = cmap(scale(shown[panel, f][a, b]))
                            lum = 0.299 * rgba[0] + 0.587 * rgba[1] + 0.114 * rgba[2]
                            ax.text(b, a, format(m[a, b], fmt), ha="center", va="center", fontsize=7,
                                    color="white" if lum < 0.5 else "black")
            last_row = gr == (i + 1) * per_panel - 1 or (j + wrap >= nf)
            ax.set_xticks(range(nc))
            ax.set_yticks(range(nr))
            ax.set_xticklabels(cols if last_row and i == npn - 1 else [], rotation=90)
            ax.set_yticklabels(rows if gc == 0 else [])
            ax.tick_params(length=0)
            for sp in ax.spines.values():
                sp.set_visible(False)
            ax.set_title(value_label(facet, f) if facet else "")
            if gc == 0:
                ax.set_ylabel(f"{panel}\n{rcol}" if panel and j == 0 else (rcol if not panel else ""))
            if last_row and i == npn - 1:
                ax.set_xlabel(ccol)
    cax = fig.add_subplot(gs[:, wrap])
    cb = fig.colorbar(im, cax=cax)
    if norm:
        cb.set_label(f"final {y} / {norm}'s (log scale)")
        top = scale.halfrange
        step = 1.0 if top >= 1.5 else (0.5 if top >= 0.5 else 0.25)
        k = int(top // step)
        cb.set_ticks([step * i for i in range(-k, k + 1)])
        cb.ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{2 ** v:.3g}"))
    else:
        cb.set_label(f"final {y}")
    footer = seeds_footer(spec, kind, final, None)
    footer += (f" · blue = lower {y} than {norm}, red = higher" if norm else " · darker = lower") + \
        ("" if numbers else " · values: the figure's table")
    finish_figure(fig, spec, kind, footer)
    return fig
