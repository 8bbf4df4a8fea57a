"""Kind final_vs_param: the final value of each curve against a parameter (lines or grouped
bars), with reference curves drawn as horizontal bands."""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from ..stats import final_rows, summarise
from .style import (
    paper_points,
    MARKERS,
    comparison_styles,
    default_ylabel,
    finish_figure,
    fmt_val,
    log_ticks,
    no_data,
    ordered,
    palette,
    place_legend,
    prepare_sim,
    ref_hlines,
    require,
    seeds_footer,
    sorted_values,
    subplots,
    value_label,
)


def draw(df, spec, plot):
    """Options: x (required column), hue (column; default: one line per curve), y, ylabel, xlabel,
    logx, logy, base (log base of x, default 10), base_y (of y, default 10), hlines (curve labels
    drawn as horizontal reference lines with their band), reference_slope (dotted c*x^s through the
    first point of the first line), kind ("line" | "bar"), black (line keys drawn black), ncols,
    legend_loc, x_order (categorical order), ylim, hline / hline_label (numeric reference lines)."""
    kind = "final_vs_param"
    df, panels, curves = prepare_sim(df, spec, kind, need_t=False)
    xcol = plot.get("x")
    if not xcol:
        raise ValueError(f"{kind}: spec.plot.x (the column on the x axis) is required")
    y = plot.get("y", "regret")
    hue = plot.get("hue")
    require(df, [xcol, y] + ([hue] if hue else []), kind)
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
        line_label = {v: value_label(hue, v) for v in line_keys}
    else:
        pts["_line"] = pts["curve"]
        line_keys = [c for c in curves if c in set(pts["curve"])]
        line_label = {c: c for c in line_keys}
    stats = summarise(pts, ["panel", "_line", "_x"], y, band_kind)
    hstats = summarise(hl, ["panel", "curve"], y, band_kind) if len(hl) else None
    categorical = plot.get("kind", "line") == "bar" or not pd.api.types.is_numeric_dtype(pts["_x"])
    if categorical:
        if pd.api.types.is_numeric_dtype(pts["_x"]):
            seen = sorted_values(pts["_x"])
        else:  # first appearance, following the order of spec.curves
            rank = {c: i for i, c in enumerate(curves)}
            seen = pts.assign(_r=pts["curve"].map(rank)).sort_values("_r", kind="stable")["_x"]
        xcats = ordered(plot.get("x_order"), [fmt_val(v) for v in seen])
    pal = palette(len(line_keys))
    black = set(map(str, plot.get("black") or []))
    colors = {k: ("black" if str(k) in black else pal[i]) for i, k in enumerate(line_keys)}
    if hue:      # a line per hue value: one that is all one agent's curves takes that agent's colour
        agents = {k: {(spec.get("methods") or {}).get(c) for c in pts.loc[pts["_line"] == k, "curve"].unique()}
                  for k in line_keys}
        single = {k: next(iter(a)) for k, a in agents.items() if len(a) == 1 and None not in a}
        by_line = comparison_styles(list(single), {"methods": {k: single[k] for k in single}})
        colors.update({k: st["color"] for k, st in by_line.items() if str(k) not in black})
    else:        # one line per curve: a comparison of methods keeps each method's colour
        colors.update({k: st["color"] for k, st in comparison_styles(line_keys, spec).items() if str(k) not in black})
    fig, axes = subplots(len(panels), plot.get("ncols"))
    base = plot.get("base", 10)
    for ax, panel in zip(axes, panels):
        sp = stats[stats["panel"] == panel]
        hp = hstats[hstats["panel"] == panel] if hstats is not None else None
        if sp.empty and (hp is None or hp.empty):
            no_data(ax, panel)
            continue
        keys = [k for k in line_keys if (sp["_line"] == k).any()]
        nk = max(len(keys), 1)
        for i, k in enumerate(keys):
            s = sp[sp["_line"] == k]
            if categorical:
                pos = {c: j for j, c in enumerate(xcats)}
                s = s.assign(_pos=s["_x"].map(fmt_val).map(pos)).sort_values("_pos")
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
        ref_hlines(ax, plot)
        paper_points(ax, spec, panel)
        if categorical:
            ax.set_xticks(range(len(xcats)))
            rot = 30 if max((len(c) for c in xcats), default=0) > 6 else 0
            ax.set_xticklabels(xcats, rotation=rot, ha="right" if rot else "center")
        else:
            if plot.get("logx"):
                ax.set_xscale("log", base=base)
            xv = sorted_values(sp["_x"])
            if 0 < len(xv) <= 12:
                ax.set_xticks([float(v) for v in xv])
                ax.set_xticklabels([fmt_val(v) for v in xv])
                if plot.get("logx"):
                    ax.minorticks_off()
            elif plot.get("logx"):
                log_ticks(ax.xaxis, base)
        if plot.get("logy"):
            ax.set_yscale("log", base=plot.get("base_y", 10))
        if plot.get("ylim"):
            ax.set_ylim(*plot["ylim"])
        ax.set_title(panel)
        ax.set_xlabel(plot.get("xlabel", xcol))
        ax.set_ylabel(plot.get("ylabel", default_ylabel(y, final=True)))
    handles = {}
    for ax in axes:  # one entry per label, from whichever panel has it
        for h, lab in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(lab, h)
    loc = plot.get("legend_loc") or ("best" if len(handles) <= 8 else "outside")
    if axes:
        place_legend(axes[0], list(handles.values()), list(handles), loc)
    footer = seeds_footer(spec, kind, final, band_kind)
    finish_figure(fig, spec, kind, footer)
    return fig
