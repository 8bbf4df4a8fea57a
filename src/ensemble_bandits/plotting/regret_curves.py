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


BAR_FRACTIONS = (0.25, 0.5, 0.75, 1.0)   # where ±s.d. bars stand, as fractions of the last round
BAR_DODGE = 0.012                        # horizontal offset between curves' bars, as a fraction of it


def bands_as_bars(frames, band_kind: str, style: str = "auto") -> bool:
    """Draw a panel's bands as ±s.d. bars at a few rounds instead of filled areas (``frames``: the
    panel's rows of each curve, sorted by x): ``style`` "bars", or "auto" with ``band: sd`` bands of
    which more than half of the curve pairs overlap at the last round (s.d. bands of runs that spread
    widely merge into one area otherwise)."""
    if style not in ("auto", "fill", "bars"):
        raise ValueError(f"regret_curves: band_style {style!r} is not one of auto, fill, bars")
    if style != "auto":
        return style == "bars"
    return band_kind == "sd" and _overlap_share(frames) > 0.5


def _overlap_share(frames) -> float:
    """Share of the curve pairs whose bands overlap at each curve's last row."""
    ends = [f.iloc[-1] for f in frames]
    pairs = [(a, b) for i, a in enumerate(ends) for b in ends[i + 1:]]
    if not pairs:
        return 0.0
    return sum(a["lo"] <= b["hi"] and b["lo"] <= a["hi"] for a, b in pairs) / len(pairs)


def _bars(ax, s, x, st, i, n):
    """±s.d. bars of one curve at :data:`BAR_FRACTIONS` of its last round, dodged by curve index i of n."""
    xs = s[x].to_numpy()
    last = float(xs.max())
    at = sorted({int(abs(xs - f * last).argmin()) for f in BAR_FRACTIONS})
    rows = s.iloc[at]
    shift = (i - (n - 1) / 2) * BAR_DODGE * last
    ax.errorbar(rows[x] + shift, rows["mean"], yerr=[rows["mean"] - rows["lo"], rows["hi"] - rows["mean"]],
                fmt="none", ecolor=st["color"], elinewidth=1.2, capsize=2.5, alpha=0.85)


def draw(df, spec, plot):
    """Options: y, x (default t), ylabel, xlabel, ncols, legend_split, legend_split_at,
    legend_loc ("best", any matplotlib loc, or "outside"), style_by, hue_by, black, logx, logy,
    ylim, alpha (band opacity), band_style ("fill", "bars": ±band bars at a quarter, half, three
    quarters and the end of the run, dodged by curve; default "auto": :func:`bands_as_bars`),
    hline / hline_label (numeric reference line(s))."""
    kind = "regret_curves"
    df, panels, curves = prepare_sim(df, spec, kind)
    y = plot.get("y", "regret")
    x = plot.get("x", "t")
    require(df, [x, y], kind)
    band_kind = spec.get("band", "se")
    stats = summarise(df, ["panel", "curve", x], y, band_kind).sort_values(["panel", "curve", x])
    styles = curve_styles(df, curves, plot, spec)
    fig, axes = subplots(len(panels), plot.get("ncols"))
    lines, barred = {}, []
    for ax, panel in zip(axes, panels):
        sp = stats[stats["panel"] == panel]
        if sp.empty:
            no_data(ax, panel, absent_text(spec) if panel in (spec.get("absent_panels") or []) else "no data")
            continue
        rows = dict(tuple(sp.groupby("curve", sort=False)))
        shown = [c for c in curves if c in rows]
        bars = bands_as_bars([rows[c] for c in shown], band_kind, plot.get("band_style", "auto"))
        barred.append(bars)
        on_top = set(plot.get("on_top") or [])          # the baseline a reader compares against: drawn last
        for i, c in enumerate(shown):
            s, st = rows[c], styles[c]
            (ln,) = ax.plot(s[x], s["mean"], label=c, color=st["color"], linestyle=st["linestyle"], lw=1.6,
                            zorder=3 if c in on_top else 2)
            if bars:
                _bars(ax, s, x, st, i, len(shown))
            else:
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
        right = sp[x].max() * (1 + (BAR_DODGE * (len(shown) / 2 + 1) if bars and not plot.get("logx") else 0))
        ax.set_xlim(left=sp[x].min() if plot.get("logx") else min(0, sp[x].min()), right=right)
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
    footer = seeds_footer(spec, kind, df, band_kind, bars="all" if barred and all(barred) else any(barred))
    finish_figure(fig, spec, kind, footer)
    return fig
