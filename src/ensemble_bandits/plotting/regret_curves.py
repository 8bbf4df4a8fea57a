"""Kind regret_curves: a statistic (default cumulative regret) against the round t, one panel
per environment, one line with its band per curve."""
from __future__ import annotations

import math

from ..stats import summarise
from .style import (
    paper_points,
    absent_text,
    curve_styles,
    default_ylabel,
    finish_figure,
    no_data,
    place_legend,
    prepare_sim,
    ref_hlines,
    require,
    seeds_footer,
    subplots,
)


def draw(df, spec, plot):
    """Options: y, x (default t), ylabel, xlabel, ncols, legend_split, legend_split_at,
    legend_loc ("best", any matplotlib loc, or "outside"), style_by, hue_by, black, logx, logy,
    ylim, alpha (band opacity), hline / hline_label (numeric reference line(s))."""
    kind = "regret_curves"
    df, panels, curves = prepare_sim(df, spec, kind)
    y = plot.get("y", "regret")
    x = plot.get("x", "t")
    require(df, [x, y], kind)
    band_kind = spec.get("band", "se")
    stats = summarise(df, ["panel", "curve", x], y, band_kind).sort_values(["panel", "curve", x])
    styles = curve_styles(df, curves, plot, spec)
    fig, axes = subplots(len(panels), plot.get("ncols"))
    lines = {}
    for ax, panel in zip(axes, panels):
        sp = stats[stats["panel"] == panel]
        if sp.empty:
            no_data(ax, panel, absent_text(spec) if panel in (spec.get("absent_panels") or []) else "no data")
            continue
        for c in curves:
            s = sp[sp["curve"] == c]
            if s.empty:
                continue
            st = styles[c]
            (ln,) = ax.plot(s[x], s["mean"], label=c, color=st["color"], linestyle=st["linestyle"], lw=1.6)
            ax.fill_between(s[x], s["lo"], s["hi"], color=st["color"], alpha=plot.get("alpha", 0.18), lw=0)
            lines.setdefault(panel, {})[c] = ln
        ref_hlines(ax, plot)
        paper_points(ax, spec, panel)
        ax.set_title(panel)
        ax.set_xlabel(plot.get("xlabel", "round t" if x == "t" else x))
        ax.set_ylabel(plot.get("ylabel", default_ylabel(y)))
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
        place_legend(axes[0], [handle[c] for c in first], first, loc)
        place_legend(axes[1], [handle[c] for c in rest], rest, loc)
    elif axes:
        place_legend(axes[0], [handle[c] for c in present], present, loc)
    footer = seeds_footer(spec, kind, df, band_kind)
    finish_figure(fig, spec, kind, footer)
    return fig
