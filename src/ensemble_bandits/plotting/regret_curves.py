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


def split_readings(df, spec: dict, panels: list, curves: list):
    """Plot option ``split_readings``: each reading in a panel of its own beside the paper text's, in
    place of up to three line styles per method in one panel.  Returns (df, spec, panels, curves,
    group) with the panels "<panel>" + a line naming the reading ("the paper's text" first, then each
    reading's label in order of appearance, without the panel's name where the label repeats it; only
    the pairs that hold data), every curve under its base curve's name, so that a method keeps its
    colour and line style in each panel and the legend names the methods once, and ``group``: each
    new panel's original panel (its panels share a y range)."""
    readings = spec.get("readings") or {}
    if not readings:
        return df, spec, panels, curves, {p: p for p in panels}

    def label(curve, panel):
        base = readings.get(curve)
        if base is None:
            return "the paper's text"
        text = curve[len(base):] if curve.startswith(base) else curve
        text = text.strip().removeprefix("[").removesuffix("]").strip()
        return text.removesuffix(f", {panel}") if panel else text

    df = df.copy()
    which = [label(c, p) for c, p in zip(df["curve"], df["panel"])]
    order = list(dict.fromkeys(["the paper's text", *which]))
    pairs = set(zip(df["panel"], which))
    name = {(p, w): f"{p}\n{w}" if p else w for p, w in pairs}
    df["panel"] = [name[(p, w)] for p, w in zip(df["panel"], which)]
    df["curve"] = df["curve"].map(lambda c: readings.get(c, c))
    split = [name[(p, w)] for p in panels for w in order if (p, w) in pairs]
    group = {name[(p, w)]: p for p, w in pairs}
    base = [c for c in curves if c not in readings]
    return df, {**spec, "readings": {}, "panels": split}, split, base, group


def draw(df, spec, plot):
    """Options: y, x (default t), ylabel, xlabel, ncols, legend_split, legend_split_at,
    legend_loc ("best", any matplotlib loc, or "outside"), style_by, hue_by, black, logx, logy,
    ylim, alpha (band opacity), band_style ("fill", "bars": ±band bars at a quarter, half, three
    quarters and the end of the run, dodged by curve; default "auto": :func:`bands_as_bars`),
    hline / hline_label (numeric reference line(s)), on_top (curves drawn over the others),
    split_readings (each reading in a panel of its own, the readings of one environment sharing a y range,
    the legend below the panels: :func:`split_readings`)."""
    kind = "regret_curves"
    df, panels, curves = prepare_sim(df, spec, kind)
    split = bool(plot.get("split_readings")) and bool(spec.get("readings"))
    group = {p: p for p in panels}
    if split:
        df, spec, panels, curves, group = split_readings(df, spec, panels, curves)
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
        if not split or panel == next(p for p in panels if group[p] == group[panel]):
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
    for g in set(group.values()):        # the panels of one original panel (its readings) share a y range
        mine = [ax for ax, p in zip(axes, panels) if group[p] == g and p in lines]
        if len(mine) > 1 and not plot.get("ylim"):
            lo, hi = min(ax.get_ylim()[0] for ax in mine), max(ax.get_ylim()[1] for ax in mine)
            for ax in mine:
                ax.set_ylim(lo, hi)
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
    loc = plot.get("legend_loc") or ("best" if len(present) <= 8 and not split else "outside")
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
