"""Kind function_curve: a closed-form function y(x), one line per series value."""
from __future__ import annotations

from .style import (
    LINESTYLES,
    finish_figure,
    footer_text,
    palette,
    panel_column,
    paper_points,
    require,
    sorted_values,
    subplots,
    value_label,
)


def draw(df, spec, plot):
    """Options: x (default b), y (default l), series (default T0), xlabel, ylabel, logy, logx,
    vline (float), vline_label, ylim, xlim."""
    kind = "function_curve"
    xcol, ycol, scol = plot.get("x", "b"), plot.get("y", "l"), plot.get("series", "T0")
    require(df, [xcol, ycol], kind)
    df, panels = panel_column(df, spec)
    has_series = scol in df.columns
    series = sorted_values(df[scol]) if has_series else [None]
    pal = palette(len(series))
    fig, axes = subplots(len(panels), plot.get("ncols"), w=4.6, h=3.4)
    for ax, panel in zip(axes, panels):
        sp = df[df["panel"] == panel]
        for i, sv in enumerate(series):
            s = sp[sp[scol] == sv] if has_series else sp
            s = s.sort_values(xcol)
            if s.empty:
                continue
            ax.plot(s[xcol], s[ycol], color=pal[i], lw=1.6, ls=LINESTYLES[(i // 10) % len(LINESTYLES)],
                    label=value_label(scol, sv) if has_series else ycol)
        if plot.get("vline") is not None:
            v = float(plot["vline"])
            ax.axvline(v, color="0.3", ls="--", lw=1.1, label=plot.get("vline_label", f"{xcol} = {v:g}"))
        paper_points(ax, spec, panel)
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
    finish_figure(fig, spec, kind, footer_text(spec, kind))
    return fig
